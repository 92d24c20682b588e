// Which rank of a distributed job leaks while the others stay flat: the one rule that
// `gpuleak report` (several reports compared) and `gpuleak merge` (the leaking rank's process
// track labelled) both apply, so they never disagree. Pure and header-only.
//
// Each process is summed up by its growth: the sum over its devices of the analysis' growth rate
// (Device::growth_bytes_per_iteration, bytes per iteration of the primary loop). A process is an
// outlier when it grows by at least kMinOutlierGrowth per iteration and by more than
// kOutlierFactor times the median growth of the other processes. Processes that all grow alike
// (every rank holding the same cache) flag none: that is growth, not a rank's leak.
#pragma once

#include <algorithm>
#include <vector>

namespace gpuleak::analysis {

inline constexpr double kMinOutlierGrowth = 4096;  // bytes per iteration
inline constexpr double kOutlierFactor = 4;

// outliers[i] for growth[i]; at least two processes are needed to call one an outlier.
inline std::vector<bool> rank_outliers(const std::vector<double> &growth) {
  std::vector<bool> out(growth.size(), false);
  if (growth.size() < 2) return out;
  for (size_t i = 0; i < growth.size(); ++i) {
    if (!(growth[i] >= kMinOutlierGrowth)) continue;
    std::vector<double> others;
    for (size_t j = 0; j < growth.size(); ++j)
      if (j != i) others.push_back(std::max(0.0, growth[j]));
    std::sort(others.begin(), others.end());
    const size_t n = others.size();
    const double median = n % 2 ? others[n / 2] : (others[n / 2 - 1] + others[n / 2]) / 2;
    out[i] = growth[i] > kOutlierFactor * median;
  }
  return out;
}

}  // namespace gpuleak::analysis
