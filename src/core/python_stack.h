// Python call sites: the Python frames (file, function, line) of the thread that called into CUDA,
// read inside the hook *without the GIL* (PyTorch releases it around every op, research/CAPTURE.md
// 3.3 and 5.4 option 2). docs/python.md is the user's guide.
//
// How: PyGILState_GetThisThreadState() (a thread-specific lookup, GIL-free) gives the calling
// thread's own PyThreadState; its innermost frame is followed through `previous` and, per frame,
// the code object's address and the instruction offset are copied. Nobody else mutates a thread's
// frames while that thread is inside a C call, and every code object on the chain is alive. Offsets
// come from python_layouts.h (3.10-3.12) or the interpreter's own _Py_DebugOffsets (3.13).
//
// Interning: the raw walk (code, line table, offset per frame) is looked up first in a per-thread
// one-entry cache (loops), then in a sharded table; only a walk never seen before is resolved: the
// first time a code object is seen its filename, qualname, first line and line table are copied
// (the address may be reused once it dies), names become String records, lines are computed from
// the copied table, and the result is interned as a StackRecord of kind 1 (docs/capture-format.md).
//
// A process without Python, a thread without Python frames (autograd workers, CUDA callbacks), an
// unsupported interpreter (one stderr line) or a state that fails the light checks (pointers
// non-null, aligned, in user space; every code object's type is PyCode_Type) yields 0: no Python
// frames, never another thread's, never a crash.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/tls.h"

namespace gpuleak::core {

struct State;

namespace python_detail {
// The interpreter's state (python_stack.cpp: unresolved, resolving, ready, absent, unsupported,
// off) and each thread's count of captures while it was absent, read inline by capture().
extern std::atomic<int> g_runtime_state;
extern GPULEAK_SHARED_TLS uint64_t t_absent_calls;
constexpr int kAbsent = 3, kUnsupported = 4, kOff = 5;
}  // namespace python_detail

// Reads GPULEAK_PY_STACK_DEPTH (Python frames kept per stack, 0..256, default 64, 0 = off) and
// GPULEAK_PY_FORCE_UNSUPPORTED (test hook: "1" behaves as on an unknown interpreter version,
// "layout" as on an interpreter whose frames do not match the table). Called once, from
// recorder_init. Returns "" or a one-line complaint about a bad value.
std::string python_stacks_configure();

// Per capture (one per State, so after fork the child's capture interns its own strings).
class PythonStacks {
 public:
  // The calling thread's Python stack as a StackRecord id (kind 1), interned and written on first
  // sight; 0 when there is none. Called inside a hook, GIL held or not. Allocation-free when the
  // same walk was seen before.
  uint32_t capture(State *s) {
    // Inline for a process without Python (or with it off): no call. The interpreter may still be
    // loaded later, so each thread looks again on its 2nd, 4th, 8th... capture.
    int st = python_detail::g_runtime_state.load(std::memory_order_acquire);
    if (st == python_detail::kUnsupported || st == python_detail::kOff) return 0;
    if (st == python_detail::kAbsent) {
      uint64_t n = ++python_detail::t_absent_calls;
      if (n & (n - 1)) return 0;
    }
    return capture_slow(s);
  }

  // A Python stack given as text (file, function, line per frame, innermost first), e.g. a JAX
  // array's creation traceback read by gpuleak's Python side: interned as a StackRecord of kind 1
  // exactly like a walk, so the same line gives the same frame. At most the configured depth is
  // kept; null names read as empty. 0 when n is 0 or Python stacks are off.
  uint32_t intern_frames(State *s, const char *const *files, const char *const *functions, const int32_t *lines,
                         unsigned n);

  // How many of `frames` (native return addresses, innermost first) come before the first one in
  // the interpreter's own code (libpython, or an executable named python*): the part of a native
  // stack worth keeping for an allocation whose Python frames were captured. Without the cut, the
  // interpreter's varying inner paths (an instruction before and after specialization) would split
  // one Python call site into several. `n` when no frame is the interpreter's.
  static unsigned frames_before_interpreter(const uint64_t *frames, unsigned n);

  // Raw frame of a walk: what identifies a call site before anything is resolved.
  struct Raw {
    uint64_t code;       // code object address
    uint64_t linetable;  // its co_linetable address (tells a reused code address apart)
    int64_t offset;      // instruction offset in bytes, -1 before the first instruction
  };

 private:
  uint32_t capture_slow(State *s);
  uint32_t resolve(State *s, const Raw *raw, unsigned n);

  struct CodeInfo {
    uint32_t file_id = 0;
    uint32_t function_id = 0;
    int first_line = 0;
    std::string line_table;  // copy of co_linetable's bytes
  };
  struct CodeKey {
    uint64_t code, linetable;
    bool operator==(const CodeKey &o) const { return code == o.code && linetable == o.linetable; }
  };
  struct CodeKeyHash {
    size_t operator()(const CodeKey &k) const { return k.code * 0x9e3779b97f4a7c15ull ^ k.linetable; }
  };
  std::mutex code_lock_;
  std::unordered_map<CodeKey, CodeInfo, CodeKeyHash> codes_;

  static constexpr int kShards = 16;
  struct Shard {
    std::mutex lock;
    std::unordered_multimap<uint64_t, std::pair<std::vector<Raw>, uint32_t>> walks;
  };
  std::array<Shard, kShards> shards_;
};

// Line of the instruction at byte `offset`, from a copied co_linetable (CPython's
// PyCode_Addr2Line): `first_line` for a negative offset, 0 when the table says "no line" or does
// not cover the offset. `format` is py::LineTable.
int python_line_for_offset(uint8_t format, const std::string &table, int first_line, int64_t offset);

}  // namespace gpuleak::core
