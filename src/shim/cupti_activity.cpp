// CUPTI Activity API: kernels, copies and memsets into capture records (format 1.1, kGpuActivity).
//
// Correlation: every activity record carries CUPTI's correlation id, the same id the callback API
// hands to the launching call (cuLaunchKernel, cudaMemcpy, ...). The launch callbacks note, per id,
// the calling thread and the call's entry time and duration in a fixed table (a slot per id modulo
// its size, overwritten when ids wrap: a very late buffer loses its host link, never memory).
//
// Clock: CUPTI's timestamps are on its own clock. capture time = CUPTI time + offset, where the
// offset is monotonic_ns() - cuptiGetTimestamp() sampled (between two monotonic readings) when
// activity starts and again at every buffer completion, so slow drift between the clocks is
// followed. docs/capture-format.md "GPU activity".
//
// Buffers: CUPTI requests them from us (1 MiB, malloc) and returns them filled on its own thread;
// each record is appended through the recorder's per-thread buffers (core::record_gpu_activity),
// bounded by GPULEAK_ACTIVITY_MB. At exit an atexit handler (registered after libcupti was loaded,
// so it runs before CUPTI's own teardown and before the recorder's final drain) forces a flush.
#include "shim/cupti_activity.h"

#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/clock.h"
#include "core/recorder.h"
#include "core/tls.h"
#include "log/log.h"
#include "shim/real_symbols.h"

namespace gpuleak::shim::activity {
namespace {

struct Api {
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) dropped = nullptr;
  decltype(&cuptiGetTimestamp) timestamp = nullptr;
  decltype(&cuptiEnableCallback) enable_callback = nullptr;
  decltype(&cuptiGetCallbackName) callback_name = nullptr;     // optional
  decltype(&cuptiActivityFlushPeriod) flush_period = nullptr;  // optional
};

Api g_api;
std::atomic<bool> g_running{false};
std::atomic<int64_t> g_offset{0};

constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                         CUPTI_ACTIVITY_KIND_MEMSET};
constexpr size_t kBufferBytes = 1u << 20;

// Which callback ids are launches, copies or memsets, per domain (filled once by start()).
constexpr unsigned kMaxCbid = 1024;
bool g_driver_launch[kMaxCbid];
bool g_runtime_launch[kMaxCbid];

// The host side of each correlation id (see the top of the file). Fields are atomics so that a
// reader racing a writer sees either the old or the new id, never a torn one.
struct Slot {
  std::atomic<uint32_t> id{0};
  std::atomic<uint32_t> tid{0};
  std::atomic<uint64_t> enter_ns{0};
  std::atomic<uint32_t> dur_ns{0};
  std::atomic<const char *> api{nullptr};  // CUPTI's static function name
};
constexpr uint32_t kSlots = 1u << 17;
Slot *g_slots = nullptr;

uint32_t current_tid() {
  GPULEAK_TLS uint32_t tid = 0;
  if (!tid) tid = static_cast<uint32_t>(syscall(SYS_gettid));
  return tid;
}

void sample_offset() {
  uint64_t cupti = 0;
  const uint64_t before = core::monotonic_ns();
  if (g_api.timestamp(&cupti) != CUPTI_SUCCESS) return;
  const uint64_t after = core::monotonic_ns();
  g_offset.store(static_cast<int64_t>(before + (after - before) / 2) - static_cast<int64_t>(cupti),
                 std::memory_order_relaxed);
}

uint64_t to_capture_clock(uint64_t cupti_ns) {
  return cupti_ns ? static_cast<uint64_t>(static_cast<int64_t>(cupti_ns) + g_offset.load(std::memory_order_relaxed))
                  : 0;
}

void add_host_side(format::GpuActivityRecord *r) {
  if (!g_slots || !r->correlation_id) return;
  Slot &s = g_slots[r->correlation_id % kSlots];
  if (s.id.load(std::memory_order_acquire) != r->correlation_id) return;
  const uint32_t tid = s.tid.load(std::memory_order_relaxed);
  const uint64_t enter = s.enter_ns.load(std::memory_order_relaxed);
  const uint32_t dur = s.dur_ns.load(std::memory_order_relaxed);
  if (s.id.load(std::memory_order_acquire) != r->correlation_id) return;  // overwritten meanwhile
  r->host_tid = tid;
  r->host_ts_ns = enter;
  r->host_dur_ns = dur;
}

const char *host_api(uint32_t correlation_id) {
  if (!g_slots || !correlation_id) return nullptr;
  Slot &s = g_slots[correlation_id % kSlots];
  const char *api = s.api.load(std::memory_order_relaxed);
  return s.id.load(std::memory_order_acquire) == correlation_id ? api : nullptr;
}

