#include "core/stack_memo.h"

#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <new>

#include "core/tls.h"

extern "C" void *__libc_stack_end;  // ld.so: the initial thread's stack pointer at process start

namespace gpuleak::core {

namespace {

// By stack pointer. A PyTorch training step allocates from a few hundred call paths per thread
// (about 530 allocations per step of a 6-layer transformer): 8 buckets (the first size) thrashed,
// and every allocation paid a full unwind through libtorch (docs/benchmarks.md, run 8). 128 x 2
// entries of up to 2 x (depth + 16) + 2 slots: about 400 KB per allocating thread at depth 32.
constexpr unsigned kBuckets = 128;
constexpr unsigned kWays = 2;  // two call paths at one stack pointer keep both proofs
constexpr unsigned kOwnFrames = 16;
constexpr int kLearnCredit = 4;  // unwinds with proof a bucket may spend before it pays them back
constexpr int kLearnCreditMax = 16;

GPULEAK_TLS StackMemo *t_memo = nullptr;

pthread_key_t g_exit_key;
pthread_once_t g_exit_key_once = PTHREAD_ONCE_INIT;
void on_thread_exit(void *memo) {
  if (t_memo == memo) t_memo = nullptr;  // a later hook on this thread (another key's destructor) starts afresh
  delete static_cast<StackMemo *>(memo);
}
void make_exit_key() { pthread_key_create(&g_exit_key, on_thread_exit); }

// The calling thread's own stack, [low, end): what lies between a stack pointer in it and its end
// belongs to the thread and stays mapped while the thread lives.
bool thread_stack(uintptr_t *low, uintptr_t *end) {
  if (syscall(SYS_gettid) == getpid()) {  // the initial thread: no pthread_getattr_np (it reads /proc)
    const uintptr_t page = 4096;
    rlimit limit{};
    if (getrlimit(RLIMIT_STACK, &limit) != 0) return false;
    *end = (reinterpret_cast<uintptr_t>(__libc_stack_end) + page - 1) & ~(page - 1);
    // The kernel keeps other mappings out of [end - limit, end); an unlimited stack gets the
    // bottom-up layout, with mappings far below, and 64 MiB is then taken as its extent (a thread
    // deeper than that is simply not memoized).
    const uintptr_t unlimited = uintptr_t{64} << 20;
    uintptr_t size = limit.rlim_cur == RLIM_INFINITY ? unlimited : static_cast<uintptr_t>(limit.rlim_cur);
    if (size > *end) size = *end;
    *low = *end - size;
    return true;
  }
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return false;
  void *base = nullptr;
  size_t size = 0;
  int rc = pthread_attr_getstack(&attr, &base, &size);
  pthread_attr_destroy(&attr);
  *low = reinterpret_cast<uintptr_t>(base);
  *end = *low + size;
  return rc == 0 && size > 0;
}

}  // namespace

struct StackMemo::Entry {
  uintptr_t sp = 0;
  uintptr_t bp = 0;
  uint32_t stack_id = 0;  // 0: seen without a proof (or its proof failed)
  uint16_t count = 0;     // slots in its proof
  bool python = false;
  bool bp_used = false;  // the proof depends on the frame-pointer register itself
  bool used = false;
};

struct StackMemo::Bucket {
  Entry ways[kWays];
  int credit = kLearnCredit;
  uint8_t recent = 0;  // the way used last
};

StackMemo::~StackMemo() {
  delete[] buckets_;
  delete[] slots_;
}

StackMemo *StackMemo::for_thread(const void *owner, unsigned max_frames) {
  StackMemo *m = t_memo;
  if (m && m->owner_ == owner) return m;
  if (m) {  // a fork child's new recorder: the ids belong to the parent's
    m->owner_ = owner;
    for (unsigned b = 0; b < kBuckets; ++b) m->buckets_[b] = Bucket{};
    return m;
  }
  pthread_once(&g_exit_key_once, make_exit_key);
  m = new (std::nothrow) StackMemo;
  if (!m) return nullptr;
  m->owner_ = owner;
  bool bounded = thread_stack(&m->stack_low_, &m->stack_end_);
  m->slots_per_entry_ = 2 * (max_frames + kOwnFrames) + 2;
  m->buckets_ = new (std::nothrow) Bucket[kBuckets];
  m->slots_ = new (std::nothrow) StackSlot[(kBuckets * kWays + 1) * m->slots_per_entry_];
  if (!m->buckets_ || !m->slots_ || !bounded) {
    delete m;
    return nullptr;
  }
  t_memo = m;
  pthread_setspecific(g_exit_key, m);
  return m;
}

StackMemo::Bucket &StackMemo::bucket_for(uintptr_t sp) { return buckets_[((sp >> 4) ^ (sp >> 11)) % kBuckets]; }

StackSlot *StackMemo::slots_of(const Bucket &b, unsigned way) {
  return slots_ + ((&b - buckets_) * kWays + way) * slots_per_entry_;
}

uint32_t StackMemo::find(uintptr_t sp, uintptr_t bp, bool python, StackProof **proof) {
  *proof = nullptr;
  if (sp < stack_low_ || sp >= stack_end_) return 0;  // a signal stack, a coroutine's: never memoized
  Bucket &b = bucket_for(sp);
  bool seen = false;
  for (unsigned w = 0; w < kWays; ++w) {
    Entry &e = b.ways[w];
    if (!e.used || e.sp != sp || e.python != python || (e.bp_used && e.bp != bp)) continue;
    seen = true;
    if (!e.stack_id) continue;
    const StackSlot *s = slots_of(b, w);
    unsigned i = 0;
    while (i < e.count && *reinterpret_cast<const volatile uint64_t *>(s[i].address) == s[i].value) ++i;
    if (i < e.count) continue;
    b.recent = static_cast<uint8_t>(w);
    if (b.credit < kLearnCreditMax) ++b.credit;
    return e.stack_id;
  }
  if (seen && b.credit > 0) {
    scratch_ = StackProof{};
    scratch_.sp = sp;
    scratch_.bp = bp;
    scratch_.stack_end = stack_end_;
    scratch_.slots = slots_ + kBuckets * kWays * slots_per_entry_;
    scratch_.capacity = slots_per_entry_;
    *proof = &scratch_;
  }
  return 0;
}

void StackMemo::remember(uintptr_t sp, uintptr_t bp, bool python, const StackProof *proof, uint32_t stack_id) {
  if (sp < stack_low_ || sp >= stack_end_) return;
  Bucket &b = bucket_for(sp);
  auto same = [&](const Entry &e) { return e.used && e.sp == sp && e.python == python; };
  // A first sighting takes the way not used last; a proof replaces this stack pointer's sighting,
  // else the way not used last (two call paths that alternate at one stack pointer keep both).
  unsigned way = b.recent ^ 1u;
  for (unsigned w = 0; w < kWays; ++w) {
    if (!same(b.ways[w])) continue;
    if (!proof) return;  // seen before: find() asks for a proof next time
    if (b.ways[w].stack_id == 0) way = w;
  }
  Entry &e = b.ways[way];
  e = Entry{};
  e.used = true;
  e.sp = sp;
  e.bp = bp;
  e.python = python;
  b.recent = static_cast<uint8_t>(way);
  if (!proof) return;
  --b.credit;
  if (!proof->valid || stack_id == 0) return;
  StackSlot *s = slots_of(b, way);
  for (unsigned i = 0; i < proof->count; ++i) s[i] = proof->slots[i];
  e.count = static_cast<uint16_t>(proof->count);
  e.bp_used = proof->bp_used;
  e.stack_id = stack_id;
}

}  // namespace gpuleak::core
