// The shim's side of include/gpuleak/gpuleak.h (and of the Python helper, through ctypes).
#include <cstdint>

#include "core/clock.h"
#include "core/recorder.h"

#define GPULEAK_API extern "C" __attribute__((visibility("default")))

using gpuleak::format::MarkerOp;

GPULEAK_API void gpuleak_api_iteration_begin(const char *loop) {
  gpuleak::core::record_marker(MarkerOp::kIterationBegin, loop && *loop ? loop : nullptr);
}
GPULEAK_API void gpuleak_api_iteration_end(void) { gpuleak::core::record_marker(MarkerOp::kIterationEnd, nullptr); }
GPULEAK_API void gpuleak_api_mark(const char *label) { gpuleak::core::record_marker(MarkerOp::kMark, label); }
GPULEAK_API int gpuleak_api_active(void) { return gpuleak::core::recorder_active() ? 1 : 0; }

// A block a framework's allocator handed out (op 1) or took back (op 2) inside a segment it got
// from CUDA (format 1.3, Kind::kPoolBlock). Called by gpuleak's framework adapters
// (src/torch_adapter) from inside the framework's allocator, under its lock: it must take no lock
// of the program's and never the GIL. It records exactly like a stream-ordered CUDA call: one
// clock reading, the stacks for an allocation (read without the GIL, python_stack.h), the live
// table for the free's size; the adapter's own frames are dropped on the read side like every
// libgpuleak* module's. hook_enter() makes a call that happens inside a gpuleak hook (the segment's
// own cudaMalloc under the same allocator call) count nothing.
GPULEAK_API int gpuleak_api_pool_block(int op, int device, unsigned long long address, unsigned long long size,
                                       unsigned long long stream, int framework) {
  namespace core = gpuleak::core;
  using gpuleak::format::Api;
  using gpuleak::format::Kind;
  using gpuleak::format::Op;
  if ((op != 1 && op != 2) || framework != static_cast<int>(gpuleak::format::PoolFramework::kPyTorch) || device < 0 ||
      device > INT16_MAX || address == 0)
    return 0;
  if (!core::hook_enter()) return 0;
  core::CallFacts f{};
  f.api = Api::torchCachingAllocator;
  f.kind = Kind::kPoolBlock;
  f.device = static_cast<int16_t>(device);
  f.address = address;
  f.stream = stream;
  if (op == 1) {
    f.op = Op::kAlloc;
    f.size = size;
    f.timing = core::Timing::kEnd;  // read once, when the block is handed out
    core::record_alloc(f, core::Space::kPoolBlock);
  } else {
    f.op = Op::kFree;
    f.timing = core::Timing::kStart;  // read once, before the block can be handed out again
    f.start = core::clock_read();
    core::PendingFree pending = core::begin_free(f.start, core::Space::kPoolBlock, address);
    core::end_free(pending, f, core::Space::kPoolBlock);
  }
  core::hook_leave();
  return core::recorder_running() ? 1 : 0;
}

// The framework's tracker is attached: its description goes into the capture (PoolTrackerRecord),
// and the report says that tensors were seen through it.
GPULEAK_API void gpuleak_api_pool_attached(int framework, const char *description) {
  gpuleak::core::record_pool_tracker(framework, description);
}

// Who keeps it alive (issue #30): the Python start-up hook's walk (gpuleak._retention) found the
// reference path `text` to an object whose memory starts at `address` (`size` bytes), at exit
// (event 1), at an out-of-memory (event 2) or when main() returned (event 3); address 0 ends a
// walk (size: its duration in ns).
// Called with the GIL, from the program's thread, outside any allocation: it only buffers a record.
GPULEAK_API int gpuleak_api_retention(int event, unsigned long long address, unsigned long long size,
                                      const char *text) {
  if (event < 1 || event > 3) return 0;
  gpuleak::core::record_retention(static_cast<uint8_t>(event), address, size, text);
  return gpuleak::core::recorder_running() ? 1 : 0;
}
