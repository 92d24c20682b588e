#include "output/view/decimate.h"

#include <algorithm>

namespace gpuleak::output::view {

Series decimate_min_max(const Series &in, size_t max_points) {
  max_points = std::max<size_t>(max_points, 4);
  const size_t n = in.size();
  if (n <= max_points) return in;
  const size_t buckets = (max_points - 2) / 2;
  const uint64_t t0 = in.t_ns.front(), span = in.t_ns.back() - t0;

  Series out;
  out.t_ns.reserve(max_points);
  out.bytes.reserve(max_points);
  auto keep = [&](size_t i) {
    out.t_ns.push_back(in.t_ns[i]);
    out.bytes.push_back(in.bytes[i]);
  };
  keep(0);
  size_t i = 1;
  const size_t last = n - 1;
  for (size_t b = 0; b < buckets && i < last; ++b) {
    // Bucket b holds the inner points with t < t0 + span * (b + 1) / buckets (the last: all).
    const bool final_bucket = b + 1 == buckets;
    const uint64_t limit = t0 + static_cast<uint64_t>(static_cast<long double>(span) * (b + 1) / buckets);
    size_t lo = i, hi = i, j = i;
    for (; j < last && (final_bucket || in.t_ns[j] < limit); ++j) {
      if (in.bytes[j] < in.bytes[lo]) lo = j;
      if (in.bytes[j] > in.bytes[hi]) hi = j;
    }
    if (j == i) continue;  // an empty bucket
    keep(std::min(lo, hi));
    if (lo != hi) keep(std::max(lo, hi));
    i = j;
  }
  keep(last);
  return out;
}

}  // namespace gpuleak::output::view
