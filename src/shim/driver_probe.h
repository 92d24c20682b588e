// Queries of the real driver that gpuleak itself makes, resolved from the loaded libcuda.so.1 with
// the real dlsym (never through our own wrappers). Only cuStreamIsCapturing runs inside a hook (to
// tell graph reservations from live memory, DESIGN.md); device queries run on the writer thread,
// cuMemGetInfo at an out-of-memory failure.
#pragma once

#include <atomic>

#include "core/recorder.h"
#include "shim/cuda_headers.h"

namespace gpuleak::shim {

// False while no stream capture has begun, or every one has ended (stream_capture_handlers.cpp).
// Inline: every stream-ordered allocation and free asks it.
namespace detail {
extern std::atomic<int> g_open_captures;
bool ask_driver_capturing(CUstream stream, bool ptsz);  // cuStreamIsCapturing
}  // namespace detail
inline bool capture_may_be_open() { return detail::g_open_captures.load(std::memory_order_acquire) > 0; }

// True when `stream` is capturing a graph (per-thread-default-stream semantics when `ptsz`); asks
// the driver only while capture_may_be_open().
inline bool stream_capturing(CUstream stream, bool ptsz) {
  return capture_may_be_open() && detail::ask_driver_capturing(stream, ptsz);
}

// The probe handed to the recorder (current device, memory info, device names, driver version).
core::DriverProbe driver_probe();

}  // namespace gpuleak::shim
