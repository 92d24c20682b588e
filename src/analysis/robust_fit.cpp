// Theil-Sen slope and a MAD-based fit quality (robust_fit.h). O(p^2) in the points paired, p at
// most kMaxExactFitPoints, plus O(n) for the residuals: a fit of 10,000 iterations takes a few
// milliseconds, and only the series that could leak are fitted.
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

RobustFit fit_robust(const double *y, size_t n, std::vector<double> *scratch) {
  RobustFit f;
  if (n == 0) return f;
  std::vector<double> &s = *scratch;
  if (n < 2) {
    f.intercept = y[0];
    return f;
  }
  // The points paired: all of them, or p evenly spaced ones.
  const size_t p = std::min(n, kMaxExactFitPoints);
  auto index = [&](size_t k) { return p == n ? k : static_cast<size_t>((k * (n - 1) + (p - 1) / 2) / (p - 1)); };
  s.clear();
  s.reserve(p * (p - 1) / 2);
  for (size_t a = 0; a < p; ++a) {
    size_t i = index(a);
    for (size_t b = a + 1; b < p; ++b) {
      size_t j = index(b);
      if (j == i) continue;
      s.push_back((y[j] - y[i]) / static_cast<double>(j - i));
    }
  }
  f.slope = s.empty() ? 0 : median_of(s.data(), s.size());
  s.resize(n);
  for (size_t i = 0; i < n; ++i) s[i] = y[i] - f.slope * static_cast<double>(i);
  f.intercept = median_of(s.data(), n);
  if (f.slope == 0) return f;
  for (size_t i = 0; i < n; ++i) s[i] = y[i] - (f.intercept + f.slope * static_cast<double>(i));
  double mad_residual = mad_of(s.data(), n);
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<double>(i);
  double spread = std::fabs(f.slope) * mad_of(s.data(), n);
  if (!(spread > 0)) return f;
  double r = mad_residual / spread;
  f.quality = std::clamp(1.0 - r * r, 0.0, 1.0);
  return f;
}

}  // namespace gpuleak::analysis::detail
