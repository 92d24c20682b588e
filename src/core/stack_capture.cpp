#include "core/stack_capture.h"

#include <dlfcn.h>
#include <libunwind.h>  // types and register numbers only: the functions are looked up with dlsym
#include <unwind.h>

#include <algorithm>

#include "core/high_fd.h"

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
constexpr int kOwnFramesMax = 16;      // hook + recorder frames above the program's

}  // namespace

struct StackCapture::Cursor {
  int (*getcontext)(unw_context_t *);
  int (*init_local)(unw_cursor_t *, unw_context_t *);
  int (*step)(unw_cursor_t *);
  int (*get_reg)(unw_cursor_t *, int, unw_word_t *);
  int (*get_save_loc)(unw_cursor_t *, int, unw_save_loc_t *);
  int (*is_signal_frame)(unw_cursor_t *);
};

void StackCapture::init(uintptr_t own_begin, uintptr_t own_end, bool libgcc) {
  own_begin_ = own_begin;
  own_end_ = own_end;
  void *lib = libgcc ? nullptr : dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  if (lib) {
    // Before libunwind's first call, which makes its address-validation pipe: that pipe must
    // never take the low numbers the program uses (it reads one byte from one end and writes one
    // byte of memory into the other, and re-opens it whenever a read fails).
    keep_pipes_high(lib);
    auto bt = reinterpret_cast<Backtrace>(dlsym(lib, "unw_backtrace"));
    auto set_policy = reinterpret_cast<int (*)(void *, int)>(dlsym(lib, "_ULx86_64_set_caching_policy"));
    auto set_size = reinterpret_cast<int (*)(void *, unsigned, int)>(dlsym(lib, "_ULx86_64_set_cache_size"));
    auto space = static_cast<void **>(dlsym(lib, "_ULx86_64_local_addr_space"));
    if (bt && set_policy && space) {
      set_policy(*space, kUnwCachePerThread);
      if (set_size) set_size(*space, 1024, 0);
      backtrace_ = bt;
      which_ = 1;
      static Cursor cursor;  // the same library for every State (a fork child copies this one)
      cursor.getcontext = reinterpret_cast<decltype(cursor.getcontext)>(dlsym(lib, "_Ux86_64_getcontext"));
      cursor.init_local = reinterpret_cast<decltype(cursor.init_local)>(dlsym(lib, "_ULx86_64_init_local"));
      cursor.step = reinterpret_cast<decltype(cursor.step)>(dlsym(lib, "_ULx86_64_step"));
      cursor.get_reg = reinterpret_cast<decltype(cursor.get_reg)>(dlsym(lib, "_ULx86_64_get_reg"));
      cursor.get_save_loc = reinterpret_cast<decltype(cursor.get_save_loc)>(dlsym(lib, "_ULx86_64_get_save_loc"));
      cursor.is_signal_frame =
          reinterpret_cast<decltype(cursor.is_signal_frame)>(dlsym(lib, "_ULx86_64_is_signal_frame"));
      if (cursor.getcontext && cursor.init_local && cursor.step && cursor.get_reg && cursor.get_save_loc &&
          cursor.is_signal_frame)
        cursor_ = &cursor;
      return;
    }
  }
  backtrace_ = gcc_backtrace;
  which_ = 2;
}

unsigned StackCapture::capture(uint64_t *out, unsigned max_frames) const {
  if (!backtrace_ || max_frames == 0) return 0;
  void *raw[128 + kOwnFramesMax];
  // Room for gpuleak's own frames above the program's: as many as any capture has met so far and
  // two more (a deeper hook path is learned at its first capture, which may lose an outermost
  // frame once), kOwnFramesMax until then. Every frame asked for is walked.
  int own = __atomic_load_n(&own_frames_, __ATOMIC_RELAXED);
  int room = own ? std::min(own + 2, kOwnFramesMax) : kOwnFramesMax;
  int want = static_cast<int>(std::min(max_frames, 128u)) + room;
  int n = backtrace_(raw, want);
  int skip = 0;
  while (skip < n && reinterpret_cast<uintptr_t>(raw[skip]) >= own_begin_ &&
         reinterpret_cast<uintptr_t>(raw[skip]) < own_end_)
    ++skip;
  if (skip > own) __atomic_store_n(&own_frames_, skip, __ATOMIC_RELAXED);
  unsigned count = 0;
  for (int i = skip; i < n && count < max_frames; ++i) out[count++] = reinterpret_cast<uintptr_t>(raw[i]);
  return count;
}

namespace {

// Adds a slot the unwind read: only those at or above the caller's stack pointer (below it lie
// gpuleak's own frames of this very call, rebuilt the same way every time from `sp` and `bp`).
bool add_slot(StackProof *p, const unw_save_loc_t &loc, uint64_t value) {
  if (loc.type != UNW_SLT_MEMORY) return false;
  uintptr_t a = loc.u.addr;
  if (a < p->sp) {
    return true;
  }
  if (a + sizeof(uint64_t) > p->stack_end || p->count == p->capacity) return false;
  if (*reinterpret_cast<const uint64_t *>(a) != value) return false;
  if (p->count && p->slots[p->count - 1].address == a) return true;  // restored from the same slot again
  p->slots[p->count++] = StackSlot{a, value};
  return true;
}

}  // namespace

unsigned StackCapture::capture_with_proof(uint64_t *out, unsigned max_frames, StackProof *proof) const {
  proof->count = 0;
  proof->bp_used = false;
  proof->valid = false;
  if (!cursor_ || max_frames == 0) return 0;
  const Cursor &c = *cursor_;
  unw_context_t context;
  unw_cursor_t cursor;
  if (c.getcontext(&context) != 0 || c.init_local(&cursor, &context) != 0) return 0;
  max_frames = std::min(max_frames, 128u);
  bool ok = true;
  unsigned count = 0;
  for (unsigned frame = 0; frame < max_frames + kOwnFramesMax && count < max_frames; ++frame) {
    unw_word_t ip = 0, bp = 0;
    if (c.get_reg(&cursor, UNW_REG_IP, &ip) != 0 || ip == 0) break;
    unw_save_loc_t loc;
    // Where this frame's address came from: the return-address slot of the frame below.
    if (frame > 0) ok = ok && c.get_save_loc(&cursor, UNW_REG_IP, &loc) == 0 && add_slot(proof, loc, ip);
    // A frame pointer into the stack may place a caller's frame (its canonical frame address): it
    // is part of the proof, wherever it was restored from.
    if (c.get_reg(&cursor, UNW_X86_64_RBP, &bp) == 0 && bp >= proof->sp && bp < proof->stack_end) {
      ok = ok && c.get_save_loc(&cursor, UNW_X86_64_RBP, &loc) == 0 && add_slot(proof, loc, bp);
      if (loc.type == UNW_SLT_MEMORY && loc.u.addr < proof->sp) proof->bp_used = true;
    }
    if (count > 0 || ip < own_begin_ || ip >= own_end_) {
      proof->upto[count] = static_cast<uint16_t>(proof->count);
      out[count++] = ip;
    }
    if (count == max_frames) break;
    if (c.is_signal_frame(&cursor) > 0) ok = false;  // a signal frame restores every register
    if (c.step(&cursor) <= 0) break;
  }
  proof->valid = ok;
  return count;
}

const char *StackCapture::unwinder_name() const { return which_ == 1 ? "libunwind" : which_ == 2 ? "libgcc" : "none"; }

}  // namespace gpuleak::core
