#include "output/curve_decimation.h"

#include <algorithm>

namespace gpuleak::output {

namespace {

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

}  // namespace

std::vector<uint32_t> decimate_curve(const int64_t *t, const uint64_t *bytes, size_t n, int64_t origin,
                                     uint64_t bucket_ns) {
  std::vector<uint32_t> keep;
  if (n == 0) return keep;
  const int64_t width = static_cast<int64_t>(std::max<uint64_t>(1, std::min<uint64_t>(bucket_ns, INT64_MAX)));
  keep.push_back(0);
  for (size_t first = 0; first < n;) {
    const int64_t bucket = floor_div(t[first] - origin, width);
    size_t lo = first, hi = first, end = first + 1;
    for (; end < n && floor_div(t[end] - origin, width) == bucket; ++end) {
      if (bytes[end] < bytes[lo]) lo = end;  // strict: the first time the value was reached
      if (bytes[end] > bytes[hi]) hi = end;
    }
    uint32_t picked[3] = {static_cast<uint32_t>(std::min(lo, hi)), static_cast<uint32_t>(std::max(lo, hi)),
                          static_cast<uint32_t>(end - 1)};
    for (uint32_t i : picked)
      if (i > keep.back()) keep.push_back(i);
    first = end;
  }
  return keep;
}

uint64_t bucket_width_for(int64_t first, int64_t last, size_t curves, size_t max_points) {
  curves = std::max<size_t>(1, curves);
  max_points = std::max(max_points, 4 * curves);
  const uint64_t span = static_cast<uint64_t>(std::max<int64_t>(0, last - first)) + 1;
  const uint64_t buckets = std::max<uint64_t>(1, (max_points - curves) / curves / 3);  // each curve's first point apart
  return (span + buckets - 1) / buckets;
}

}  // namespace gpuleak::output
