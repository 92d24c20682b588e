// record_device_usage and the NVML sampler (recorder_state.h): NVML's per-process usage of each
// device this process allocated on, next to the recorder's own live bytes at that moment, as
// DeviceUsage records. At the end of a capture (kUsageAtExit, on the exiting thread) the analysis
// turns the pair into the report's reconciliation line (nvml_used_bytes, untracked_bytes); while it
// runs (kUsageSample, every GPULEAK_NVML_INTERVAL_MS on the sampler thread) into the fragmentation
// advice's "reserved far above live" (docs/advice.md). Never in a hook, never a CUDA call.
#include <pthread.h>
#include <unistd.h>

#include <chrono>

#include "core/clock.h"
#include "core/nvml_usage.h"
#include "core/recorder_state.h"

namespace gpuleak::core {

namespace {

// The devices this process has allocated on (their live peak is not 0).
std::vector<NvmlQuery> used_devices(State *s) {
  std::vector<NvmlQuery> queries;
  for (int d = 0; d < s->devices.count && d < LiveTally::kMaxDevices; ++d)
    if (s->drain.tally.device_peak(d) > 0) queries.push_back(NvmlQuery{d, s->devices.pci_bus_ids[d]});
  return queries;
}

void append_usage(State *s, const std::vector<NvmlAnswer> &answers, uint32_t flags) {
  for (const NvmlAnswer &a : answers) {
    format::DeviceUsageRecord r{};
    r.ts_ns = capture_now_ns();
    r.device = a.device;
    r.process_used_bytes = a.process_known ? a.process_used_bytes : 0;
    r.device_used_bytes = a.device_used_bytes;
    r.device_total_bytes = a.device_total_bytes;
    r.tracked_live_bytes = s->drain.tally.device_live(a.device);
    r.flags = flags | (a.process_known ? format::kUsageProcessKnown : 0u);
    append_record(s, format::RecordType::kDeviceUsage, &r, sizeof r);
  }
}

}  // namespace

void record_device_usage(State *s) {
  if (!s->config.nvml) return;
  // The writer thread reads the bus ids first thing; a program that exits at once may beat it.
  for (int i = 0; i < 200 && s->writer.running && !s->devices.known.load(std::memory_order_acquire); ++i) usleep(1000);
  if (!s->devices.known.load(std::memory_order_acquire)) return;
  writer_flush_now(s);  // the tally counts what is drained: bring it up to the exit
  append_usage(s, nvml_read(getpid(), used_devices(s), s->devices.count), format::kUsageAtExit);
}

namespace {

void *sampler_main(void *arg) {
  auto *s = static_cast<State *>(arg);
  const auto interval = std::chrono::milliseconds(s->config.nvml_interval_ms);
  NvmlSession session;  // opened once, at the first sample, and kept until the sampler ends
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(s->sampler.lock);
      if (s->sampler.wake.wait_for(lock, interval, [s] { return s->sampler.stop; })) return nullptr;
    }
    std::vector<NvmlQuery> queries = used_devices(s);
    if (queries.empty()) continue;
    if (!session.is_open() && !session.open()) return nullptr;  // no NVML: no samples at all
    append_usage(s, session.read(getpid(), queries, s->devices.count), format::kUsageSample);
  }
}

}  // namespace

void usage_sampler_start(State *s) {
  if (s->sampler.running || !s->config.nvml || s->config.nvml_interval_ms == 0) return;
  if (!s->devices.known.load(std::memory_order_acquire) || used_devices(s).empty()) return;
  // The writer thread starts it, with every signal blocked: the sampler inherits that mask.
  s->sampler.running = pthread_create(&s->sampler.thread, nullptr, sampler_main, s) == 0;
  if (!s->sampler.running) s->config.nvml_interval_ms = 0;  // not asked again
}

void usage_sampler_stop(State *s) {
  if (!s->sampler.running) return;
  {
    std::lock_guard<std::mutex> lock(s->sampler.lock);
    s->sampler.stop = true;
  }
  s->sampler.wake.notify_one();
  pthread_join(s->sampler.thread, nullptr);  // at most one NVML call
  s->sampler.running = false;
}

}  // namespace gpuleak::core
