// The shim's side of include/gpuleak/gpuleak.h (and of the Python helper, through ctypes).
#include <cstdint>

#include "core/clock.h"
#include "core/recorder.h"

#define GPULEAK_API extern "C" __attribute__((visibility("default")))

using gpuleak::format::MarkerOp;

namespace {
// The allocator whose objects a framework number stands for (format::PoolFramework), kCount when
// it is no known framework.
gpuleak::format::Api framework_api(int framework) {
  using gpuleak::format::Api;
  using gpuleak::format::PoolFramework;
  switch (static_cast<PoolFramework>(framework)) {
    case PoolFramework::kPyTorch:
      return Api::torchCachingAllocator;
    case PoolFramework::kCuPy:
      return Api::cupyMemoryPool;
    case PoolFramework::kJax:
      return Api::jaxLiveArrays;
  }
  return Api::kCount;
}

// A 64-bit value the Python package passed as two C ints (the int-only entry points below).
unsigned long long joined(unsigned high, unsigned low) { return (static_cast<unsigned long long>(high) << 32) | low; }

bool valid_block(int op, int device, unsigned long long address) {
  return (op == 1 || op == 2) && device >= 0 && device <= INT16_MAX && address != 0;
}
}  // namespace

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
  const Api api = framework_api(framework);
  if (!valid_block(op, device, address) || api == Api::kCount) return 0;
  if (!core::hook_enter()) return 0;
  core::CallFacts f{};
  f.api = api;
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
    core::PendingFree pending = core::begin_free();
    core::end_free(pending, f, core::Space::kPoolBlock);
  }
  core::hook_leave();
  return core::recorder_running() ? 1 : 0;
}

// ctypes' cheap form of the calls gpuleak's Python package makes once per array or loop pass
// (tools/python/gpuleak/_cupy.py, _jax.py, _observe.py): every argument a C int, so ctypes passes
// the Python ints as they are, with no argtypes. A declared argtype costs a converter object per
// argument per call: 3.9 against 1.8 us a six-argument call on the development VM under load,
// about twice the cost of the whole call. A 64-bit value travels as two halves (high, low).
GPULEAK_API int gpuleak_api_pool_block32(int op, int device, unsigned address_high, unsigned address_low,
                                         unsigned size_high, unsigned size_low, int framework) {
  return gpuleak_api_pool_block(op, device, joined(address_high, address_low), joined(size_high, size_low), 0,
                                framework);
}

// The framework's tracker is attached: its description goes into the capture (PoolTrackerRecord),
// and the report says that tensors were seen through it.
GPULEAK_API void gpuleak_api_pool_attached(int framework, const char *description) {
  gpuleak::core::record_pool_tracker(framework, description);
}

// The framework's tracker could not attach (gpuleak's Python package: the PyTorch adapter had no
// compiler, no torch headers or no CUDA headers): the reason goes into the capture (format 1.8),
// and the summary's note says it with what is lost, instead of a line on the program's stderr.
GPULEAK_API void gpuleak_api_pool_missing(int framework, const char *reason) {
  gpuleak::core::record_pool_tracker(framework, reason, false);
}

// The Python loop observer's side (tools/python/gpuleak/_observe.py, capture format 1.5): private
// to gpuleak's own Python package, called through ctypes with the GIL held. A loop or callback is
// defined once; each pass returns the process's allocation clock, so the observer can tell a
// location that fires with nothing allocated in between (it then stops watching it).
GPULEAK_API void gpuleak_api_loop_define(unsigned id, unsigned parent, int kind, const char *file, const char *function,
                                         unsigned first_line, unsigned last_line, unsigned depth) {
  if (id == 0 || (kind != 1 && kind != 2)) return;
  gpuleak::format::LoopRecord r{};
  r.id = id;
  r.parent_id = parent;
  r.first_line = first_line;
  r.last_line = last_line;
  r.depth = static_cast<uint16_t>(depth > UINT16_MAX ? UINT16_MAX : depth);
  r.kind = static_cast<uint8_t>(kind);
  gpuleak::core::record_loop(r, file, function);
}

GPULEAK_API unsigned long long gpuleak_api_loop_pass(unsigned id, int op, unsigned long long task_id) {
  if (id != 0 && op >= 1 && op <= 3)
    gpuleak::core::record_loop_pass(id, static_cast<gpuleak::format::LoopPassOp>(op), task_id);
  return gpuleak::core::allocation_clock();
}

