#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "core/live_table.h"

namespace gpuleak::core {
namespace {

LiveEntry device(uint64_t size, int dev = 0, uint32_t stack = 1) {
  LiveEntry e;
  e.size = size;
  e.device = static_cast<int16_t>(dev);
  e.stack_id = stack;
  e.counts_on_device = true;
  return e;
}

TEST(LiveTable, TakeReturnsTheEntryOnce) {
  LiveTable t;
  t.insert(Space::kDevicePtr, 0x1000, device(100));
  t.insert(Space::kDevicePtr, 0x2000, device(50, 1));
  EXPECT_EQ(t.live_count(), 2u);
  LiveEntry e;
  ASSERT_TRUE(t.take(Space::kDevicePtr, 0x1000, &e));
  EXPECT_EQ(e.size, 100u);
  EXPECT_FALSE(t.take(Space::kDevicePtr, 0x1000, &e));
  EXPECT_EQ(t.live_count(), 1u);
}

TEST(LiveTable, AddressSpacesAreKeptApart) {
  LiveTable t;
  t.insert(Space::kDevicePtr, 7, device(1));
  t.insert(Space::kVmm, 7, device(2));
  LiveEntry e;
  ASSERT_TRUE(t.take(Space::kVmm, 7, &e));
  EXPECT_EQ(e.size, 2u);
  ASSERT_TRUE(t.take(Space::kDevicePtr, 7, &e));
  EXPECT_EQ(e.size, 1u);
}

TEST(LiveTable, ContextResetDropsOneDevice) {
  LiveTable t;
  t.insert(Space::kDevicePtr, 1, device(10, 0));
  t.insert(Space::kDevicePtr, 2, device(20, 1));
  t.drop_device(0);
  EXPECT_EQ(t.live_count(), 1u);
  LiveEntry e;
  EXPECT_FALSE(t.take(Space::kDevicePtr, 1, &e));
  ASSERT_TRUE(t.take(Space::kDevicePtr, 2, &e));
  EXPECT_EQ(e.size, 20u);
}

TEST(LiveTable, BySiteGroupsAndSorts) {
  LiveTable t;
  t.insert(Space::kDevicePtr, 1, device(10, 0, 5));
  t.insert(Space::kDevicePtr, 2, device(10, 0, 5));
  t.insert(Space::kDevicePtr, 3, device(100, 0, 9));
  auto sites = t.by_site(0);
  ASSERT_EQ(sites.size(), 2u);
  EXPECT_EQ(sites[0].stack_id, 9u);
  EXPECT_EQ(sites[1].bytes, 20u);
  EXPECT_EQ(sites[1].count, 2u);
}

TEST(LiveTable, ConcurrentThreadsBalance) {
  LiveTable t;
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&t, i] {
      for (uint64_t k = 0; k < 10000; ++k) {
        uint64_t a = (static_cast<uint64_t>(i) << 32) | k;
        t.insert(Space::kDevicePtr, a, device(8));
        LiveEntry e;
        if (k % 2) t.take(Space::kDevicePtr, a, &e);
      }
    });
  for (auto &th : threads) th.join();
  EXPECT_EQ(t.live_count(), 8u * 5000);
  EXPECT_EQ(t.by_site(0).at(0).bytes, 8u * 5000 * 8);
}

}  // namespace
}  // namespace gpuleak::core
