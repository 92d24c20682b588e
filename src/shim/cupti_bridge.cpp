// CUPTI, optional and off by default (DESIGN.md: ~0.3 us per allocation pair, and one subscriber
// per process on CUDA <= 13.2). With GPULEAK_CUPTI=1 the preload sets CUDA_INJECTION64_PATH to
// itself; the driver then calls InitializeInjection at cuInit, and gpuleak takes the CUPTI slot
// when it is free, for driver callbacks on the memory entry points: a call CUPTI sees while no
// gpuleak hook is active on that thread is a capture path we missed ("uncaptured", must be 0).
//
// When the program's own profiler subscribes (torch.profiler / Kineto reach cuptiSubscribe
// through the PLT, so our export below comes first), gpuleak unsubscribes and forwards: the
// profiler gets the slot, and capture goes on through the interposers, which never needed CUPTI.
// Holding the slot, gpuleak also records GPU work with the Activity API (cupti_activity.h); that
// stops, flushed, at the same moment (or when the program registers its own activity buffers).
#include "shim/cuda_headers.h"  // first: it undoes cuda.h's cuGetProcAddress rename

#include <cupti.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdlib>

#include "core/recorder.h"
#include "log/log.h"
#include "shim/cupti_activity.h"
#include "shim/real_symbols.h"

namespace gpuleak::shim {
namespace {

using format::CuptiState;

struct Cupti {
  decltype(&cuptiSubscribe) subscribe = nullptr;
  decltype(&cuptiUnsubscribe) unsubscribe = nullptr;
  decltype(&cuptiEnableCallback) enable_callback = nullptr;
};

Cupti g_cupti;
std::atomic<CUpti_SubscriberHandle> g_subscriber{nullptr};

const CUpti_CallbackId kAllocs[] = {
    CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemCreate,
    CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2,
    CUPTI_DRIVER_TRACE_CBID_cuArrayCreate_v2,
    CUPTI_DRIVER_TRACE_CBID_cuArray3DCreate_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemRelease,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost,
    CUPTI_DRIVER_TRACE_CBID_cuArrayDestroy,
};

void CUPTIAPI on_driver_call(void *, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data) {
  auto *cb = static_cast<const CUpti_CallbackData *>(data);
  if (activity::on_callback(domain, cbid, cb)) return;  // a launch, copy or memset (cupti_activity.h)
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  if (cb->callbackSite != CUPTI_API_EXIT || core::inside_hook()) return;
  const auto *result = static_cast<const CUresult *>(cb->functionReturnValue);
  if (result && *result == CUDA_SUCCESS) core::count_uncaptured(cb->functionName);
}

void *open_cupti() {
  // By soname first, so that a process keeps a single copy (PyTorch loads its own, research 2.6).
  if (void *h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_GLOBAL)) return h;
  if (const char *path = std::getenv("GPULEAK_CUPTI_PATH"))
    if (void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL)) return h;
  for (const char *path : {"/usr/local/cuda/lib64/libcupti.so.13", "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
                           "/usr/local/cuda/targets/x86_64-linux/lib/libcupti.so.13"})
    if (void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL)) return h;
  return nullptr;
}

void subscribe() {
  void *lib = open_cupti();
  if (lib) {
    g_cupti.subscribe = reinterpret_cast<decltype(&cuptiSubscribe)>(real_dlsym(lib, "cuptiSubscribe"));
    g_cupti.unsubscribe = reinterpret_cast<decltype(&cuptiUnsubscribe)>(real_dlsym(lib, "cuptiUnsubscribe"));
    g_cupti.enable_callback = reinterpret_cast<decltype(&cuptiEnableCallback)>(real_dlsym(lib, "cuptiEnableCallback"));
  }
  if (!g_cupti.subscribe || !g_cupti.unsubscribe || !g_cupti.enable_callback) {
    core::set_cupti_state(CuptiState::kUnavailable);
    GPULEAK_LOG_DEBUG("CUPTI: %s; hooks only", lib ? "libcupti lacks cuptiSubscribe" : "no libcupti.so.13 found");
    return;
  }
  CUpti_SubscriberHandle h = nullptr;
  CUptiResult r = g_cupti.subscribe(&h, on_driver_call, nullptr);
  if (r != CUPTI_SUCCESS) {
    // Nsight, compute-sanitizer or the program's profiler got there first: interposers only.
    core::set_cupti_state(r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? CuptiState::kTaken
                                                                              : CuptiState::kUnavailable);
    GPULEAK_LOG_DEBUG("CUPTI: cuptiSubscribe failed (CUptiResult %d%s); hooks only", static_cast<int>(r),
                      r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? ": another subscriber holds the slot" : "");
    return;
  }
  for (CUpti_CallbackId id : kAllocs) g_cupti.enable_callback(1, h, CUPTI_CB_DOMAIN_DRIVER_API, id);
  g_subscriber.store(h);
  core::set_cupti_state(CuptiState::kOn);
  GPULEAK_LOG_DEBUG("CUPTI: subscribed, callbacks on %zu allocation entry points", sizeof kAllocs / sizeof kAllocs[0]);
  activity::start(lib, h);  // GPU work on the timeline, unless GPULEAK_ACTIVITY=0
}

// Gives the slot back before the program's profiler takes it.
void yield_slot() {
  CUpti_SubscriberHandle h = g_subscriber.exchange(nullptr);
  if (!h) return;
  activity::stop();  // what CUPTI still holds goes into the capture first
  g_cupti.unsubscribe(h);
  core::set_cupti_state(CuptiState::kYielded);
  GPULEAK_LOG_DEBUG("CUPTI: slot yielded to the program's own subscriber");
}

template <typename Fn>
Fn next(const char *name) {
  return reinterpret_cast<Fn>(next_symbol(name));
}

}  // namespace
}  // namespace gpuleak::shim

#define GPULEAK_API extern "C" __attribute__((visibility("default")))

// CUDA_INJECTION64_PATH entry point: the driver calls it once, during cuInit.
GPULEAK_API int InitializeInjection(void) {
  if (gpuleak::core::recorder_active()) gpuleak::shim::subscribe();
  return 1;
}

GPULEAK_API CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
                                       void *userdata) {
  gpuleak::shim::yield_slot();
  auto real = gpuleak::shim::next<decltype(&cuptiSubscribe)>("cuptiSubscribe");
  return real ? real(subscriber, callback, userdata) : CUPTI_ERROR_NOT_INITIALIZED;
}

// The Activity API has one set of buffer callbacks per process: a profiler that registers its own
// (Kineto may, without subscribing) takes activity over from gpuleak, like the slot above.
GPULEAK_API CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                       CUpti_BuffersCallbackCompleteFunc completed) {
  gpuleak::shim::yield_slot();
  auto real = gpuleak::shim::next<decltype(&cuptiActivityRegisterCallbacks)>("cuptiActivityRegisterCallbacks");
  return real ? real(requested, completed) : CUPTI_ERROR_NOT_INITIALIZED;
}

GPULEAK_API CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
                                          void *userdata, CUpti_SubscriberParams *params) {
  gpuleak::shim::yield_slot();
  auto real = gpuleak::shim::next<decltype(&cuptiSubscribe_v2)>("cuptiSubscribe_v2");
  return real ? real(subscriber, callback, userdata, params) : CUPTI_ERROR_NOT_INITIALIZED;
}
