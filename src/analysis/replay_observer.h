// What the ledger's replay (ledger.cpp) hands the stages that watch it: each live allocation's
// working state, the live set it is found in, and the Observer interface the verdicts, the OOM
// records, the pool's blocks, the lives and the advice rules implement. Private to src/analysis.
#pragma once

#include <cstdint>

#include "analysis/flat_map.h"
#include "analysis/records.h"
#include "format/capture_format.h"

namespace gpuleak::analysis::detail {

// The ledger's working state for one allocation while it is live: an entry of its live set,
// erased at the release. Not a second record of a life: the one kept for readers is
// AllocationLife (lives.h), written from these by LifeRecorder (life_recorder.h).
struct LiveAllocation {
  uint64_t size = 0;
  uint32_t birth = 0;  // event position
  uint32_t site = 0;
  uint32_t birth_ns = 0;  // duration of the allocating call
  uint32_t ordinal = 0;   // the how-manieth allocation of owned memory (from 0)
  // Primary iteration ends (Primary::end_pos) at or before its birth: which iteration it was born
  // in, without a search over the ends on every death (LoopView::iteration_born).
  uint32_t ends_at_birth = 0;
  uint16_t slot = 0;  // device slot (Ledger::devices)
  uint16_t api = 0;   // api_label of the allocating call
  Space space = Space::kDevicePtr;
  bool async = false;   // the allocating call was stream-ordered
  bool mapped = false;  // VMM: mapped once already (the first mapping's site owns it)
};

// Where a live allocation is found again: host pointers are process-wide, the rest per device.
struct LiveKey {
  uint64_t address;
  int32_t device;
  Space space;
  bool operator==(const LiveKey &o) const { return address == o.address && device == o.device && space == o.space; }
};
struct LiveKeyHash {
  uint64_t operator()(const LiveKey &k) const {
    uint64_t where = static_cast<uint64_t>(static_cast<uint32_t>(k.device) + 1) << 8 | static_cast<uint8_t>(k.space);
    return mix64(k.address ^ (where << 44));
  }
};
using LiveSet = FlatMap<LiveKey, LiveAllocation, LiveKeyHash>;

// Told about every change as the replay makes it. Positions only grow; at one position a
// release comes before a birth.
class Observer {
 public:
  virtual ~Observer() = default;
  // Before event k changes anything (k == size: at the end, after the last event). The default
  // does nothing and says so: the replay stops calling it (two virtual calls per observer and
  // event, most of them to these, were a tenth of a replay's own work).
  virtual void before(uint32_t k, const format::MemoryRecord *r, const LiveSet &live) {
    (void)k, (void)r, (void)live;
    default_before_ = true;
  }
  virtual void born(uint32_t k, const format::MemoryRecord &r, const LiveAllocation &a) { (void)k, (void)r, (void)a; }
  // `r` is the record that ended it: a free, an allocation reusing the address, a context reset.
  virtual void died(uint32_t k, const format::MemoryRecord &r, const LiveAllocation &a) { (void)k, (void)r, (void)a; }
  // A VMM allocation's first mapping at event k moved it from site `old` to a.site: what an
  // observer noted about it while it lived (a snapshot of the live set) must follow.
  virtual void remapped(uint32_t k, uint32_t old, const LiveAllocation &a) { (void)k, (void)old, (void)a; }
  // After event k was applied. The default, like before()'s, is called once.
  virtual void after(uint32_t k, const LiveSet &live) {
    (void)k, (void)live;
    default_after_ = true;
  }
  // After the last event: what is still live.
  virtual void finish(const LiveSet &live) { (void)live; }
  // Whether before() or after() is the default that does nothing (known once it was called).
  bool default_before() const { return default_before_; }
  bool default_after() const { return default_after_; }

 protected:
  // Called from an overriding before() that knows it has nothing to do at any event of this
  // replay (an OOM observer of a capture without OOMs): the replay stops calling it, as it does
  // the default's.
  void nothing_before() { default_before_ = true; }

 private:
  bool default_before_ = false, default_after_ = false;
};

}  // namespace gpuleak::analysis::detail
