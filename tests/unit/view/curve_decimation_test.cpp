// The one decimation rule (output/curve_decimation.h) that the trace's counters and the viewer's
// timeline both use: what it promises to keep.
#include "output/curve_decimation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace gpuleak::output {
namespace {

struct Curve {
  std::vector<int64_t> t;
  std::vector<uint64_t> bytes;
};

Curve random_walk(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  Curve c;
  int64_t t = 0;
  uint64_t live = 1 << 20;
  for (size_t i = 0; i < n; ++i) {
    t += 1 + static_cast<int64_t>(rng() % 1000);
    live += rng() % 4096;
    live -= std::min<uint64_t>(live, rng() % 4096);
    c.t.push_back(t);
    c.bytes.push_back(live);
  }
  return c;
}

std::vector<uint32_t> thin(const Curve &c, size_t max_points) {
  const uint64_t width = bucket_width_for(c.t.front(), c.t.back(), 1, max_points);
  return decimate_curve(c.t.data(), c.bytes.data(), c.t.size(), c.t.front(), width);
}

TEST(CurveDecimation, KeepsThePeakTheTroughTheFirstAndTheLastPoint) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const Curve c = random_walk(100'000, seed);
    const std::vector<uint32_t> kept = thin(c, 1000);
    ASSERT_LE(kept.size(), 1000u);
    ASSERT_TRUE(std::is_sorted(kept.begin(), kept.end()));
    EXPECT_EQ(std::adjacent_find(kept.begin(), kept.end()), kept.end());
    const size_t peak = std::max_element(c.bytes.begin(), c.bytes.end()) - c.bytes.begin();  // the first
    const size_t trough = std::min_element(c.bytes.begin(), c.bytes.end()) - c.bytes.begin();
    EXPECT_TRUE(std::binary_search(kept.begin(), kept.end(), peak)) << seed;
    EXPECT_TRUE(std::binary_search(kept.begin(), kept.end(), trough)) << seed;
    EXPECT_EQ(kept.front(), 0u);
    EXPECT_EQ(kept.back(), c.t.size() - 1);
  }
}

TEST(CurveDecimation, ANarrowSpikeSurvivesAtItsOwnTime) {
  // A one-event spike (an OOM-sized temporary) among a million flat points.
  Curve c;
  for (int64_t i = 0; i < 1'000'000; ++i) {
    c.t.push_back(i * 10);
    c.bytes.push_back(i == 777'777 ? (40ull << 30) : (1ull << 30));
  }
  const std::vector<uint32_t> kept = thin(c, 500);
  ASSERT_LE(kept.size(), 500u);
  EXPECT_TRUE(std::binary_search(kept.begin(), kept.end(), 777'777u));
}

TEST(CurveDecimation, EachBucketKeepsItsFirstMinimumItsFirstMaximumAndItsLastPoint) {
  const Curve c = random_walk(50'000, 7);
  const int64_t width = 10'000;
  const std::vector<uint32_t> kept = decimate_curve(c.t.data(), c.bytes.data(), c.t.size(), 0, width);
  std::vector<uint32_t> expected = {0};
  for (size_t first = 0; first < c.t.size();) {
    size_t end = first;
    while (end < c.t.size() && c.t[end] / width == c.t[first] / width) ++end;
    const auto lo = std::min_element(c.bytes.begin() + first, c.bytes.begin() + end) - c.bytes.begin();
    const auto hi = std::max_element(c.bytes.begin() + first, c.bytes.begin() + end) - c.bytes.begin();
    for (size_t i : {static_cast<size_t>(lo), static_cast<size_t>(hi), end - 1}) expected.push_back(i);
    first = end;
  }
  std::sort(expected.begin(), expected.end());
  expected.erase(std::unique(expected.begin(), expected.end()), expected.end());
  EXPECT_EQ(kept, expected);
}

TEST(CurveDecimation, ACurveWithinOneBucketPerPointComesBackWhole) {
  const Curve c = random_walk(300, 3);
  const std::vector<uint32_t> kept = decimate_curve(c.t.data(), c.bytes.data(), c.t.size(), 0, 1);
  EXPECT_EQ(kept.size(), c.t.size());
}

TEST(CurveDecimation, TheBucketWidthKeepsSeveralCurvesUnderTheirBudget) {
  for (size_t curves : {1, 2, 5}) {
    for (size_t budget : {4, 10, 101, 4000}) {
      std::vector<Curve> all;
      for (size_t k = 0; k < curves; ++k) all.push_back(random_walk(20'000, static_cast<uint32_t>(k + 11)));
      int64_t first = INT64_MAX, last = INT64_MIN;
      for (const Curve &c : all) first = std::min(first, c.t.front()), last = std::max(last, c.t.back());
      const uint64_t width = bucket_width_for(first, last, curves, budget);
      size_t points = 0;
      for (const Curve &c : all) points += decimate_curve(c.t.data(), c.bytes.data(), c.t.size(), first, width).size();
      EXPECT_LE(points, std::max(budget, 4 * curves)) << curves << " curves, budget " << budget;
    }
  }
}

TEST(CurveDecimation, EmptyAndSinglePointCurves) {
  EXPECT_TRUE(decimate_curve(nullptr, nullptr, 0, 0, 10).empty());
  const int64_t t = -5;
  const uint64_t b = 7;
  EXPECT_EQ(decimate_curve(&t, &b, 1, 0, 0), std::vector<uint32_t>{0});
}

}  // namespace
}  // namespace gpuleak::output
