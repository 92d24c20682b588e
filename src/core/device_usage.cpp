// record_device_usage and sample_device_usage (recorder_state.h): NVML's per-process usage of each
// device this process allocated on, next to the recorder's own live bytes at that moment, as
// DeviceUsage records. At the end of a capture (kUsageAtExit, on the exiting thread) the analysis
// turns the pair into the report's reconciliation line (nvml_used_bytes, untracked_bytes); while it
// runs (kUsageSample, every GPULEAK_NVML_INTERVAL_MS on the writer thread) into the fragmentation
// advice's "reserved far above live" (docs/advice.md). Never in a hook, never a CUDA call.
#include <unistd.h>

#include "core/clock.h"
#include "core/nvml_usage.h"
#include "core/recorder_state.h"

namespace gpuleak::core {

namespace {

// The devices this process has allocated on (their live peak is not 0).
std::vector<NvmlQuery> used_devices(State *s) {
  std::vector<NvmlQuery> queries;
  for (int d = 0; d < s->device_count && d < LiveTable::kMaxDevices; ++d)
    if (s->live.device_peak(d) > 0) queries.push_back(NvmlQuery{d, s->pci_bus_ids[d]});
  return queries;
}

void append_usage(State *s, const std::vector<NvmlAnswer> &answers, uint32_t flags) {
  for (const NvmlAnswer &a : answers) {
    format::DeviceUsageRecord r{};
    r.ts_ns = monotonic_ns();
    r.device = a.device;
    r.process_used_bytes = a.process_known ? a.process_used_bytes : 0;
    r.device_used_bytes = a.device_used_bytes;
    r.device_total_bytes = a.device_total_bytes;
    r.tracked_live_bytes = s->live.device_live(a.device);
    r.flags = flags | (a.process_known ? format::kUsageProcessKnown : 0u);
    append_record(s, format::RecordType::kDeviceUsage, &r, sizeof r);
  }
}

}  // namespace

void record_device_usage(State *s) {
  if (!s->config.nvml) return;
  // The writer thread reads the bus ids first thing; a program that exits at once may beat it.
  for (int i = 0; i < 200 && s->writer_running && !s->devices_known.load(std::memory_order_acquire); ++i) usleep(1000);
  if (!s->devices_known.load(std::memory_order_acquire)) return;
  append_usage(s, nvml_read(getpid(), used_devices(s), s->device_count), format::kUsageAtExit);
}

void sample_device_usage(State *s, UsageSampler *sampler) {
  const uint64_t interval_ns = static_cast<uint64_t>(s->config.nvml_interval_ms) * 1000000ull;
  if (!s->config.nvml || interval_ns == 0 || sampler->failed) return;
  if (!s->devices_known.load(std::memory_order_acquire)) return;
  const uint64_t now = monotonic_ns();
  if (sampler->last_ns == 0) sampler->last_ns = now;  // the first sample one interval after the start
  if (now - sampler->last_ns < interval_ns) return;
  std::vector<NvmlQuery> queries = used_devices(s);
  if (queries.empty()) return;  // NVML is loaded only once the program allocated on a device
  if (!sampler->session.is_open() && !sampler->session.open()) {
    sampler->failed = true;  // no NVML: not asked again every tick (nvmlInit may take a second)
    return;
  }
  append_usage(s, sampler->session.read(getpid(), queries, s->device_count), format::kUsageSample);
  sampler->last_ns = monotonic_ns();
}

}  // namespace gpuleak::core
