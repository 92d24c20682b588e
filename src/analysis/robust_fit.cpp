// Theil-Sen slope and a MAD-based fit quality (robust_fit.h). O(p^2) in the points paired, p at
// most kMaxExactFitPoints, plus O(n) for the residuals: a fit of 10,000 iterations takes a few
// milliseconds, and only the series that could leak are fitted. The callers that read only the
// slope (the fits after each warm-up, the late half, a leak's own rate) skip the residuals.
#include "analysis/robust_fit.h"

#include <algorithm>
#include <cmath>

namespace gpuleak::analysis::detail {

namespace {

// The median of v[0..n), reordering v. n > 0.
double median_of(double *v, size_t n) {
  size_t h = n / 2;
  std::nth_element(v, v + h, v + n);
  double hi = v[h];
  if (n % 2) return hi;
  double lo = *std::max_element(v, v + h);
  return lo + (hi - lo) / 2;
}

// Median absolute deviation from the median, reordering v.
double mad_of(double *v, size_t n) {
  double m = median_of(v, n);
  for (size_t i = 0; i < n; ++i) v[i] = std::fabs(v[i] - m);
  return median_of(v, n);
}

}  // namespace

double mad_of_positions(size_t n) {
  if (n == 0) return 0;
  // The deviations of 0..n-1 from their median, ascending: 0, 1, 1, 2, 2, ... (n odd) or
  // 0.5, 0.5, 1.5, 1.5, ... (n even); median_of's rule on them without sorting n values.
  auto deviation = [n](size_t k) {
    return n % 2 ? static_cast<double>((k + 1) / 2) : static_cast<double>(k / 2) + 0.5;
  };
  const size_t h = n / 2;
  const double hi = deviation(h);
  if (n % 2) return hi;
  const double lo = deviation(h - 1);
  return lo + (hi - lo) / 2;
}

double robust_slope(const double *y, size_t n, std::vector<double> *scratch) {
  if (n < 2) return 0;
  std::vector<double> &s = *scratch;
  // The points paired: all of them, or p evenly spaced ones. Each point's position and value once,
  // not once per pair. The positions rise strictly (p <= n, evenly spaced), so every pair's
  // distance is positive, and exact as a double: x[b] - x[a] is the integer j - i.
  const size_t p = std::min(n, kMaxExactFitPoints);
  auto index = [&](size_t k) { return p == n ? k : static_cast<size_t>((k * (n - 1) + (p - 1) / 2) / (p - 1)); };
  std::vector<double> x(p), value(p);
  for (size_t a = 0; a < p; ++a) x[a] = static_cast<double>(index(a)), value[a] = y[index(a)];
  const size_t pairs = p * (p - 1) / 2;
  s.resize(pairs);
  // The slopes in pair order: a, then b > a.
  auto each_slope = [&](auto &&take) {
    for (size_t a = 0; a + 1 < p; ++a) {
      const double xa = x[a], ya = value[a];
      for (size_t b = a + 1; b < p; ++b) take((value[b] - ya) / (x[b] - xa));
    }
  };

  // Few pairs: all of them, then their median.
  constexpr size_t kSample = 1024, kMargin = 64;
  if (pairs < 8 * kSample) {
    size_t k = 0;
    each_slope([&](double q) { s[k++] = q; });
    return median_of(s.data(), pairs);
  }
  // Many (130,816 for 512 points, in each of 65 fits after warm-up: the nth_element over them was
  // a fifth of a report's instructions). The median's order statistics are looked for between two
  // slopes of an even sample of the pairs (a bracket of about 8 standard deviations of a sample
  // rank), in one pass that counts the slopes below the bracket and keeps those inside; only those
  // few are then selected. A median is one slope (or the midpoint of two) and its rank does not
  // depend on the method: the result is median_of's to the bit. When the bracket misses the
  // median's rank (a sample far from the whole), median_of over all of them decides.
  double sample[kSample];
  const size_t stride = pairs / kSample;
  for (size_t i = 0, a = 0, first = 0; i < kSample; ++i) {  // first: the pair order's index of (a, a + 1)
    const size_t t = i * stride + stride / 2;
    while (t >= first + (p - a - 1)) first += p - a - 1, ++a;
    const size_t b = a + 1 + (t - first);
    sample[i] = (value[b] - value[a]) / (x[b] - x[a]);
  }
  std::sort(sample, sample + kSample);
  const double lo = sample[kSample / 2 - kMargin], hi = sample[kSample / 2 + kMargin];
  const size_t h = pairs / 2, lowest_rank = pairs % 2 ? h : h - 1;
  size_t below = 0, m = 0;
  double *inside = s.data();
  each_slope([&](double q) {  // no branch on the slopes: they fall either side at random
    below += q < lo;
    inside[m] = q;
    m += (q >= lo) & (q <= hi);
  });
  if (below > lowest_rank || below + m <= h) {
    size_t k = 0;
    each_slope([&](double q) { s[k++] = q; });
    return median_of(s.data(), pairs);
  }
  // Both ends of the bracket the same slope: every slope kept is that one, and so is the median.
  // A series that keeps coming back to the same few values (a device's live bytes at the ends of
  // one-allocation iterations) has most of its slopes exactly 0, and the selection among them was
  // a quarter of such a fit. (The same double as selecting: slopes equal to lo are lo, and no
  // slope of a series without -0 in it is -0.)
  if (lo == hi) return lo;
  const size_t r = h - below;  // the median's rank among the slopes inside
  std::nth_element(inside, inside + r, inside + m);
  const double upper = inside[r];
  if (pairs % 2) return upper;
  const double lower = *std::max_element(inside, inside + r);  // r >= 1: rank h - 1 is inside too
  return lower + (upper - lower) / 2;
}

RobustFit fit_robust(const double *y, size_t n, std::vector<double> *scratch) {
  RobustFit f;
  if (n == 0) return f;
  std::vector<double> &s = *scratch;
  if (n < 2) {
    f.intercept = y[0];
    return f;
  }
  f.slope = robust_slope(y, n, scratch);
  s.resize(n);
  for (size_t i = 0; i < n; ++i) s[i] = y[i] - f.slope * static_cast<double>(i);
  f.intercept = median_of(s.data(), n);
  if (f.slope == 0) return f;
  for (size_t i = 0; i < n; ++i) s[i] = y[i] - (f.intercept + f.slope * static_cast<double>(i));
  double mad_residual = mad_of(s.data(), n);
  double spread = std::fabs(f.slope) * mad_of_positions(n);
  if (!(spread > 0)) return f;
  double r = mad_residual / spread;
  f.quality = std::clamp(1.0 - r * r, 0.0, 1.0);
  return f;
}

}  // namespace gpuleak::analysis::detail
