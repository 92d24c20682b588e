// Fragmentation, its second shape: memory reserved far above live, without any failure. Read from
// the NVML samples the shim's sampler thread took while the capture ran (DeviceUsage records,
// docs/capture-format.md): per device, what the process used beyond the bytes gpuleak tracked,
// less the smallest such remainder over the samples from the end of the warm-up on (the CUDA
// context, module images), is memory that a pool or caching allocator keeps. The finding is made when that reserve
// stays, over consecutive samples, far above the highest live bytes of the last iterations: memory the program no
// longer uses and did not recently need (a stream-ordered pool with a high release threshold).
#include <algorithm>

#include "analysis/advice_internal.h"

namespace gpuleak::analysis::detail {

namespace {

constexpr uint64_t kSecond = 1'000'000'000ull;

// Device live bytes after every change, with the highest value of any time range.
class LiveSeries {
 public:
  LiveSeries(const Timeline &timeline, const std::vector<Change> &changes) : timeline_(timeline), changes_(changes) {
    live_.reserve(changes.size());
    int64_t live = 0;
    for (const Change &c : changes) {
      live += c.delta;
      live_.push_back(static_cast<uint64_t>(std::max<int64_t>(live, 0)));
      if (live_.size() % kBlock == 1) block_max_.push_back(0);
      block_max_.back() = std::max(block_max_.back(), live_.back());
    }
  }

  // The highest live bytes in [from_ns, to_ns], the value in force at from_ns included.
  uint64_t peak(uint64_t from_ns, uint64_t to_ns) const {
    size_t first = after(from_ns);  // changes up to `first` made the value in force at from_ns
    const size_t last = after(to_ns);
    uint64_t best = first > 0 ? live_[first - 1] : 0;
    while (first < last && first % kBlock != 0) best = std::max(best, live_[first++]);
    for (; first + kBlock <= last; first += kBlock) best = std::max(best, block_max_[first / kBlock]);
    for (; first < last; ++first) best = std::max(best, live_[first]);
    return best;
  }

 private:
  static constexpr size_t kBlock = 256;
  // The number of changes made at or before t (their events' times are in order).
  size_t after(uint64_t t) const {
    return static_cast<size_t>(std::upper_bound(changes_.begin(), changes_.end(), t,
                                                [&](uint64_t v, const Change &c) { return v < timeline_.ts(c.pos); }) -
                               changes_.begin());
  }

