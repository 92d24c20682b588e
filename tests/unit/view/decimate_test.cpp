#include "output/view/decimate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

namespace gpuleak::output::view {
namespace {

Series random_walk(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  Series s;
  uint64_t t = 0, live = 1 << 20;
  for (size_t i = 0; i < n; ++i) {
    t += 1 + rng() % 1000;
    live += rng() % 4096;
    live -= std::min<uint64_t>(live, rng() % 4096);
    s.t_ns.push_back(t);
    s.bytes.push_back(live);
  }
  return s;
}

TEST(Decimate, ShortSeriesComeBackUnchanged) {
  Series s = random_walk(100, 1);
  Series d = decimate_min_max(s, 100);
  EXPECT_EQ(d.t_ns, s.t_ns);
  EXPECT_EQ(d.bytes, s.bytes);
}

TEST(Decimate, KeepsTheMaximumTheMinimumAndTheEnds) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    Series s = random_walk(100'000, seed);
    Series d = decimate_min_max(s, 1000);
    ASSERT_LE(d.size(), 1000u);
    EXPECT_EQ(*std::max_element(d.bytes.begin(), d.bytes.end()), *std::max_element(s.bytes.begin(), s.bytes.end()));
    EXPECT_EQ(*std::min_element(d.bytes.begin(), d.bytes.end()), *std::min_element(s.bytes.begin(), s.bytes.end()));
    EXPECT_EQ(d.t_ns.front(), s.t_ns.front());
    EXPECT_EQ(d.t_ns.back(), s.t_ns.back());
    EXPECT_EQ(d.bytes.back(), s.bytes.back());
    EXPECT_TRUE(std::is_sorted(d.t_ns.begin(), d.t_ns.end()));
  }
}

TEST(Decimate, ANarrowSpikeSurvives) {
  // A one-event spike (an OOM-sized temporary) among a million flat points.
  Series s;
  for (uint64_t i = 0; i < 1'000'000; ++i) {
    s.t_ns.push_back(i * 10);
    s.bytes.push_back(i == 777'777 ? (40ull << 30) : (1ull << 30));
  }
  Series d = decimate_min_max(s, 500);
  ASSERT_LE(d.size(), 500u);
  auto it = std::find(d.bytes.begin(), d.bytes.end(), 40ull << 30);
  ASSERT_NE(it, d.bytes.end());
  EXPECT_EQ(d.t_ns[it - d.bytes.begin()], 7'777'770u);
}

TEST(Decimate, EveryPointIsAnInputPointAndEachBucketKeepsItsMax) {
  Series s = random_walk(50'000, 7);
  const size_t max_points = 202;  // 100 buckets
  Series d = decimate_min_max(s, max_points);
  std::set<std::pair<uint64_t, uint64_t>> in;
  for (size_t i = 0; i < s.size(); ++i) in.insert({s.t_ns[i], s.bytes[i]});
  for (size_t i = 0; i < d.size(); ++i) EXPECT_TRUE(in.count({d.t_ns[i], d.bytes[i]}));
  // The maximum of every bucket's time range is present.
  const uint64_t t0 = s.t_ns.front(), span = s.t_ns.back() - t0;
  for (size_t b = 0; b < 100; ++b) {
    uint64_t lo = t0 + span * b / 100, hi = t0 + span * (b + 1) / 100;
    uint64_t best = 0;
    for (size_t i = 1; i + 1 < s.size(); ++i)
      if (s.t_ns[i] >= lo && s.t_ns[i] < hi) best = std::max(best, s.bytes[i]);
    if (best == 0) continue;
    bool found = false;
    for (size_t i = 0; i < d.size(); ++i) found |= d.t_ns[i] >= lo && d.t_ns[i] < hi && d.bytes[i] == best;
    EXPECT_TRUE(found) << "bucket " << b;
  }
}

}  // namespace
}  // namespace gpuleak::output::view
