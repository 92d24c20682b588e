#include "core/thread_buffer.h"

#include <cstdlib>
#include <cstring>
#include <mutex>

namespace gpuleak::core {

namespace {
void copy_in(ThreadBuffer *b, uint64_t at, const void *src, size_t n) {
  size_t start = static_cast<size_t>(at & (b->capacity - 1));
  size_t first = n < b->capacity - start ? n : b->capacity - start;
  std::memcpy(b->data + start, src, first);
  if (first < n) std::memcpy(b->data, static_cast<const uint8_t *>(src) + first, n - first);
}
}  // namespace

bool buffer_append(ThreadBuffer *b, const void *part1, size_t n1, const void *part2, size_t n2) {
  uint64_t head = b->head.load(std::memory_order_relaxed);
  if (!room_for(b, head, n1 + n2)) return false;
  copy_in(b, head, part1, n1);
  if (n2) copy_in(b, head + n1, part2, n2);
  b->head.store(head + n1 + n2, std::memory_order_release);
  return true;
}

ThreadBuffer *BufferRegistry::create(uint32_t capacity_bytes, uint32_t tid) {
  uint32_t cap = 4096;
  while (cap < capacity_bytes) cap <<= 1;
  auto *b = new ThreadBuffer;
  b->data = static_cast<uint8_t *>(std::malloc(cap));
  if (!b->data) {
    delete b;
    return nullptr;
  }
  b->capacity = cap;
  b->tid = tid;
  std::lock_guard<std::mutex> lock(lock_);
  b->next = head_.load(std::memory_order_relaxed);
  head_.store(b, std::memory_order_release);
  return b;
}

void BufferRegistry::reap() {
  std::lock_guard<std::mutex> lock(lock_);
  // Only unlink after the head: new buffers are pushed at the head by other threads, so the head
  // itself stays (at most one orphan lingers until it is no longer first).
  ThreadBuffer *prev = head_.load(std::memory_order_acquire);
  if (!prev) return;
  for (ThreadBuffer *b = prev->next; b;) {
    ThreadBuffer *next = b->next;
    if (b->orphaned.load(std::memory_order_acquire) &&
        b->head.load(std::memory_order_acquire) == b->tail.load(std::memory_order_relaxed)) {
      prev->next = next;
      reaped_.events += b->events.load(std::memory_order_relaxed);
      reaped_.allocations += b->allocations.load(std::memory_order_relaxed);
      reaped_.frees += b->frees.load(std::memory_order_relaxed);
      std::free(b->data);
      delete b;
    } else {
      prev = b;
    }
    b = next;
  }
}

BufferCounters BufferRegistry::totals() const {
  std::lock_guard<std::mutex> lock(lock_);
  return totals_claimed();
}

BufferCounters BufferRegistry::totals_claimed() const {
  BufferCounters t = reaped_;
  for (ThreadBuffer *b = head_.load(std::memory_order_acquire); b; b = b->next) {
    t.events += b->events.load(std::memory_order_relaxed);
    t.allocations += b->allocations.load(std::memory_order_relaxed);
    t.frees += b->frees.load(std::memory_order_relaxed);
  }
  return t;
}

}  // namespace gpuleak::core
