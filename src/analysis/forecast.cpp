// Forecast: at the rate a leaking or growing device gains memory, how many more iterations (and
// seconds) until it is full. Only a forecast: it assumes the fitted rate holds and that what else
// holds the device (the CUDA context, other processes: NVML's reading at exit) stays as it was.
#include <algorithm>
#include <cmath>

#include "analysis/pool_blocks.h"
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

// The device's bytes NVML counted at exit that gpuleak's tracked live bytes do not hold: this
// process's untracked bytes and other processes' usage (the whole device's usage less this
// process's); where NVML did not list this process (a container's pid namespace), the whole
// device's usage less the tracked live bytes at exit.
uint64_t held_elsewhere(const DeviceSummary &dev) {
  if (!dev.nvml_device_used_bytes) return 0;
  const uint64_t device_used = *dev.nvml_device_used_bytes;
  if (!dev.nvml_process_used_bytes)
    return device_used > dev.live_at_exit_bytes ? device_used - dev.live_at_exit_bytes : 0;
  const uint64_t others = device_used > *dev.nvml_process_used_bytes ? device_used - *dev.nvml_process_used_bytes : 0;
  return others + dev.untracked_bytes.value_or(0);
}

}  // namespace

// The rate is the device total's fitted slope after warm-up, or the leaking sites' rates summed
// when that is higher: a leak that began late in the run (each leak's rate is measured from its
// first iteration), or one hidden by memory released elsewhere. The starting point is the device's
// live bytes at the end of the last primary iteration; what else holds the device is not free, and
// the free space inside a framework's pool is (PyTorch and CuPy release their cached blocks and
// retry before an allocation fails). Under JAX's arena the arrays get the arena and no more: the
// forecast is for the arena filling.
void forecast(const std::vector<Span> &spans, const Primary &primary, const Ledger &ledger,
              const std::vector<PoolTotals> &pools, Analysis *out) {
  if (primary.spans.empty()) return;
  const double seconds = median_seconds(spans, primary);
  const auto &modes = out->allocator_mode.modes;
  const bool jax_arena = std::find(modes.begin(), modes.end(), format::AllocatorMode::kJaxArenaSampled) != modes.end();
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
    auto pool = std::find_if(pools.begin(), pools.end(), [&](const PoolTotals &p) { return p.device == dev.index; });
    if (pool != pools.end())
      f.pool_free_bytes = pool->reserved_bytes > pool->object_bytes ? pool->reserved_bytes - pool->object_bytes : 0;
    double free_bytes = 0;
    if (jax_arena && pool != pools.end() && pool->reserved_bytes > 0) {
      f.within_arena = true;
      free_bytes = static_cast<double>(f.pool_free_bytes);
    } else {
      f.held_elsewhere_bytes = held_elsewhere(dev);
      const uint64_t used = live + f.held_elsewhere_bytes;
      const uint64_t have = dev.total_bytes + f.pool_free_bytes;
      free_bytes = have > used ? static_cast<double>(have - used) : 0;
    }
    double left = std::floor(free_bytes / rate);
    f.iterations_left = static_cast<uint64_t>(std::min(left, 1.8e19));
    f.seconds_left = static_cast<double>(f.iterations_left) * seconds;
    dev.forecast = f;
  }
}

}  // namespace gpuleak::analysis::detail
