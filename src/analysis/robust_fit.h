// Median-based line through a series: the fit every verdict, rate and forecast uses, so that one
// spike (a big temporary that happened to be live at one iteration end) moves neither the rate
// nor the confidence. fit.h's least squares stays as the informational R^2.
#pragma once

#include <cstddef>
#include <vector>

namespace gpuleak::analysis::detail {

struct RobustFit {
  // Theil-Sen: the median of the slopes between every pair of points.
  double slope = 0;
  // The median of y - slope * x.
  double intercept = 0;
  // How well the line explains the series, 0..1, robust to outliers like the slope:
  //   1 - (MAD(residuals) / (|slope| * MAD(x)))^2, clamped to [0, 1],
  // MAD being the median absolute deviation from the median. The line's own spread over the window
  // (|slope| * MAD(x)) is compared with the typical distance of a point from it, as R^2 compares
  // variances. A flat line (slope 0) explains nothing: 0.
  double quality = 0;
};

// Above this many points the pairs are taken between this many evenly spaced points (always the
// first and the last included); the residuals still use every point. 512 points: 130816 pairs.
inline constexpr size_t kMaxExactFitPoints = 512;

// Fits y[0..n) at x = 0..n-1. Fewer than two points: slope 0, quality 0. Deterministic.
// `scratch` is reused between calls to avoid allocations (its contents are overwritten).
RobustFit fit_robust(const double *y, size_t n, std::vector<double> *scratch);
// fit_robust(y, n, scratch).slope alone, without the O(n) medians of the residuals.
double robust_slope(const double *y, size_t n, std::vector<double> *scratch);
// The median absolute deviation of 0, 1, ..., n-1 from their median (fit_robust's MAD(x)), from n.
double mad_of_positions(size_t n);

}  // namespace gpuleak::analysis::detail
