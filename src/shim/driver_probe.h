// Queries of the real driver that gpuleak itself makes, resolved from the loaded libcuda.so.1 with
// the real dlsym (never through our own wrappers). Only cuStreamIsCapturing runs inside a hook (to
// tell graph reservations from live memory, DESIGN.md); device queries run on the writer thread,
// cuMemGetInfo at an out-of-memory failure.
#pragma once

#include "core/recorder.h"
#include "shim/cuda_headers.h"

namespace gpuleak::shim {

// True when `stream` is capturing a graph (per-thread-default-stream semantics when `ptsz`).
bool stream_capturing(CUstream stream, bool ptsz);
// False while no stream capture has begun, or every one has ended (stream_capture_handlers.cpp).
bool capture_may_be_open();

// The probe handed to the recorder (current device, memory info, device names, driver version).
core::DriverProbe driver_probe();

}  // namespace gpuleak::shim
