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
// (about 530 allocations per step of a 6-layer transformer), many of them at one stack pointer (the
// dispatcher's frames differ by op, not in size): two paths per stack pointer thrashed, and a proof
// per miss cost more than the unwinds it saved (docs/benchmarks.md, run 10). Entries are chained
// per bucket; the slots of their proofs are packed in one array, reserved per thread and touched
// only as proofs are kept (about 50 slots, 800 bytes, per call path at depth 32).
constexpr unsigned kBuckets = 512;
constexpr unsigned kEntries = 4096;    // call paths (and first sightings) per thread
constexpr unsigned kSlots = 1u << 17;  // proof slots per thread (2 MiB reserved)
// Proven paths at one stack pointer: past it, that stack pointer takes no more proofs (its other
// paths are unwound each time). A wrong path's check stops at its first differing slot.
constexpr unsigned kPathsPerSp = 128;
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
  uint32_t slots = 0;     // its proof's first slot in slots_
  uint32_t stack_id = 0;  // 0: a first sighting (or a proof that failed)
  int32_t next = -1;      // the bucket's next entry
  int32_t after = -1;     // the entry of this bucket that held the last time after this one did
  uint16_t count = 0;     // slots in its proof
  bool python = false;
  bool bp_used = false;  // the proof depends on the frame-pointer register itself
};

// A training step reaches the allocator through the same call paths in the same order every
// step: each entry remembers which one of its bucket came next, and that one is checked first.
struct StackMemo::Bucket {
  int32_t head = -1;
  int32_t last = -1;  // the entry that held (or was proven) last
  int credit = kLearnCredit;
};

StackMemo::~StackMemo() {
  delete[] buckets_;
  delete[] entries_;
  delete[] slots_;
}

StackMemo *StackMemo::for_thread(const void *owner, unsigned max_frames) {
  StackMemo *m = t_memo;
  if (m && m->owner_ == owner) return m;
  if (m) {  // a fork child's new recorder: the ids belong to the parent's
    m->owner_ = owner;
    m->clear();
    return m;
  }
  pthread_once(&g_exit_key_once, make_exit_key);
  m = new (std::nothrow) StackMemo;
  if (!m) return nullptr;
  m->owner_ = owner;
  bool bounded = thread_stack(&m->stack_low_, &m->stack_end_);
  m->slots_per_proof_ = 2 * (max_frames + kOwnFrames) + 2;
  m->buckets_ = new (std::nothrow) Bucket[kBuckets];
  m->entries_ = new (std::nothrow) Entry[kEntries];
  // Default-initialized: the pages are touched only as proofs are stored.
  m->slots_ = new (std::nothrow) StackSlot[kSlots + m->slots_per_proof_];
  if (!m->buckets_ || !m->entries_ || !m->slots_ || !bounded) {
    delete m;
    return nullptr;
  }
  t_memo = m;
  pthread_setspecific(g_exit_key, m);
  return m;
}

void StackMemo::clear() {
  for (unsigned b = 0; b < kBuckets; ++b) buckets_[b] = Bucket{};  // (entries are reset as reused)
  entries_used_ = 0;
  slots_used_ = 0;
}

StackMemo::Bucket &StackMemo::bucket_for(uintptr_t sp) { return buckets_[((sp >> 4) ^ (sp >> 13)) % kBuckets]; }

bool StackMemo::holds(const Entry &e, uintptr_t sp, uintptr_t bp, bool python) const {
  if (e.sp != sp || e.python != python || (e.bp_used && e.bp != bp) || !e.stack_id) return false;
  const StackSlot *s = slots_ + e.slots;
  unsigned k = 0;
  while (k < e.count && *reinterpret_cast<const volatile uint64_t *>(s[k].address) == s[k].value) ++k;
  return k == e.count;
}

void StackMemo::held(Bucket &b, int32_t i) {
  if (b.last >= 0) entries_[b.last].after = i;
  b.last = i;
  if (b.credit < kLearnCreditMax) ++b.credit;
}

uint32_t StackMemo::find(uintptr_t sp, uintptr_t bp, bool python, StackProof **proof) {
  *proof = nullptr;
  if (sp < stack_low_ || sp >= stack_end_) return 0;  // a signal stack, a coroutine's: never memoized
  Bucket &b = bucket_for(sp);
  if (b.last >= 0) {
    int32_t next = entries_[b.last].after;
    if (next >= 0 && holds(entries_[next], sp, bp, python)) {
      held(b, next);
      return entries_[next].stack_id;
    }
  }
  bool seen = false;
  unsigned checked = 0;
  for (int32_t i = b.head; i >= 0 && checked < kPathsPerSp; i = entries_[i].next) {
    const Entry &e = entries_[i];
    if (e.sp != sp || e.python != python) continue;
    seen = true;
    if (!e.stack_id) continue;
    ++checked;
    if (!holds(e, sp, bp, python)) continue;
    held(b, i);
    return e.stack_id;
  }
  if (seen && b.credit > 0 && checked < kPathsPerSp) {
    scratch_ = StackProof{};
    scratch_.sp = sp;
    scratch_.bp = bp;
    scratch_.stack_end = stack_end_;
    scratch_.slots = slots_ + kSlots;
    scratch_.capacity = slots_per_proof_;
    *proof = &scratch_;
  }
  return 0;
}

void StackMemo::remember(uintptr_t sp, uintptr_t bp, bool python, const StackProof *proof, uint32_t stack_id) {
  if (sp < stack_low_ || sp >= stack_end_) return;
  Bucket &b = bucket_for(sp);
  int32_t sighting = -1;  // this stack pointer's first-sighting entry, if any
  for (int32_t i = b.head; i >= 0; i = entries_[i].next) {
    const Entry &e = entries_[i];
    if (e.sp != sp || e.python != python) continue;
    if (!proof) return;  // seen before: find() asks for a proof next time
    if (!e.stack_id && sighting < 0) sighting = i;
  }
  if (proof) {
    --b.credit;
    if (!proof->valid || stack_id == 0) return;
  }
  const unsigned count = proof ? proof->count : 0;
  if ((sighting < 0 && entries_used_ == kEntries) || count > kSlots - slots_used_) {  // full: start over
    clear();
    sighting = -1;
  }
  int32_t i = sighting;
  if (i < 0) {
    i = static_cast<int32_t>(entries_used_++);
    entries_[i] = Entry{};
    entries_[i].next = b.head;
    b.head = i;
  }
  Entry &e = entries_[i];
  e.sp = sp;
  e.bp = bp;
  e.python = python;
  if (!proof) return;
  for (unsigned k = 0; k < count; ++k) slots_[slots_used_ + k] = proof->slots[k];
  e.slots = slots_used_;
  slots_used_ += count;
  e.count = static_cast<uint16_t>(count);
  e.bp_used = proof->bp_used;
  e.stack_id = stack_id;
  if (b.last >= 0) entries_[b.last].after = i;
  b.last = i;
}

}  // namespace gpuleak::core
