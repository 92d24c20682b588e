#include "core/stack_capture.h"

#include <dlfcn.h>
#include <unwind.h>

#include <algorithm>

namespace gpuleak::core {

namespace {

// libgcc's unwinder: always present (linked statically into the shim), ~10x slower than
// libunwind's cached unw_backtrace, so only a fallback.
struct GccWalk {
  void **out;
  int max;
  int n;
};
_Unwind_Reason_Code gcc_step(_Unwind_Context *ctx, void *arg) {
  auto *w = static_cast<GccWalk *>(arg);
  if (w->n >= w->max) return _URC_END_OF_STACK;
  uintptr_t ip = _Unwind_GetIP(ctx);
  if (ip == 0) return _URC_END_OF_STACK;
  w->out[w->n++] = reinterpret_cast<void *>(ip);
  return _URC_NO_REASON;
}
int gcc_backtrace(void **out, int max) {
  GccWalk w{out, max, 0};
  _Unwind_Backtrace(gcc_step, &w);
  return w.n;
}

constexpr int kUnwCachePerThread = 2;  // UNW_CACHE_PER_THREAD in libunwind.h

}  // namespace

void StackCapture::init(uintptr_t own_begin, uintptr_t own_end) {
  own_begin_ = own_begin;
  own_end_ = own_end;
  void *lib = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  if (lib) {
    auto bt = reinterpret_cast<Backtrace>(dlsym(lib, "unw_backtrace"));
    auto set_policy = reinterpret_cast<int (*)(void *, int)>(dlsym(lib, "_ULx86_64_set_caching_policy"));
    auto set_size = reinterpret_cast<int (*)(void *, unsigned, int)>(dlsym(lib, "_ULx86_64_set_cache_size"));
    auto space = static_cast<void **>(dlsym(lib, "_ULx86_64_local_addr_space"));
    if (bt && set_policy && space) {
      set_policy(*space, kUnwCachePerThread);
      if (set_size) set_size(*space, 1024, 0);
      backtrace_ = bt;
      which_ = 1;
      return;
    }
  }
  backtrace_ = gcc_backtrace;
  which_ = 2;
}

unsigned StackCapture::capture(uint64_t *out, unsigned max_frames) const {
  if (!backtrace_ || max_frames == 0) return 0;
  constexpr int kOwnFramesMax = 16;  // hook + recorder frames above the program's
  void *raw[128 + kOwnFramesMax];
  int want = static_cast<int>(std::min(max_frames, 128u)) + kOwnFramesMax;
  int n = backtrace_(raw, want);
  int skip = 0;
  while (skip < n && reinterpret_cast<uintptr_t>(raw[skip]) >= own_begin_ &&
         reinterpret_cast<uintptr_t>(raw[skip]) < own_end_)
    ++skip;
  unsigned count = 0;
  for (int i = skip; i < n && count < max_frames; ++i) out[count++] = reinterpret_cast<uintptr_t>(raw[i]);
  return count;
}

const char *StackCapture::unwinder_name() const { return which_ == 1 ? "libunwind" : which_ == 2 ? "libgcc" : "none"; }

}  // namespace gpuleak::core