// One CUPTI record into the capture; false when it was not written (cap reached).
bool convert(const CUpti_Activity *a) {
  format::GpuActivityRecord r{};
  const char *name = nullptr;
  switch (a->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      auto *k = reinterpret_cast<const CUpti_ActivityKernel10 *>(a);
      r.kind = static_cast<uint8_t>(format::GpuActivityKind::kKernel);
      r.start_ns = to_capture_clock(k->start);
      r.end_ns = to_capture_clock(k->end);
      r.device = static_cast<int16_t>(k->deviceId);
      r.context_id = k->contextId;
      r.stream = k->streamId;
      r.correlation_id = k->correlationId;
      name = k->name;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      auto *m = reinterpret_cast<const CUpti_ActivityMemcpy6 *>(a);
      r.kind = static_cast<uint8_t>(format::GpuActivityKind::kMemcpy);
      r.start_ns = to_capture_clock(m->start);
      r.end_ns = to_capture_clock(m->end);
      r.bytes = m->bytes;
      r.copy_kind = m->copyKind;
      r.device = static_cast<int16_t>(m->deviceId);
      r.context_id = m->contextId;
      r.stream = m->streamId;
      r.correlation_id = m->correlationId;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      auto *m = reinterpret_cast<const CUpti_ActivityMemset4 *>(a);
      r.kind = static_cast<uint8_t>(format::GpuActivityKind::kMemset);
      r.start_ns = to_capture_clock(m->start);
      r.end_ns = to_capture_clock(m->end);
      r.bytes = m->bytes;
      r.device = static_cast<int16_t>(m->deviceId);
      r.context_id = m->contextId;
      r.stream = m->streamId;
      r.correlation_id = m->correlationId;
      break;
    }
    default:
      return true;  // another client's kind (CUPTI delivers only what is enabled): not ours to keep
  }
  add_host_side(&r);
  return core::record_gpu_activity(r, name, host_api(r.correlation_id));
}

