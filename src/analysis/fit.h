// Least-squares line through y[0..n) at x = 0..n-1: the informational R^2 of the report (the
// verdicts and rates use robust_fit.h, which one spike does not move).
#pragma once

#include <cstddef>

namespace gpuleak::analysis::detail {

struct LineFit {
  double slope = 0;
  double intercept = 0;
  // Coefficient of determination. A flat series (no variance) has nothing to explain: 0.
  double r2 = 0;
};

// Centred sums (two passes) so that series of ~1e11 bytes over many iterations keep their
// precision. Fewer than two points: slope 0.
inline LineFit fit_line(const double *y, size_t n) {
  LineFit f;
  if (n == 0) return f;
  double my = 0;
  for (size_t i = 0; i < n; ++i) my += y[i];
  my /= static_cast<double>(n);
  f.intercept = my;
  if (n < 2) return f;
  double mx = static_cast<double>(n - 1) / 2.0;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < n; ++i) {
    double dx = static_cast<double>(i) - mx, dy = y[i] - my;
    sxy += dx * dy;
    sxx += dx * dx;
    syy += dy * dy;
  }
  f.slope = sxy / sxx;
  f.intercept = my - f.slope * mx;
  f.r2 = syy > 0 ? (sxy * sxy) / (sxx * syy) : 0;
  return f;
}

}  // namespace gpuleak::analysis::detail
