// The loop the verdict tests build, and a least-squares slope computed independently of the
// analysis (fit.h) to check its rates against.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "analysis/capture_builder.h"

namespace gpuleak::testing {

// 256 MiB of weights before the loop, then `n` iterations of loop "train": each allocates a 64 MiB
// temporary, runs body(b, i) and frees the temporary. Appends to `b` (a device record, say).
inline CaptureBuilder train_loop(int n, const std::function<void(CaptureBuilder &, int)> &body,
                                 CaptureBuilder b = CaptureBuilder()) {
  b.alloc(256 * kMiB, 1);  // weights, before the loop
  for (int i = 0; i < n; ++i) {
    b.begin("train");
    uint64_t t = b.alloc(64 * kMiB, 2);
    body(b, i);
    b.free(t);
    b.end();
  }
  return b;
}

// Least-squares slope of y at x = from..y.size()-1.
template <typename T>
double least_squares_slope(const std::vector<T> &y, size_t from) {
  double n = static_cast<double>(y.size() - from), sx = 0, sy = 0, sxy = 0, sxx = 0;
  for (size_t i = from; i < y.size(); ++i) {
    double x = static_cast<double>(i), v = static_cast<double>(y[i]);
    sx += x, sy += v, sxy += x * v, sxx += x * x;
  }
  return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

}  // namespace gpuleak::testing
