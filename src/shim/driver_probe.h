// Queries of the real driver that gpuleak itself makes, resolved from the loaded libcuda.so.1 with
// the real dlsym (never through our own wrappers). Inside a hook: cuCtxGetDevice (the device of an
// allocation) and cuStreamIsCapturing (to tell graph reservations from live memory, DESIGN.md);
// the other device queries run on the writer thread, cuMemGetInfo at an out-of-memory failure.
#pragma once

#include <atomic>

#include "core/recorder.h"
#include "shim/cuda_headers.h"

namespace gpuleak::shim {

// False while no stream capture has begun, or every one has ended (stream_capture_handlers.cpp).
// Inline: every stream-ordered allocation and free asks it.
namespace detail {
extern std::atomic<int> g_open_captures;
bool ask_driver_capturing(CUstream stream, bool ptsz);          // cuStreamIsCapturing
extern std::atomic<PFN_cuCtxGetDevice_v2000> g_ctx_get_device;  // the real one, once resolved
int current_device_slow();                                      // resolves it first
}  // namespace detail

// The calling thread's current device, -1 when unknown: the one driver call of every allocation
// hook, inline (one call into the driver, none through the recorder's probe).
inline int current_device() {
  PFN_cuCtxGetDevice_v2000 fn = detail::g_ctx_get_device.load(std::memory_order_acquire);
  if (__builtin_expect(!fn, 0)) return detail::current_device_slow();
  CUdevice dev = -1;
  return fn(&dev) == CUDA_SUCCESS ? dev : -1;
}
inline bool capture_may_be_open() { return detail::g_open_captures.load(std::memory_order_acquire) > 0; }

// The probe handed to the recorder (memory info, device names, driver version); the current device
// is asked by the hooks themselves (current_device above).
core::DriverProbe driver_probe();

}  // namespace gpuleak::shim
