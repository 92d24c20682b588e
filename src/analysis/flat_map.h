// An open-addressing hash map (linear probing, backward-shift deletion) for the analysis' hot
// tables: what is live by address, call sites by stack pair. std::unordered_map allocates a node
// per entry, which dominated replaying 10 million events; this keeps entries in one array.
// Keys must be cheap to copy and compare; Hash must spread aligned addresses (low bits zero).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace gpuleak::analysis::detail {

// splitmix64's finalizer: every input bit reaches every output bit.
inline uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

template <typename K, typename V, typename Hash>
class FlatMap {
 public:
  FlatMap() { reset(16); }

  size_t size() const { return size_; }

  V *find(const K &key) {
    for (size_t i = home(key);; i = (i + 1) & mask_) {
      Slot &s = slots_[i];
      if (!s.used) return nullptr;
      if (s.key == key) return &s.value;
    }
  }

  // The value for key, inserting `value` first if key is absent; second: whether it was.
  std::pair<V *, bool> try_emplace(const K &key, const V &value) {
    if ((size_ + 1) * 4 > slots_.size() * 3) grow();
    for (size_t i = home(key);; i = (i + 1) & mask_) {
      Slot &s = slots_[i];
      if (!s.used) {
        s.used = true;
        s.key = key;
        s.value = value;
        ++size_;
        return {&s.value, true};
      }
      if (s.key == key) return {&s.value, false};
    }
  }

  bool erase(const K &key) {
    size_t i = home(key);
    for (;; i = (i + 1) & mask_) {
      if (!slots_[i].used) return false;
      if (slots_[i].key == key) break;
    }
    // Backward shift: pull later entries of the probe run into the hole, so that no tombstones
    // slow later lookups down.
    for (size_t j = (i + 1) & mask_;; j = (j + 1) & mask_) {
      if (!slots_[j].used) break;
      size_t k = home(slots_[j].key);
      bool movable = i <= j ? (k <= i || k > j) : (k <= i && k > j);
      if (movable) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i].used = false;
    --size_;
    return true;
  }

  // Calls f(key, value) for every entry, in no particular order. f must not modify the map.
  template <typename F>
  void for_each(F f) const {
    for (const Slot &s : slots_)
      if (s.used) f(s.key, s.value);
  }

 private:
  struct Slot {
    K key{};
    V value{};
    bool used = false;
  };

  size_t home(const K &key) const { return static_cast<size_t>(Hash{}(key)) & mask_; }

  void reset(size_t capacity) {
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    size_ = 0;
  }

  void grow() {
    std::vector<Slot> old = std::move(slots_);
    reset(old.size() * 2);
    for (const Slot &s : old)
      if (s.used) try_emplace(s.key, s.value);
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace gpuleak::analysis::detail
