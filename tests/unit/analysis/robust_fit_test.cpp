// The robust fit's shortcuts give exactly what the whole computation gave: robust_slope() is
// fit_robust()'s slope, and mad_of_positions(n) is the median absolute deviation of 0..n-1
// computed by sorting them (the report's numbers must not move by one bit).
#include "analysis/robust_fit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace gpuleak::analysis::detail {
namespace {

double median_sorted(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : v[h - 1] + (v[h] - v[h - 1]) / 2;
}

TEST(RobustFit, MadOfPositionsIsTheSortedMad) {
  for (size_t n = 1; n <= 3000; ++n) {
    std::vector<double> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = static_cast<double>(i);
    const double m = median_sorted(x);
    for (double &v : x) v = std::fabs(v - m);
    ASSERT_EQ(mad_of_positions(n), median_sorted(x)) << n;
  }
}

TEST(RobustFit, SlopeAloneIsTheFitsSlope) {
  std::mt19937_64 rng(7);
  std::vector<double> scratch;
  for (size_t n : {0u, 1u, 2u, 3u, 10u, 511u, 512u, 513u, 2000u}) {
    std::vector<double> y(n);
    for (size_t i = 0; i < n; ++i) y[i] = static_cast<double>(i * 1000 + rng() % 5000);
    const double whole = fit_robust(y.data(), n, &scratch).slope;
    EXPECT_EQ(robust_slope(y.data(), n, &scratch), whole) << n;
  }
}

// The Theil-Sen slope the long way: every pair of the points robust_slope pairs (all of them, or
// kMaxExactFitPoints evenly spaced), sorted, the median.
double slope_the_long_way(const std::vector<double> &y) {
  const size_t n = y.size(), p = std::min(n, kMaxExactFitPoints);
  auto index = [&](size_t k) { return p == n ? k : (k * (n - 1) + (p - 1) / 2) / (p - 1); };
  std::vector<double> slopes;
  for (size_t a = 0; a < p; ++a)
    for (size_t b = a + 1; b < p; ++b)
      slopes.push_back((y[index(b)] - y[index(a)]) / static_cast<double>(index(b) - index(a)));
  return slopes.empty() ? 0 : median_sorted(slopes);
}

// Above a few thousand pairs the median is selected inside a bracket taken from a sample of the
// slopes (robust_fit.cpp): the same double as sorting them all, whatever the series looks like
// (ties everywhere, a few distinct slopes, noise, a trend that turns, a sample that misses).
TEST(RobustFit, SlopeIsTheMedianOfEveryPairsSlope) {
  std::mt19937_64 rng(11);
  std::vector<double> scratch;
  for (size_t n : {129u, 130u, 200u, 511u, 512u, 513u, 4000u, 160000u}) {
    std::vector<std::vector<double>> shapes(8, std::vector<double>(n));
    for (size_t i = 0; i < n; ++i) {
      shapes[0][i] = static_cast<double>(i * 1000 + rng() % 5000);             // trend and noise
      shapes[1][i] = static_cast<double>(rng() % 3);                           // ties: few distinct slopes
      shapes[2][i] = 4096;                                                     // flat: every slope 0
      shapes[3][i] = static_cast<double>(i < n / 2 ? i * 64 : (n - i) * 64);   // up, then down
      shapes[4][i] = static_cast<double>((i % 64) * 4096);                     // sawtooth
      shapes[5][i] = static_cast<double>(i % 2 ? rng() % (1u << 30) : i * 3);  // wild half, calm half
      shapes[6][i] = i < n / 3 ? 0.0 : static_cast<double>(1ull << 40) * 1.5;  // one step
      // Mostly one value, now and then a few others (a device's live bytes at the ends of
      // one-allocation iterations of 8 threads): most slopes exactly 0, both ends of the bracket 0.
      shapes[7][i] = rng() % 4 ? 0.0 : static_cast<double>(25600 * (1 + rng() % 3));
    }
    for (size_t k = 0; k < shapes.size(); ++k)
      ASSERT_EQ(robust_slope(shapes[k].data(), n, &scratch), slope_the_long_way(shapes[k])) << n << " shape " << k;
  }
}

// A rising series with noise: the fit's quality is unchanged by the MAD(x) shortcut (checked
// against the formula computed the long way).
TEST(RobustFit, QualityMatchesTheLongWay) {
  std::vector<double> y(1000), scratch;
  for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<double>(i) * 64 + static_cast<double>((i * 7919) % 97);
  RobustFit f = fit_robust(y.data(), y.size(), &scratch);
  std::vector<double> r(y.size()), x(y.size());
  for (size_t i = 0; i < y.size(); ++i) r[i] = y[i] - (f.intercept + f.slope * static_cast<double>(i));
  const double mr = median_sorted(r);
  for (double &v : r) v = std::fabs(v - mr);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i);
  const double mx = median_sorted(x);
  for (double &v : x) v = std::fabs(v - mx);
  const double ratio = median_sorted(r) / (std::fabs(f.slope) * median_sorted(x));
  EXPECT_EQ(f.quality, std::clamp(1.0 - ratio * ratio, 0.0, 1.0));
}

}  // namespace
}  // namespace gpuleak::analysis::detail
