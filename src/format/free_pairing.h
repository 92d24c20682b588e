// Frees paired with their allocations: the one place a capture's frees get a size (format 1.9).
//
// The recorder writes every allocation and free as its hook saw it (heaptrack's, memray's and
// heapprofd's way): a free carries its address, the address space its hook knew
// (MemoryRecord::space), its kind as the hook named it, no size and device -1. A reader that
// replays the records in effective-time order passes each one through FreePairing::apply, which
// gives a free its allocation's size, kind and device, or flags it kFlagUnknownPointer: after that
// a record reads as a 1.7 record did (whose frees the recorder paired in the process), so every
// replay downstream is the same for old and new captures. Records with no space (before 1.9,
// events with no address of their own, the unfolded aggregates) pass through untouched, except a
// context reset, which ends its device's allocations.
//
// Effective-time order is enough for address re-use across threads: a free's time is read when its
// hook is entered, before the real free, so the driver's next hand-out of the address (whose time
// is read when that call returns) always sorts after it (capture-format.md, `ts_ns`).
#pragma once

#include <cstdint>
#include <vector>

#include "format/address_space.h"
#include "format/capture_format.h"

namespace gpuleak::format {

// What a record does to the set of live addresses.
enum class PairRole : uint8_t {
  kNone,
  kLives,         // an allocation, reservation or pool (or an imported range) begins at its address
  kEnds,          // a free, a range or pool given back: it ends what lives at its address
  kResetsDevice,  // a context reset: the device's device memory is gone
};

inline PairRole pair_role(const MemoryRecord &r) {
  const auto op = static_cast<Op>(r.op);
  if (op == Op::kContextReset) return r.result == 0 ? PairRole::kResetsDevice : PairRole::kNone;
  if (r.space == 0) return PairRole::kNone;
  switch (op) {
    case Op::kAlloc:
      // A graph reservation is not the program's memory (its free, if any, finds nothing).
      if (r.result != 0) return PairRole::kNone;
      return !(r.flags & kFlagGraphReservation) || r.kind == static_cast<uint8_t>(Kind::kImported) ? PairRole::kLives
                                                                                                   : PairRole::kNone;
    case Op::kReserve:
    case Op::kPoolCreate:
      return r.result == 0 ? PairRole::kLives : PairRole::kNone;
    case Op::kFree:
    case Op::kReleaseVa:
    case Op::kPoolDestroy:
      return PairRole::kEnds;
    default:
      return PairRole::kNone;
  }
}

// The key of an address in its space (a record's `space` is the AddressSpace plus one).
inline uint64_t pairing_key(uint8_t space, uint64_t address) { return address ^ (static_cast<uint64_t>(space) << 58); }

// Device memory the program owns: what a context reset ends (the recorder's live bytes count it).
inline bool counts_on_device(uint8_t kind) {
  switch (static_cast<Kind>(kind)) {
    case Kind::kDevice:
    case Kind::kAsync:
    case Kind::kVmm:
    case Kind::kManaged:
    case Kind::kPitched:
    case Kind::kArray:
    case Kind::kMipmappedArray:
      return true;
    default:
      return false;
  }
}

// The live addresses of one replay, by pairing_key: open addressing with linear probing and
// backward-shift deletion (no tombstones, no allocation per pair).
class PairingTable {
 public:
  struct Entry {
    uint64_t size = 0;
    uint64_t birth_ns = 0;
    int16_t device = -1;
    uint8_t kind = 0;
    uint8_t late_frees = 0;  // (the recorder's tally only: frees still to come of displaced allocations)
  };
  // `capacity` slots to start with (a power of two).
  explicit PairingTable(size_t capacity = 1024);
  Entry *find(uint64_t key);
  // The same, and where it is: erase_slot(*slot) takes it out without looking for it again.
  Entry *find(uint64_t key, size_t *slot);
  void erase_slot(size_t slot);
  // The entry for `key`, made empty if new; null when the table is full and may not grow.
  Entry *insert(uint64_t key, bool may_grow, bool *fresh);
  void erase(uint64_t key);
  // A context reset: every entry of device memory of `device` goes (no allocation).
  void erase_device(int16_t device);
  size_t size() const { return used_; }
  // Room for `more` inserts without growing (grows now, if it must): a signal handler's drain
  // cannot allocate.
  void reserve(size_t more);

 private:
  struct Slot {
    uint64_t key = 0;
    Entry entry;
    bool used = false;
  };
  size_t home(uint64_t key) const;
  void grow();
  void erase_at(size_t i);
  std::vector<Slot> slots_;
  size_t used_ = 0;
};

// The reader's pairing, over one replay in effective-time order. Applying it twice to the same
// records (a capture written back out) changes nothing.
class FreePairing {
 public:
  void apply(MemoryRecord &r);

 private:
  PairingTable live_;
};

// Records held in memory (file order): paired in place, in effective-time order (the stable sort
// by ts_ns). Does nothing when no record says its space (a capture before 1.9).
void pair_frees_in_place(std::vector<MemoryRecord> &records);

}  // namespace gpuleak::format
