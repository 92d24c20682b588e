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
  // The points paired: all of them, or p evenly spaced ones.
  const size_t p = std::min(n, kMaxExactFitPoints);
  auto index = [&](size_t k) { return p == n ? k : static_cast<size_t>((k * (n - 1) + (p - 1) / 2) / (p - 1)); };
  // Each point's index and value once, not once per pair (a division each).
  std::vector<size_t> at(p);
  std::vector<double> value(p);
  for (size_t a = 0; a < p; ++a) at[a] = index(a), value[a] = y[at[a]];
  s.resize(p * (p - 1) / 2);
  size_t pairs = 0;
  for (size_t a = 0; a < p; ++a) {
    const size_t i = at[a];
    const double yi = value[a];
    for (size_t b = a + 1; b < p; ++b) {
      const size_t j = at[b];
      if (j == i) continue;
      s[pairs++] = (value[b] - yi) / static_cast<double>(j - i);
    }
  }
  return pairs == 0 ? 0 : median_of(s.data(), pairs);
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
