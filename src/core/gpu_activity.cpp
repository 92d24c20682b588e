// GPU activity records (capture format 1.1): kernels, copies and memsets that CUPTI saw run,
// handed over by shim/cupti_activity.cpp on CUPTI's buffer-completion thread. They go through the
// same per-thread buffers as every other record (that thread gets its own), bounded by
// GPULEAK_ACTIVITY_MB: activity is by far the largest volume a capture can hold.
#include <cstring>

#include "core/recorder_state.h"

namespace gpuleak::core {

bool record_gpu_activity(const format::GpuActivityRecord &record, const char *name, const char *api, bool force) {
  State *s = state();
  if (!s) return false;
  const int p = s->phase.load(std::memory_order_acquire);
  if (p != static_cast<int>(Phase::kIdle) && p != static_cast<int>(Phase::kRunning)) return false;
  const uint64_t cap = s->config.activity_max_bytes;
  constexpr uint64_t kSize = sizeof(format::RecordHeader) + sizeof(format::GpuActivityRecord);
  if (!force && cap && s->counters.activity_bytes.load(std::memory_order_relaxed) + kSize > cap) return false;
  format::GpuActivityRecord r = record;
  if (name && *name) r.name_id = intern_string(s, name, std::strlen(name));
  if (api && *api) r.api_name_id = intern_string(s, api, std::strlen(api));
  if (!append_record(s, format::RecordType::kGpuActivity, &r, sizeof r)) return false;
  s->counters.activity_bytes.fetch_add(kSize, std::memory_order_relaxed);
  return true;
}

}  // namespace gpuleak::core
