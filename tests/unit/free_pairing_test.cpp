// The reader's pairing of raw frees (format 1.9, format/free_pairing.h): the one place a capture's
// frees get their allocation's size, kind and device.
#include "format/free_pairing.h"

#include <gtest/gtest.h>

#include <vector>

namespace gpuleak::format {
namespace {

constexpr uint8_t kDevicePtr = static_cast<uint8_t>(AddressSpace::kDevicePtr) + 1;
constexpr uint8_t kVmm = static_cast<uint8_t>(AddressSpace::kVmm) + 1;

MemoryRecord alloc(uint64_t ts, uint64_t address, uint64_t size, int16_t device = 0, Kind kind = Kind::kDevice,
                   uint8_t space = kDevicePtr) {
  MemoryRecord r{};
  r.ts_ns = ts;
  r.address = address;
  r.size = size;
  r.op = static_cast<uint8_t>(Op::kAlloc);
  r.kind = static_cast<uint8_t>(kind);
  r.device = device;
  r.space = space;
  return r;
}

// As a hook writes it: no size, device -1, the hook's own kind.
MemoryRecord free_of(uint64_t ts, uint64_t address, Kind kind = Kind::kDevice, uint8_t space = kDevicePtr) {
  MemoryRecord r{};
  r.ts_ns = ts;
  r.address = address;
  r.op = static_cast<uint8_t>(Op::kFree);
  r.kind = static_cast<uint8_t>(kind);
  r.device = -1;
  r.space = space;
  return r;
}

TEST(FreePairing, AFreeGetsItsAllocationsSizeKindAndDevice) {
  FreePairing p;
  MemoryRecord a = alloc(10, 0x1000, 4096, 3, Kind::kManaged);
  p.apply(a);
  MemoryRecord f = free_of(20, 0x1000);  // cuMemFree names kind device
  p.apply(f);
  EXPECT_EQ(f.size, 4096u);
  EXPECT_EQ(f.kind, static_cast<uint8_t>(Kind::kManaged));
  EXPECT_EQ(f.device, 3);
  EXPECT_FALSE(f.flags & kFlagUnknownPointer);
  MemoryRecord again = free_of(30, 0x1000);  // a double free finds nothing
  p.apply(again);
  EXPECT_TRUE(again.flags & kFlagUnknownPointer);
  EXPECT_EQ(again.size, 0u);
  EXPECT_EQ(again.device, -1);
}

TEST(FreePairing, AddressSpacesAreKeptApart) {
  FreePairing p;
  MemoryRecord ptr = alloc(10, 0x42, 100);
  MemoryRecord handle = alloc(11, 0x42, 2 << 20, 0, Kind::kVmm, kVmm);
  p.apply(ptr);
  p.apply(handle);
  MemoryRecord release = free_of(20, 0x42, Kind::kVmm, kVmm);
  p.apply(release);
  EXPECT_EQ(release.size, 2u << 20);
  MemoryRecord f = free_of(21, 0x42);
  p.apply(f);
  EXPECT_EQ(f.size, 100u);
}

TEST(FreePairing, AFailedFreeLeavesTheAllocationLive) {
  FreePairing p;
  MemoryRecord a = alloc(10, 0x1000, 64);
  p.apply(a);
  MemoryRecord failed = free_of(20, 0x1000);
  failed.result = 1;
  p.apply(failed);
  EXPECT_EQ(failed.size, 64u);  // it still says what it was
  MemoryRecord f = free_of(30, 0x1000);
  p.apply(f);
  EXPECT_EQ(f.size, 64u);
}

TEST(FreePairing, AnAddressReusedByAnotherThreadPairsInTimeOrder) {
  // Thread 1 frees 0x1000 (its time read before the real free); thread 2 gets the address at once
  // and its record reaches the file first. In the file's order the free would take the new
  // allocation; in time order (every replay's) it takes the old one.
  std::vector<MemoryRecord> file = {alloc(10, 0x1000, 100), alloc(30, 0x1000, 200), free_of(20, 0x1000)};
  file[1].tid = 2;
  pair_frees_in_place(file);
  EXPECT_EQ(file[2].size, 100u);
  EXPECT_FALSE(file[2].flags & kFlagUnknownPointer);
}

TEST(FreePairing, AContextResetEndsItsDevicesMemory) {
  FreePairing p;
  MemoryRecord a = alloc(10, 0x1000, 64, 1);
  MemoryRecord b = alloc(11, 0x2000, 64, 0);
  p.apply(a);
  p.apply(b);
  MemoryRecord reset{};
  reset.ts_ns = 12;
  reset.op = static_cast<uint8_t>(Op::kContextReset);
  reset.device = 1;
  p.apply(reset);
  MemoryRecord fa = free_of(13, 0x1000), fb = free_of(14, 0x2000);
  p.apply(fa);
  p.apply(fb);
  EXPECT_TRUE(fa.flags & kFlagUnknownPointer);
  EXPECT_EQ(fb.size, 64u);
}

TEST(FreePairing, AGraphReservationIsNeverLive) {
  FreePairing p;
  MemoryRecord a = alloc(10, 0x1000, 64);
  a.flags = kFlagGraphReservation;
  p.apply(a);
  MemoryRecord f = free_of(20, 0x1000);
  f.flags = kFlagGraphReservation;
  p.apply(f);
  EXPECT_TRUE(f.flags & kFlagUnknownPointer);
  EXPECT_TRUE(f.flags & kFlagGraphReservation);
}

TEST(FreePairing, RecordsBefore18AreLeftAsTheyAre) {
  // A 1.7 free came paired (no space): nothing is looked up or flagged.
  std::vector<MemoryRecord> file = {alloc(10, 0x1000, 100, 0, Kind::kDevice, 0), free_of(20, 0x1000, Kind::kDevice, 0)};
  file[1].size = 100;
  file[1].device = 0;
  const std::vector<MemoryRecord> before = file;
  pair_frees_in_place(file);
  EXPECT_EQ(file[1].size, 100u);
  EXPECT_EQ(file[1].flags, before[1].flags);
}

TEST(FreePairing, PairingTwiceChangesNothing) {
  std::vector<MemoryRecord> file = {alloc(10, 0x1000, 100, 2), free_of(20, 0x1000), free_of(30, 0x9000)};
  pair_frees_in_place(file);
  const std::vector<MemoryRecord> once = file;
  pair_frees_in_place(file);
  for (size_t i = 0; i < file.size(); ++i) {
    EXPECT_EQ(file[i].size, once[i].size) << i;
    EXPECT_EQ(file[i].device, once[i].device) << i;
    EXPECT_EQ(file[i].flags, once[i].flags) << i;
  }
}

TEST(PairingTable, ManyInsertsAndErasesKeepEveryKeyFindable) {
  PairingTable t(16);
  for (uint64_t k = 1; k <= 5000; ++k) {
    bool fresh;
    t.insert(k * 4096, true, &fresh)->size = k;
    ASSERT_TRUE(fresh);
  }
  for (uint64_t k = 1; k <= 5000; k += 2) t.erase(k * 4096);
  EXPECT_EQ(t.size(), 2500u);
  for (uint64_t k = 1; k <= 5000; ++k) {
    PairingTable::Entry *e = t.find(k * 4096);
    if (k % 2) {
      EXPECT_EQ(e, nullptr) << k;
    } else {
      ASSERT_NE(e, nullptr) << k;
      EXPECT_EQ(e->size, k);
    }
  }
}

TEST(PairingTable, AFullTableThatMayNotGrowRefuses) {
  PairingTable t(16);
  bool fresh;
  size_t made = 0;
  for (uint64_t k = 1; k <= 100; ++k)
    if (t.insert(k, false, &fresh)) ++made;
  EXPECT_LT(made, 16u);
  EXPECT_GE(made, 8u);
  t.reserve(100);
  EXPECT_NE(t.insert(1000, false, &fresh), nullptr);
}

}  // namespace
}  // namespace gpuleak::format
