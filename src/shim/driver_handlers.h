// The handlers behind every wrapped driver entry point, declared from hooks.def's rows: each
// receives the real function it wraps and the row's format::Api, then the call's arguments. One
// handler serves the exported symbol and every pointer that cuGetProcAddress handed out for it
// (slots.h), and may serve several rows (a _ptsz variant shares its plain function's handler).
// Definitions: driver_alloc_handlers.cpp (device memory), driver_vmm_handlers.cpp (virtual memory
// management), driver_other_handlers.cpp (host memory, arrays, pools, IPC, contexts),
// stream_capture_handlers.cpp and proc_address.cpp (cuGetProcAddress).
#pragma once

#include "format/capture_format.h"
#include "shim/cuda_headers.h"
#include "shim/hooks.def"

// (a, b) -> a, b: a row's parenthesized parameter or argument list, spliced into another list.
#define GPULEAK_SPLICE(...) __VA_ARGS__

namespace gpuleak::shim {

using ApiId = format::Api;

// A handler that serves several rows is declared once per row, the same declaration each time: a
// _ptsz typedef names the same type as the plain one.
#define GPULEAK_DECLARE_HANDLER(EXPORT, BASE, MINV, MAXV, PTSZ, PFN, HANDLER, PARAMS, ARGS) \
  CUresult HANDLER(PFN real, ApiId api, GPULEAK_SPLICE PARAMS);
GPULEAK_DRIVER_HOOKS(GPULEAK_DECLARE_HANDLER)
#undef GPULEAK_DECLARE_HANDLER

}  // namespace gpuleak::shim
