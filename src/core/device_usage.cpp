// record_device_usage (recorder_state.h): at the end of a capture, NVML's per-process usage of
// each device this process allocated on, next to the recorder's own live bytes at that moment,
// as DeviceUsage records. The analysis turns the pair into the report's reconciliation line
// (nvml_used_bytes, untracked_bytes). Runs on the exiting thread, outside every hook.
#include <unistd.h>

#include "core/clock.h"
#include "core/nvml_usage.h"
#include "core/recorder_state.h"

namespace gpuleak::core {

void record_device_usage(State *s) {
  if (!s->config.nvml) return;
  // The writer thread reads the bus ids first thing; a program that exits at once may beat it.
  for (int i = 0; i < 200 && s->writer_running && !s->devices_known.load(std::memory_order_acquire); ++i) usleep(1000);
  if (!s->devices_known.load(std::memory_order_acquire)) return;
  std::vector<NvmlQuery> queries;
  for (int d = 0; d < s->device_count && d < LiveTable::kMaxDevices; ++d)
    if (s->live.device_peak(d) > 0) queries.push_back(NvmlQuery{d, s->pci_bus_ids[d]});
  for (const NvmlAnswer &a : nvml_read(getpid(), queries, s->device_count)) {
    format::DeviceUsageRecord r{};
    r.ts_ns = monotonic_ns();
    r.device = a.device;
    r.process_used_bytes = a.process_known ? a.process_used_bytes : 0;
    r.device_used_bytes = a.device_used_bytes;
    r.device_total_bytes = a.device_total_bytes;
    r.tracked_live_bytes = s->live.device_live(a.device);
    r.flags = format::kUsageAtExit | (a.process_known ? format::kUsageProcessKnown : 0u);
    append_record(s, format::RecordType::kDeviceUsage, &r, sizeof r);
  }
}

}  // namespace gpuleak::core
