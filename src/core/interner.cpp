#include "core/interner.h"

#include <cstring>

#include "core/tls.h"

namespace gpuleak::core {

uint64_t hash_frames(const uint64_t *frames, unsigned depth) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ depth;
  for (unsigned i = 0; i < depth; ++i) {
    h ^= frames[i] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
  }
  return h ^ (h >> 33);
}

uint32_t StackInterner::intern(const uint64_t *frames, unsigned depth, bool *is_new) {
  uint64_t h = hash_frames(frames, depth);
  *is_new = false;
  // Loops allocate from the same site over and over: remember this thread's last stack by its
  // 64-bit hash and skip the shared table (a false match needs a 64-bit hash collision between
  // two consecutive stacks of one thread).
  GPULEAK_TLS uint64_t t_hash = 0;
  GPULEAK_TLS uint32_t t_id = 0;
  GPULEAK_TLS const StackInterner *t_owner = nullptr;
  if (t_owner == this && t_hash == h) return t_id;
  uint32_t id = lookup_or_add(h, frames, depth, is_new);
  t_owner = this, t_hash = h, t_id = id;
  return id;
}

uint32_t StackInterner::lookup_or_add(uint64_t h, const uint64_t *frames, unsigned depth, bool *is_new) {
  Shard &s = shards_[h % kShards];
  std::lock_guard<std::mutex> lock(s.lock);
  auto range = s.map.equal_range(h);
  for (auto it = range.first; it != range.second; ++it) {
    const auto &[id, known] = it->second;
    if (known.size() == depth && std::memcmp(known.data(), frames, depth * sizeof(uint64_t)) == 0) {
      return id;
    }
  }
  uint32_t id = next_.fetch_add(1, std::memory_order_relaxed);
  s.map.emplace(h, std::make_pair(id, std::vector<uint64_t>(frames, frames + depth)));
  *is_new = true;
  return id;
}

uint32_t StringInterner::intern(const char *text, size_t length, bool *is_new) {
  std::lock_guard<std::mutex> lock(lock_);
  auto [it, inserted] = map_.try_emplace(std::string(text, length), next_);
  *is_new = inserted;
  if (inserted) ++next_;
  return it->second;
}

}  // namespace gpuleak::core
