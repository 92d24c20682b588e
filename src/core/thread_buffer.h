// Per-thread event buffers: the hot path appends encoded records to its own thread's ring without
// a lock or a system call; the writer thread drains every ring into the capture file.
//
// Each ring is single-producer (its thread) / single-consumer (the writer). `head` and `tail` are
// byte counts that only grow; the producer owns head, the consumer owns tail. A record is written
// contiguously or wraps; the consumer copies out whole bytes, so records never interleave.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>

namespace gpuleak::core {

// Three cache lines, by who writes them: the owning thread on every record, nobody after creation
// (almost), and the writer on every drain. A line written by both would move between the two
// cores on every record the writer reads while the program appends (on two cores that costs more
// than everything else the stack-less pair does: docs/benchmarks.md run 13).
struct ThreadBuffer {
  // The producer's line.
  alignas(64) std::atomic<uint64_t> head{0};  // bytes ever written (producer)
  uint64_t tail_seen = 0;                     // the producer's last reading of tail (room_for)
  // Counted by the owning thread alone (a load and a store, no locked instruction); summed by
  // BufferRegistry::totals().
  std::atomic<uint64_t> events{0};       // memory records appended
  std::atomic<uint64_t> allocations{0};  // successful allocations
  std::atomic<uint64_t> frees{0};        // successful frees
  // Set once (the registry; thread exit).
  alignas(64) uint8_t *data = nullptr;
  uint32_t capacity = 0;  // power of two
  uint32_t tid = 0;
  ThreadBuffer *next = nullptr;       // registry list, owned by BufferRegistry
  std::atomic<bool> orphaned{false};  // its thread exited; free it once drained
  // The consumer's line.
  alignas(64) std::atomic<uint64_t> tail{0};  // bytes ever drained (consumer)
  uint64_t last_ts = 0;                       // the drainer's: the latest record time it let through
  uint64_t ready = 0;                         // the drainer's: bytes up to here are converted and may leave the ring
};

inline void bump(std::atomic<uint64_t> &counter) {
  counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// The producer's room check: true when `n` more bytes fit before the consumer's tail. The tail is
// read again (acquire: the bytes before it are consumed) only when the last reading leaves too
// little room, so that the consumer's line stays in the consumer's cache.
inline bool room_for(ThreadBuffer *b, uint64_t head, uint64_t n) {
  if (b->capacity - (head - b->tail_seen) >= n) return true;
  b->tail_seen = b->tail.load(std::memory_order_acquire);
  return b->capacity - (head - b->tail_seen) >= n;
}

// The producer's drain request test: more than a quarter of the ring used, by the last reading of
// the tail and, if that says so, by a fresh one.
inline bool over_quarter_full(ThreadBuffer *b) {
  const uint64_t head = b->head.load(std::memory_order_relaxed);
  if (head - b->tail_seen <= b->capacity / 4) return false;
  b->tail_seen = b->tail.load(std::memory_order_acquire);
  return head - b->tail_seen > b->capacity / 4;
}

// Appends `n` bytes made of two parts (record header + payload) atomically with respect to the
// consumer; false when there is not enough room (the caller decides to wait or drop).
bool buffer_append(ThreadBuffer *b, const void *part1, size_t n1, const void *part2, size_t n2);

// The hot path's append of a header and a body of fixed sizes: constant-size copies when the
// record does not wrap, else buffer_append(). False when there is not enough room.
template <size_t N1, size_t N2>
inline bool buffer_append_fixed(ThreadBuffer *b, const void *part1, const void *part2) {
  uint64_t head = b->head.load(std::memory_order_relaxed);
  if (!room_for(b, head, N1 + N2)) return false;
  size_t start = static_cast<size_t>(head & (b->capacity - 1));
  if (start + N1 + N2 > b->capacity) return buffer_append(b, part1, N1, part2, N2);
  std::memcpy(b->data + start, part1, N1);
  std::memcpy(b->data + start + N1, part2, N2);
  b->head.store(head + N1 + N2, std::memory_order_release);
  return true;
}

// The hot path's append in place: room for N bytes at the head, in one piece, or null when they
// would wrap or do not fit (then the caller appends a copy with buffer_append). The record is
// written there and made visible to the drain by buffer_commit<N>: nothing is copied twice.
template <size_t N>
inline uint8_t *buffer_reserve(ThreadBuffer *b) {
  uint64_t head = b->head.load(std::memory_order_relaxed);
  size_t start = static_cast<size_t>(head & (b->capacity - 1));
  if (start + N > b->capacity || !room_for(b, head, N)) return nullptr;
  return b->data + start;
}
template <size_t N>
inline void buffer_commit(ThreadBuffer *b) {
  b->head.store(b->head.load(std::memory_order_relaxed) + N, std::memory_order_release);
}

// Copies the bytes of `b` up to `head` (a value of b->head read with acquire) to `sink(data, n)`
// (called at most twice, for the wrap-around) and advances tail. Returns the number of bytes.
template <typename Sink>
size_t buffer_drain_to(ThreadBuffer *b, uint64_t head, Sink &&sink) {
  uint64_t tail = b->tail.load(std::memory_order_relaxed);
  size_t n = static_cast<size_t>(head - tail);
  if (n == 0) return 0;
  size_t start = static_cast<size_t>(tail & (b->capacity - 1));
  size_t first = n < b->capacity - start ? n : b->capacity - start;
  sink(b->data + start, first);
  if (first < n) sink(b->data, n - first);
  b->tail.store(head, std::memory_order_release);
  return n;
}

// Bytes [at, at + n) of the ring in one piece, or nullptr where they wrap; the drainer's own
// (between tail and a head it read).
inline uint8_t *ring_span(ThreadBuffer *b, uint64_t at, size_t n) {
  size_t start = static_cast<size_t>(at & (b->capacity - 1));
  return start + n <= b->capacity ? b->data + start : nullptr;
}
// The same bytes, wrapping.
inline void ring_read(const ThreadBuffer *b, uint64_t at, void *dst, size_t n) {
  size_t start = static_cast<size_t>(at & (b->capacity - 1));
  size_t first = n < b->capacity - start ? n : b->capacity - start;
  std::memcpy(dst, b->data + start, first);  // NOLINT(clang-analyzer-core.NonNullParamChecker): a ring has data
  if (first < n) std::memcpy(static_cast<uint8_t *>(dst) + first, b->data, n - first);
}
inline void ring_write(ThreadBuffer *b, uint64_t at, const void *src, size_t n) {
  size_t start = static_cast<size_t>(at & (b->capacity - 1));
  size_t first = n < b->capacity - start ? n : b->capacity - start;
  std::memcpy(b->data + start, src, first);
  if (first < n) std::memcpy(b->data, static_cast<const uint8_t *>(src) + first, n - first);
}

// Copies every complete byte currently in `b` to `sink(data, n)` (called at most twice, for the
// wrap-around) and advances tail. Returns the number of bytes drained.
template <typename Sink>
size_t buffer_drain(ThreadBuffer *b, Sink &&sink) {
  return buffer_drain_to(b, b->head.load(std::memory_order_acquire), sink);
}

// The list of every thread's buffer. Registration takes a lock (once per thread); walking does not
// (the list only grows at the front; orphaned buffers are unlinked only by the writer thread).
struct BufferCounters {
  uint64_t events = 0;
  uint64_t allocations = 0;
  uint64_t frees = 0;
};

class BufferRegistry {
 public:
  ThreadBuffer *create(uint32_t capacity_bytes, uint32_t tid);
  ThreadBuffer *first() const { return head_.load(std::memory_order_acquire); }
  // Writer thread only: unlinks and frees orphaned buffers that are empty.
  void reap();
  // Every buffer's counters, including those of buffers already reaped. Any thread.
  BufferCounters totals() const;
  // The same without the lock, for the holder of the drain claim (reap runs only under it);
  // async-signal-safe.
  BufferCounters totals_claimed() const;

 private:
  std::atomic<ThreadBuffer *> head_{nullptr};
  BufferCounters reaped_;  // guarded by lock_
  // Serializes create and reap. The registry's own, not a global: a fork child starts a fresh
  // recorder state and with it a fresh lock, whichever parent thread held the old one at the fork.
  mutable std::mutex lock_;
};

}  // namespace gpuleak::core
