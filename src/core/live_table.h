// What the program holds right now, by address: the recorder's own ledger. It gives a free its
// size, kind and device, and the live set by call site at any moment. Since issue #15 it is kept
// by whoever drains the threads' buffers, from the records, in time order (drain_settle.cpp), never
// by a hook; the hot path only appends. It counts no bytes: live and peak bytes per device are
// tallied from the same records (device_tally.h). Sharded, each shard under its own lock, so that
// a reader (by_site) may walk it while the drain holder updates it.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

#include "core/spin_lock.h"
#include "format/address_space.h"

namespace gpuleak::core {

// The space a hook knows its address is in: a VMM handle may equal a device pointer value.
using Space = format::AddressSpace;

struct LiveEntry {
  uint64_t size = 0;
  uint32_t stack_id = 0;
  uint8_t kind = 0;  // format::Kind
  int16_t device = -1;
  bool counts_on_device = false;  // device memory the program owns (by_site, drop_device)
};

class LiveTable {
 public:
  static constexpr int kMaxDevices = 64;

  // Records a new allocation (replacing a stale entry at the same address, which can only be an
  // allocation whose free we did not see). `may_grow` false (a signal handler: no malloc): false
  // when the shard has no room left, and nothing is recorded.
  bool insert(Space space, uint64_t address, const LiveEntry &e, bool may_grow = true);
  // Removes and returns the entry; false when the address is not live.
  bool take(Space space, uint64_t address, LiveEntry *out);
  // Returns the entry and leaves it (a free that failed); false when the address is not live.
  bool peek(Space space, uint64_t address, LiveEntry *out) const;
  // Drops every entry of a device (context reset).
  void drop_device(int device);

  uint64_t live_count() const;
  // Gives every shard its first slots (64 each, 128 KiB in all) when the capture starts, so that
  // the inserts of a signal-time drain (_exit, fatal signals: `may_grow` false) find room even in
  // shards no ordinary drain has grown yet.
  void reserve();

  // One number for an address in its space (the table's key).
  static uint64_t key_of(Space s, uint64_t address) { return address ^ (static_cast<uint64_t>(s) << 58); }

  // Live bytes and count per call site of one device (-1: all), for the OOM record and summary.
  struct SiteTotal {
    uint32_t stack_id;
    uint64_t bytes;
    uint64_t count;
  };
  std::vector<SiteTotal> by_site(int device) const;

 private:
  static constexpr int kShards = 64;
  // Open addressing with linear probing: no allocation per insert (a node-based map costs a
  // malloc and a free per allocation pair, the largest part of the hook's time).
  struct Slot {
    uint64_t key;
    LiveEntry entry;
    uint8_t state;  // 0 empty, 1 full, 2 erased
  };
  struct alignas(64) Shard {  // one cache line each: threads on different shards never meet
    mutable SpinLock lock;
    std::vector<Slot> slots;      // power-of-two size
    size_t used = 0;              // full + erased
    std::atomic<size_t> full{0};  // written under the lock, read without it
    Slot *find(uint64_t key) const;
    Slot *claim(uint64_t key);  // the slot for `key`, full or free to fill
    void grow();
  };
  Shard &shard(uint64_t k) { return shards_[(k >> 8 ^ k >> 20) % kShards]; }
  const Shard &shard(uint64_t k) const { return shards_[(k >> 8 ^ k >> 20) % kShards]; }

  std::array<Shard, kShards> shards_;
};

}  // namespace gpuleak::core