void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  // 8-byte aligned, as CUPTI requires; malloc never returns less.
  *buffer = static_cast<uint8_t *>(std::malloc(kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

// CUPTI's thread (or the thread calling cuptiActivityFlushAll): never blocks for long, never fails.
void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t *buffer, size_t, size_t valid) {
  if (buffer && valid) {
    sample_offset();
    uint64_t lost = 0;
    CUpti_Activity *record = nullptr;
    while (g_api.next_record(buffer, valid, &record) == CUPTI_SUCCESS)
      if (!convert(record)) ++lost;
    size_t dropped = 0;
    if (g_api.dropped && g_api.dropped(nullptr, 0, &dropped) == CUPTI_SUCCESS) lost += dropped;
    if (lost) {
      format::GpuActivityRecord d{};
      d.kind = static_cast<uint8_t>(format::GpuActivityKind::kDropped);
      d.device = -1;
      d.bytes = lost;
      d.start_ns = d.end_ns = core::monotonic_ns();
      core::record_gpu_activity(d, nullptr, nullptr, /*force=*/true);
    }
  }
  std::free(buffer);
}

pid_t g_pid = 0;  // the process that started activity

// Not in a forked child: CUPTI's threads did not follow it, and a flush there could wait forever.
void flush_at_exit() {
  if (g_running.load() && getpid() == g_pid) g_api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

template <typename Fn>
bool load(void *lib, const char *name, Fn *out) {
  *out = reinterpret_cast<Fn>(real_dlsym(lib, name));
  return *out != nullptr;
}

// Launch, copy and memset entry points of one domain: by name when CUPTI can tell them, else a
// short list of the common ones.
void enable_launch_callbacks(CUpti_SubscriberHandle subscriber, CUpti_CallbackDomain domain, unsigned size, bool *table,
                             const CUpti_CallbackId *fallback, size_t fallback_n) {
  bool named = false;
  for (unsigned cbid = 1; g_api.callback_name && cbid < size && cbid < kMaxCbid; ++cbid) {
    const char *name = nullptr;
    if (g_api.callback_name(domain, cbid, &name) != CUPTI_SUCCESS || !name) continue;
    named = true;
    if (!std::strstr(name, "Launch") && !std::strstr(name, "Memcpy") && !std::strstr(name, "Memset")) continue;
    if (std::strstr(name, "LaunchHostFunc")) continue;  // runs on the CPU: no GPU record to correlate
    if (g_api.enable_callback(1, subscriber, domain, cbid) == CUPTI_SUCCESS) table[cbid] = true;
  }
  if (named) return;
  for (size_t i = 0; i < fallback_n; ++i)
    if (fallback[i] < kMaxCbid && g_api.enable_callback(1, subscriber, domain, fallback[i]) == CUPTI_SUCCESS)
      table[fallback[i]] = true;
}

void note(const char *what, CUptiResult r) {
  GPULEAK_LOG_WARN("CUPTI %s failed (CUptiResult %d); no GPU activity on the timeline", what, static_cast<int>(r));
}

}  // namespace

bool start(void *lib, CUpti_SubscriberHandle subscriber) {
  const core::Config *config = core::recorder_config();
  if (!config || !config->activity || g_running.load()) return false;
  bool ok = load(lib, "cuptiActivityEnable", &g_api.enable) && load(lib, "cuptiActivityDisable", &g_api.disable) &&
            load(lib, "cuptiActivityRegisterCallbacks", &g_api.register_callbacks) &&
            load(lib, "cuptiActivityFlushAll", &g_api.flush_all) &&
            load(lib, "cuptiActivityGetNextRecord", &g_api.next_record) &&
            load(lib, "cuptiGetTimestamp", &g_api.timestamp) &&
            load(lib, "cuptiEnableCallback", &g_api.enable_callback);
  load(lib, "cuptiActivityGetNumDroppedRecords", &g_api.dropped);
  load(lib, "cuptiGetCallbackName", &g_api.callback_name);
  load(lib, "cuptiActivityFlushPeriod", &g_api.flush_period);
  if (!ok) {
    GPULEAK_LOG_WARN("this libcupti lacks the Activity API; no GPU activity on the timeline");
    return false;
  }
  g_slots = new (std::nothrow) Slot[kSlots];
  if (!g_slots) return false;
  if (CUptiResult r = g_api.register_callbacks(buffer_requested, buffer_completed); r != CUPTI_SUCCESS) {
    note("cuptiActivityRegisterCallbacks", r);
    return false;
  }
  sample_offset();
  for (CUpti_ActivityKind kind : kKinds) {
    if (CUptiResult r = g_api.enable(kind); r != CUPTI_SUCCESS) {
      note("cuptiActivityEnable", r);
      for (CUpti_ActivityKind k : kKinds) g_api.disable(k);
      return false;
    }
  }
  static const CUpti_CallbackId kDriver[] = {
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
      CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2,
      CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2};
  static const CUpti_CallbackId kRuntime[] = {
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
      CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020};
  enable_launch_callbacks(subscriber, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, g_driver_launch,
                          kDriver, sizeof kDriver / sizeof kDriver[0]);
  enable_launch_callbacks(subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE, g_runtime_launch,
                          kRuntime, sizeof kRuntime / sizeof kRuntime[0]);
  // Completed buffers reach the capture while the program runs (crash safety), not only at exit.
  if (g_api.flush_period) g_api.flush_period(1000);
  g_pid = getpid();
  g_running.store(true);
  std::atexit(flush_at_exit);
  return true;
}

void stop() {
  if (getpid() != g_pid || !g_running.exchange(false)) return;
  g_api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  for (CUpti_ActivityKind kind : kKinds) g_api.disable(kind);
  if (g_api.flush_period) g_api.flush_period(0);
}

bool on_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData *cb) {
  const bool *table = domain == CUPTI_CB_DOMAIN_DRIVER_API    ? g_driver_launch
                      : domain == CUPTI_CB_DOMAIN_RUNTIME_API ? g_runtime_launch
                                                              : nullptr;
  if (!table || cbid >= kMaxCbid || !table[cbid]) return false;
  if (!g_slots || !g_running.load(std::memory_order_relaxed) || !cb->correlationId) return true;
  Slot &s = g_slots[cb->correlationId % kSlots];
  if (cb->callbackSite == CUPTI_API_ENTER) {
    // A runtime call and the driver call under it may share the id: the outer (first) one wins.
    if (s.id.load(std::memory_order_relaxed) == cb->correlationId) return true;
    s.id.store(0, std::memory_order_relaxed);
    s.tid.store(current_tid(), std::memory_order_relaxed);
    s.enter_ns.store(core::monotonic_ns(), std::memory_order_relaxed);
    s.dur_ns.store(0, std::memory_order_relaxed);
    s.api.store(cb->functionName, std::memory_order_relaxed);
    s.id.store(cb->correlationId, std::memory_order_release);
  } else if (s.id.load(std::memory_order_acquire) == cb->correlationId) {
    const uint64_t d = core::monotonic_ns() - s.enter_ns.load(std::memory_order_relaxed);
    const uint32_t dur = d > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(d);
    if (dur > s.dur_ns.load(std::memory_order_relaxed)) s.dur_ns.store(dur, std::memory_order_relaxed);
  }
  return true;
}

}  // namespace gpuleak::shim::activity
