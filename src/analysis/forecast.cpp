// Forecast: at the rate a leaking or growing device gains memory, how many more iterations (and
// seconds) until it is full. Only a forecast: it assumes the fitted rate holds and that nothing
// else on the device (other processes, the context) changes.
#include <algorithm>
#include <cmath>

#include "analysis/verdicts.h"

namespace gpuleak::analysis::detail {

namespace {

double median_seconds(const std::vector<Span> &spans, const Primary &primary) {
  std::vector<double> d;
  d.reserve(primary.spans.size());
  for (uint32_t s : primary.spans) d.push_back(static_cast<double>(spans[s].end_ns - spans[s].start_ns) / 1e9);
  if (d.empty()) return 0;
  // The order statistics h (and h - 1) alone: what a full sort would put there.
  const size_t h = d.size() / 2;
  std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(h), d.end());
  if (d.size() % 2) return d[h];
  return (*std::max_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(h)) + d[h]) / 2;
}

}  // namespace

// The rate is the device total's fitted slope after warm-up, or the leaking sites' rates summed
// when that is higher: a leak that began late in the run (each leak's rate is measured from its
// first iteration), or one hidden by memory released elsewhere. The starting point is the device's
// live bytes at the end of the last primary iteration.
void forecast(const std::vector<Span> &spans, const Primary &primary, const Ledger &ledger, Analysis *out) {
  if (primary.spans.empty()) return;
  const double seconds = median_seconds(spans, primary);
  for (size_t d = 0; d < ledger.devices.size(); ++d) {
    DeviceSummary &dev = out->devices[d];
    if (dev.verdict != Verdict::kLeak && dev.verdict != Verdict::kGrowth) continue;
    if (dev.total_bytes == 0) continue;
    double leaking = 0;
    for (const Leak &l : out->leaks)
      if (l.device == dev.index) leaking += l.bytes_per_iteration;
    double rate = std::max(dev.growth_bytes_per_iteration, leaking);
    if (rate <= 0) continue;
    uint64_t live = ledger.row(primary.spans.back(), d).live_end_bytes;
    Forecast f;
    f.bytes_per_iteration = rate;
    double left = dev.total_bytes > live ? std::floor(static_cast<double>(dev.total_bytes - live) / rate) : 0;
    f.iterations_left = static_cast<uint64_t>(std::min(left, 1.8e19));
    f.seconds_left = static_cast<double>(f.iterations_left) * seconds;
    dev.forecast = f;
  }
}

}  // namespace gpuleak::analysis::detail
