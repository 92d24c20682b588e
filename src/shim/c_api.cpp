// The shim's side of include/gpuleak/gpuleak.h (and of the Python helper, through ctypes).
#include "core/recorder.h"

#define GPULEAK_API extern "C" __attribute__((visibility("default")))

using gpuleak::format::MarkerOp;

GPULEAK_API void gpuleak_api_iteration_begin(const char *loop) {
  gpuleak::core::record_marker(MarkerOp::kIterationBegin, loop && *loop ? loop : nullptr);
}
GPULEAK_API void gpuleak_api_iteration_end(void) { gpuleak::core::record_marker(MarkerOp::kIterationEnd, nullptr); }
GPULEAK_API void gpuleak_api_mark(const char *label) { gpuleak::core::record_marker(MarkerOp::kMark, label); }
GPULEAK_API int gpuleak_api_active(void) { return gpuleak::core::recorder_active() ? 1 : 0; }
