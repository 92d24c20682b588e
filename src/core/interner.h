// Interning of stacks and strings: each distinct one gets a small id and is written to the capture
// once, the first time it is seen. Lookups by content hash under a sharded lock (uncontended in
// the common case: ~20 ns).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace gpuleak::core {

class StackInterner {
 public:
  // Returns the id of this stack (ids start at 1) and sets *is_new when it was not known before.
  uint32_t intern(const uint64_t *frames, unsigned depth, bool *is_new);
  uint64_t count() const { return next_.load(std::memory_order_relaxed) - 1; }

 private:
  uint32_t lookup_or_add(uint64_t hash, const uint64_t *frames, unsigned depth, bool *is_new);
  static constexpr int kShards = 32;
  struct Shard {
    std::mutex lock;
    std::unordered_multimap<uint64_t, std::pair<uint32_t, std::vector<uint64_t>>> map;
  };
  std::array<Shard, kShards> shards_;
  std::atomic<uint32_t> next_{1};
};

class StringInterner {
 public:
  uint32_t intern(const char *text, size_t length, bool *is_new);

 private:
  std::mutex lock_;
  std::unordered_map<std::string, uint32_t> map_;
  uint32_t next_ = 1;
};

uint64_t hash_frames(const uint64_t *frames, unsigned depth);

}  // namespace gpuleak::core
