// Fragmentation, its second shape: memory reserved far above live, without any failure. Read from
// the NVML samples the shim's sampler thread took while the capture ran (DeviceUsage records,
// docs/capture-format.md): per device, what the process used beyond the bytes gpuleak tracked,
// less the smallest such remainder over the samples from the end of the warm-up on (the CUDA
// context, module images), is memory that a pool or caching allocator keeps. The finding is made
// when that reserve stays, over consecutive samples, far above the highest live bytes of the last
// iterations: memory the program no longer uses and did not recently need (a stream-ordered pool
// with a high release threshold). The highest live bytes of each sample's window are gathered
// during the replay (an observer), the rest is decided at the end.
#include <algorithm>
#include <memory>

#include "analysis/advice_internal.h"

namespace gpuleak::analysis::detail {

namespace {

constexpr uint64_t kSecond = 1'000'000'000ull;

// The highest device live bytes inside time windows known before the replay (one per NVML
// sample), gathered as the replay passes: the windows' ends cut time into intervals, and each
// keeps its highest value and the value in force at its start. Memory: two words per window end.
class WindowPeaks {
 public:
  void add(uint64_t from, uint64_t to) { bounds_.push_back(from), bounds_.push_back(to); }
  void prepare() {
    std::sort(bounds_.begin(), bounds_.end());
    bounds_.erase(std::unique(bounds_.begin(), bounds_.end()), bounds_.end());
    in_force_.assign(bounds_.size(), 0);
    highest_.assign(bounds_.size(), 0);
  }
  // A change at time t (changes come in time order) took live bytes from `before` to `after`.
  void change(uint64_t t, uint64_t before, uint64_t after) {
    while (next_ < bounds_.size() && t > bounds_[next_]) in_force_[next_++] = before;
    if (next_ > 0) highest_[next_ - 1] = std::max(highest_[next_ - 1], after);  // in (bounds[next-1], bounds[next]]
  }
  void finish(uint64_t live) {
    while (next_ < bounds_.size()) in_force_[next_++] = live;
  }
  // The highest live bytes in [from, to] (both added), the value in force at `from` included.
  uint64_t peak(uint64_t from, uint64_t to) const {
    size_t a = index(from), c = index(to);
    uint64_t best = in_force_[a];
    for (size_t j = a; j < c; ++j) best = std::max(best, highest_[j]);
    return best;
  }

 private:
  size_t index(uint64_t t) const {
    return static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), t) - bounds_.begin());
  }
  std::vector<uint64_t> bounds_, in_force_, highest_;
  size_t next_ = 0;
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
  uint64_t from = 0;  // its window: [from, usage->ts_ns]
  uint64_t reserve = 0, window_peak = 0;
  bool over = false;
};

class Reserve : public Rule, public Observer {
 public:
  explicit Reserve(const LoopView &loop) : loop_(loop), slots_(loop.devices.size()) {
    if (loop.options.reserve_min_samples == 0) return;
    for (uint16_t slot = 0; slot < slots_.size(); ++slot) {
      Slot &d = slots_[slot];
      for (const format::DeviceUsage &u : loop.capture.device_usage)
        if (u.device == loop.devices[slot] && (u.flags & format::kUsageProcessKnown)) d.samples.push_back({&u});
      if (d.samples.size() < loop.options.reserve_min_samples) {
        d.samples.clear();
        continue;
      }
      std::stable_sort(d.samples.begin(), d.samples.end(),
                       [](const Sample &a, const Sample &b) { return a.usage->ts_ns < b.usage->ts_ns; });
      uint64_t previous = d.samples.front().usage->ts_ns;
      for (Sample &s : d.samples) {
        s.from = window_start(loop, s.usage->ts_ns, previous);
        d.windows.add(s.from, s.usage->ts_ns);
        previous = s.usage->ts_ns;
      }
      d.windows.prepare();
      any_ = true;
    }
  }
  Observer *first() override { return any_ ? this : nullptr; }

  void born(uint32_t, const format::MemoryRecord &r, const LiveAllocation &a) override {
    if (on_device(a.space)) change(r, a.slot, static_cast<int64_t>(a.size));
  }
  void died(uint32_t, const format::MemoryRecord &r, const LiveAllocation &a) override {
    if (on_device(a.space)) change(r, a.slot, -static_cast<int64_t>(a.size));
  }
  void finish(const LiveSet &) override {
    for (Slot &d : slots_) d.windows.finish(clamp(d.live));
  }
  void findings(const std::vector<OomEvent> &, std::vector<Advice> *out) override {
    for (uint16_t slot = 0; slot < slots_.size(); ++slot)
      if (!slots_[slot].samples.empty()) finding(slot, out);
  }

 private:
  struct Slot {
    std::vector<Sample> samples;
    WindowPeaks windows;
    int64_t live = 0;
  };
  static uint64_t clamp(int64_t v) { return static_cast<uint64_t>(std::max<int64_t>(v, 0)); }
  void change(const format::MemoryRecord &r, uint16_t slot, int64_t delta) {
    Slot &d = slots_[slot];
    if (d.samples.empty()) return;
    const uint64_t before = clamp(d.live);
    d.live += delta;
    d.windows.change(r.ts_ns, before, clamp(d.live));
  }
  void finding(uint16_t slot, std::vector<Advice> *out);

  const LoopView &loop_;
  std::vector<Slot> slots_;
  bool any_ = false;
};

}  // namespace

void Reserve::finding(uint16_t slot, std::vector<Advice> *out) {
  const LoopView &loop = loop_;
  const AdviceOptions &o = loop.options;
  const int device = loop.devices[slot];
  Slot &d = slots_[slot];
  std::vector<Sample> &samples = d.samples;
  {
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

    for (Sample &s : samples) {
      const format::DeviceUsage &u = *s.usage;
      s.window_peak = std::max(d.windows.peak(s.from, u.ts_ns), u.tracked_live_bytes);
      // A sample from before the baseline settled may show less: no reserve then.
      s.reserve = u.process_used_bytes - std::min(u.process_used_bytes, baseline);
      const double margin =
          std::max(static_cast<double>(o.reserve_min_bytes), o.reserve_min_share * static_cast<double>(s.window_peak));
      s.over = s.reserve > s.window_peak && static_cast<double>(s.reserve - s.window_peak) > margin;
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
    if (best == samples.size()) return;

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

std::unique_ptr<Rule> reserve_rule(const LoopView &loop) { return std::make_unique<Reserve>(loop); }

}  // namespace gpuleak::analysis::detail