GPULEAK_API unsigned long long gpuleak_api_loop_pass32(unsigned id, int op, unsigned task_high, unsigned task_low) {
  return gpuleak_api_loop_pass(id, op, joined(task_high, task_low));
}

GPULEAK_API unsigned long long gpuleak_api_allocation_clock(void) { return gpuleak::core::allocation_clock(); }

GPULEAK_API void gpuleak_api_observer(int method, const char *note) {
  if (method == 1 || method == 2) gpuleak::core::record_observer(static_cast<uint32_t>(method), note);
}

// gpuleak's Python side for JAX (tools/python/gpuleak/_jax.py): the live arrays are sampled at
// iteration boundaries, so each array's call site is its creation traceback, not the calling
// thread's frames. gpuleak_api_python_frames interns such a stack (n frames innermost first, as
// text) and returns its id (0 when not recorded); gpuleak_api_pool_object records an object first
// seen live (op 1) or first seen gone (op 2) with that id: a pool block with no native stack.
GPULEAK_API unsigned gpuleak_api_python_frames(unsigned n, const char *const *files, const char *const *functions,
                                               const int *lines) {
  if (n == 0 || n > 4096) return 0;
  return gpuleak::core::record_python_frames(files, functions, lines, n);
}

GPULEAK_API int gpuleak_api_pool_object(int op, int device, unsigned long long address, unsigned long long size,
                                        int framework, unsigned py_stack_id) {
  using gpuleak::format::Api;
  using gpuleak::format::Op;
  const Api api = framework_api(framework);
  if (!valid_block(op, device, address) || api == Api::kCount) return 0;
  return gpuleak::core::record_sampled_block(op == 1 ? Op::kAlloc : Op::kFree, api, static_cast<int16_t>(device),
                                             address, size, py_stack_id)
             ? 1
             : 0;
}

// One sample of a framework's live objects in one call (tools/python/gpuleak/_jax.py): n objects,
// four 64-bit words each (op | device << 8 | framework << 24, address, size, py_stack_id), in
// order (the objects gone first, then the new ones), the words' address as two halves. A sample
// of 200 new and 200 gone arrays is one ctypes call instead of 400. Returns how many were
// recorded; an object the recorder refuses (stopped, a malformed entry) is skipped.
GPULEAK_API unsigned gpuleak_api_pool_objects32(unsigned n, unsigned words_high, unsigned words_low) {
  const auto *words = reinterpret_cast<const unsigned long long *>(joined(words_high, words_low));
  if (words == nullptr || n > (1u << 24)) return 0;
  unsigned recorded = 0;
  for (unsigned i = 0; i < n; ++i, words += 4) {
    const int op = static_cast<int>(words[0] & 0xFF);
    const int device = static_cast<int>((words[0] >> 8) & 0xFFFF);
    const int framework = static_cast<int>((words[0] >> 24) & 0xFF);
    recorded += gpuleak_api_pool_object(op, device, words[1], words[2], framework, static_cast<unsigned>(words[3]));
  }
  return recorded;
}

// A framework's own out-of-memory, with no CUDA call failing (XLA raising RESOURCE_EXHAUSTED
// inside its arena): an OOM record (format 1.6) with the calling thread's stacks, the request
// (0 when unknown) and the arena's bytes in use, largest free block and limit (0 when unknown).
// Called with the framework's live objects just recorded (gpuleak_api_pool_object), so that the
// report's OOM lists them by line. Returns 1 when written.
GPULEAK_API int gpuleak_api_framework_oom(int framework, int device, unsigned long long requested,
                                          unsigned long long in_use, unsigned long long largest_free,
                                          unsigned long long limit) {
  using gpuleak::format::Api;
  if (framework != static_cast<int>(gpuleak::format::PoolFramework::kJax) || device < -1 || device > INT16_MAX)
    return 0;
  gpuleak::format::OomRecord o{};
  o.requested = requested;
  o.api = static_cast<uint16_t>(Api::jaxRuntimeError);
  o.device = static_cast<int16_t>(device);
  o.pool_in_use_bytes = in_use;
  o.pool_largest_free_bytes = largest_free;
  o.pool_limit_bytes = limit;
  o.pool_framework = framework;
  return gpuleak::core::record_framework_oom(o) ? 1 : 0;
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