  const Timeline &timeline_;
  const std::vector<Change> &changes_;
  std::vector<uint64_t> live_;
  std::vector<uint64_t> block_max_;
};

// What the program recently needed at sample time t: the last two primary iterations that began
// by then (else the last second), and everything since the previous sample.
uint64_t window_start(const LoopView &loop, uint64_t t, uint64_t previous) {
  const size_t begun =
      static_cast<size_t>(std::upper_bound(loop.start_ns.begin(), loop.start_ns.end(), t) - loop.start_ns.begin());
  uint64_t from = t > kSecond ? t - kSecond : 0;
  if (begun >= 2) from = loop.start_ns[begun - 2];
  return std::min(from, previous);
}

struct Sample {
  const format::DeviceUsage *usage = nullptr;
  uint64_t reserve = 0, window_peak = 0;
  bool over = false;
};

}  // namespace

void advise_reserve(const LoopView &loop, std::vector<Advice> *out) {
  const AdviceOptions &o = loop.options;
  const Ledger &ledger = loop.ledger;
  if (o.reserve_min_samples == 0) return;
  for (uint16_t slot = 0; slot < ledger.devices.size(); ++slot) {
    const int device = ledger.devices[slot];
    std::vector<Sample> samples;
    for (const format::DeviceUsage &u : loop.capture.device_usage)
      if (u.device == device && (u.flags & format::kUsageProcessKnown)) samples.push_back({&u});
    if (samples.size() < o.reserve_min_samples) continue;
    std::stable_sort(samples.begin(), samples.end(),
                     [](const Sample &a, const Sample &b) { return a.usage->ts_ns < b.usage->ts_ns; });
    auto untracked = [](const format::DeviceUsage &u) {
      return u.process_used_bytes - std::min(u.tracked_live_bytes, u.process_used_bytes);
    };
    // The baseline is taken once the loop's warm-up is over: lazily loaded kernels (CUDA's module
    // loading is lazy by default) arrive during the first iterations and stay, as a context does.
    // A reserve kept from before the loop is missed that way, rather than modules reported as one.
    const uint64_t settled = loop.w < loop.n ? loop.start_ns[loop.w] : 0;
    const bool any_settled = samples.back().usage->ts_ns >= settled;
    uint64_t baseline = UINT64_MAX;
    for (const Sample &s : samples)
      if (!any_settled || s.usage->ts_ns >= settled) baseline = std::min(baseline, untracked(*s.usage));

    const LiveSeries series(loop.timeline, loop.changes(slot));
    uint64_t previous = samples.front().usage->ts_ns;
    for (Sample &s : samples) {
      const format::DeviceUsage &u = *s.usage;
      s.window_peak = std::max(series.peak(window_start(loop, u.ts_ns, previous), u.ts_ns), u.tracked_live_bytes);
      // A sample from before the baseline settled may show less: no reserve then.
      s.reserve = u.process_used_bytes - std::min(u.process_used_bytes, baseline);
      const double margin =
          std::max(static_cast<double>(o.reserve_min_bytes), o.reserve_min_share * static_cast<double>(s.window_peak));
      s.over = s.reserve > s.window_peak && static_cast<double>(s.reserve - s.window_peak) > margin;
      previous = u.ts_ns;
    }

    // The largest excess inside a run of at least reserve_min_samples consecutive samples over.
    size_t best = samples.size(), best_first = 0, best_run = 0;
    for (size_t first = 0; first < samples.size();) {
      size_t end = first;
      while (end < samples.size() && samples[end].over) ++end;
      if (end - first >= o.reserve_min_samples) {
        for (size_t i = first; i < end; ++i) {
          const uint64_t excess = samples[i].reserve - samples[i].window_peak;
          if (best == samples.size() || excess > samples[best].reserve - samples[best].window_peak)
            best = i, best_first = first, best_run = end - first;
        }
      }
      first = std::max(end, first + 1);
    }
    if (best == samples.size()) continue;

    const Sample &s = samples[best];
    const format::DeviceUsage &u = *s.usage;
    const uint64_t excess = s.reserve - s.window_peak;
    const uint64_t held_ns = samples[best_first + best_run - 1].usage->ts_ns - samples[best_first].usage->ts_ns;
    Advice a;
    a.kind = AdviceKind::kFragmentation;
    a.device = device;
    a.evidence = {
        {"reserve_bytes", static_cast<double>(s.reserve)},
        {"reserve_above_live_bytes", static_cast<double>(s.reserve - std::min(s.reserve, u.tracked_live_bytes))},
        {"reserve_above_peak_bytes", static_cast<double>(excess)},
        {"window_peak_bytes", static_cast<double>(s.window_peak)},
        {"live_bytes", static_cast<double>(u.tracked_live_bytes)},
        {"process_used_bytes", static_cast<double>(u.process_used_bytes)},
        {"baseline_bytes", static_cast<double>(baseline)},
        {"t_ns", static_cast<double>(since_start(u.ts_ns, loop.capture.header.monotonic_ns))},
        {"samples_count", static_cast<double>(best_run)},
        {"held_ns", static_cast<double>(held_ns)}};
    a.saving = {{"bytes", static_cast<double>(excess)}};
    a.message = "For " + duration_text(static_cast<double>(held_ns)) + " (" + std::to_string(best_run) +
                " NVML samples) the process held " + bytes_text(static_cast<double>(s.reserve)) +
                " of device memory beyond its baseline (" + bytes_text(static_cast<double>(baseline)) +
                ": context, modules) while the program had at most " + bytes_text(static_cast<double>(s.window_peak)) +
                " live in its last iterations: a pool or caching allocator keeps " +
                bytes_text(static_cast<double>(excess)) +
                " it no longer uses; release it once after the phase that needed it (cudaMemPoolTrimTo(pool, 0), "
                "a lower cudaMemPoolAttrReleaseThreshold, or torch.cuda.empty_cache()), not every iteration.";
    out->push_back(std::move(a));
  }
}

}  // namespace gpuleak::analysis::detail
