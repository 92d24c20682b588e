// analyze(): runs the stages of the analysis in order and assembles the public Analysis. The
// stages, each private to src/analysis, in the order they run:
//   iteration_finding.h   marked_iterations: the iterations the program marked (C API, NVTX)
//   timeline.h            make_timeline (pass 0): sites interned, spans and OOMs placed
//   frameworks.h          which framework's pool holds the memory, and its allocator settings
//   iteration_finding.h   find_iterations: the one place that picks the iterations, from the marked
//                         ones or else observed_loops.cpp, python_loop_detection.cpp and
//                         period_detection.cpp
//   ledger.h              replay (pass 1, and 2 for the advice): what is live, device totals,
//                         per-iteration numbers, handed as it happens to the observers
//                         (replay_observer.h): verdicts.h's SurvivorObserver, oom_observer.h,
//                         pool_blocks.h, life_recorder.h, retention.h
//   verdicts.h            decide: leaks, growth, per-device and overall verdicts; forecast: when a
//                         leaking or growing device runs out
//   advice_internal.h     the loop advice
#include <algorithm>
#include <iterator>
#include <memory>
#include <unordered_map>

#include "analysis/advice_internal.h"
#include "analysis/frameworks.h"
#include "analysis/iteration_finding.h"
#include "analysis/ledger.h"
#include "analysis/life_recorder.h"
#include "analysis/oom_observer.h"
#include "analysis/pool_blocks.h"
#include "analysis/retention.h"
#include "analysis/verdicts.h"
#include "format/huge_pages.h"
#include "text/paths.h"

namespace gpuleak::analysis {

const char *verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kClean:
      return "clean";
    case Verdict::kInconclusive:
      return "inconclusive";
    case Verdict::kGrowth:
      return "growth";
    case Verdict::kLeak:
      return "leak";
  }
  return "inconclusive";
}

const char *iteration_source_name(IterationSource s) {
  switch (s) {
    case IterationSource::kNone:
      return "none";
    case IterationSource::kAuto:
      return "auto";
    case IterationSource::kPythonLoop:
      return "python_loop";
    case IterationSource::kNvtx:
      return "nvtx";
    case IterationSource::kObserved:
      return "observed";
    case IterationSource::kApi:
      return "api";
  }
  return "none";
}

uint64_t live_before(const std::vector<LiveStep> &steps, uint32_t position) {
  auto it = std::lower_bound(steps.begin(), steps.end(), position,
                             [](const LiveStep &s, uint32_t p) { return s.position < p; });
  return it == steps.begin() ? 0 : std::prev(it)->live_bytes;
}

IterationDevice idle_row(int device, const std::vector<LiveStep> &steps, uint32_t begin, uint32_t end) {
  IterationDevice row;
  row.device = device;
  row.peak_bytes = live_before(steps, begin);
  row.live_end_bytes = live_before(steps, end);
  return row;
}

Analysis::Cells Analysis::active_devices(size_t iteration) const {
  const Iteration &it = iterations[iteration];
  if (it.cells_end > iteration_cells.size() || it.cells_begin > it.cells_end) return {};
  return {iteration_cells.data() + it.cells_begin, iteration_cells.data() + it.cells_end};
}

IterationDevice Analysis::iteration_device(size_t iteration, size_t device) const {
  const Iteration &it = iterations[iteration];
  const int index = devices[device].index;
  const Cells active = active_devices(iteration);
  auto found = std::lower_bound(active.begin(), active.end(), index,
                                [](const IterationDevice &d, int i) { return d.device < i; });
  if (found != active.end() && found->device == index) return *found;
  static const std::vector<LiveStep> kNever;
  return idle_row(index, device < device_live.size() ? device_live[device] : kNever, it.begin_event, it.end_event);
}

namespace detail {
namespace {

using format::Capture;

// What is still live at the end of the capture, by device and site.
class LiveAtExit : public Observer {
 public:
  LiveAtExit(const std::vector<int> &devices, const SiteTable &sites, const PoolBlocks *pool)
      : devices_(devices), sites_(sites), pool_(pool) {}
  void finish(const LiveSet &live_set) override {
    std::unordered_map<uint64_t, size_t> index;
    live_set.for_each([&](const LiveKey &, const LiveAllocation &a) {
      if (!leak_candidate(pool_, a)) return;
      auto [it, fresh] = index.try_emplace(static_cast<uint64_t>(a.slot) << 32 | a.site, live.size());
      if (fresh) live.push_back(LiveSite{devices_[a.slot], sites_.sites[a.site], 0, 0});
      live[it->second].live_bytes += a.size;
      ++live[it->second].live_count;
    });
  }
  std::vector<LiveSite> live;

 private:
  const std::vector<int> &devices_;
  const SiteTable &sites_;
  const PoolBlocks *pool_;
};

uint32_t warmup_for(uint32_t n, int requested) {
  if (requested >= 0) return std::min<uint32_t>(n, static_cast<uint32_t>(requested));
  return std::min<uint32_t>({std::max<uint32_t>(1, n / 10), 5u, n});
}

// libc10_cuda.so holds PyTorch's CUDA caching allocator: loaded means PyTorch allocates here.
bool loaded_pytorch_cuda(const Capture &capture) {
  for (const format::Module &m : capture.modules) {
    if (text::basename_of(m.path).compare(0, 12, "libc10_cuda.") == 0) return true;
  }
  return false;
}

// Informational: what the allocator environment and the allocation pattern suggest.
format::AllocatorMode allocator_mode(const Capture &capture, const Frameworks &frameworks, const Timeline &timeline,
                                     const Ledger &ledger) {
  using format::AllocatorMode;
  const format::AllocatorSettings &env = allocator_settings(capture);
  if (env.torch_async_backend) return AllocatorMode::kPerTensorAsync;
  // The other frameworks' per-object modes (gpuleak run --jax / --cupy); their pools: hiding_pool.
  if (frameworks.jax && env.xla_allocator == format::XlaAllocator::kPlatform) return AllocatorMode::kJaxPlatform;
  if (frameworks.jax && env.xla_allocator == format::XlaAllocator::kAddress) return AllocatorMode::kJaxAddress;
  if (frameworks.cupy && env.cupy == format::CupyMode::kPerArray) return AllocatorMode::kCupyPerArray;
  if (frameworks.cupy && env.cupy == format::CupyMode::kAsync) return AllocatorMode::kCupyAsync;
  if (env.torch_expandable) return AllocatorMode::kSegmentsExpandable;
  const uint64_t device = timeline.device_allocs, async = timeline.async_allocs, vmm = timeline.vmm_allocs,
                 device_2mib = timeline.device_2mib_allocs;
  if (ledger.accounting.allocations == 0) return AllocatorMode::kNone;
  if (vmm > 0) return AllocatorMode::kVirtualMemory;
  if (async > device) return AllocatorMode::kStreamOrdered;
  // PyTorch with its default allocator: what cudaMalloc sees are its cached segments, whatever
  // their sizes (a short run has few segments beside cuBLAS's own allocations).
  if (loaded_pytorch_cuda(capture) && env.torch_caching == format::TorchCaching::kUnset && device > 0)
    return AllocatorMode::kSegmentsPyTorch;
  // Libraries beside the caching allocator (cuBLAS, NCCL) make a few allocations of their own: 3/4
  // suffice. A caching allocator keeps its segments: most are never freed (a per-tensor run with
  // 2 MiB activations frees nearly everything it allocates).
  uint64_t allocs = 0, frees = 0;
  for (const auto &t : ledger.totals) allocs += t.allocs, frees += t.frees;
  if (device > 0 && device_2mib * 4 >= device * 3 && frees * 4 <= allocs) return AllocatorMode::kSegments2MiB;
  return AllocatorMode::kPerAllocation;
}

void fill_devices(const Capture &capture, const Ledger &ledger, Analysis *out) {
  for (size_t d = 0; d < ledger.devices.size(); ++d) {
    DeviceSummary dev;
    dev.index = ledger.devices[d];
    for (const auto &known : capture.devices)
      if (known.index == dev.index) {
        dev.name = known.name;
        dev.total_bytes = known.total_bytes;
      }
    dev.peak_live_bytes = ledger.totals[d].peak;
    dev.live_at_exit_bytes = ledger.totals[d].live;
    dev.alloc_count = ledger.totals[d].allocs;
    dev.free_count = ledger.totals[d].frees;
    for (const auto &u : capture.device_usage) {  // the last exit reading of the device wins
      if (u.device != dev.index || !(u.flags & format::kUsageAtExit)) continue;
      dev.nvml_device_used_bytes = u.device_used_bytes;
      dev.nvml_process_used_bytes.reset();
      dev.untracked_bytes.reset();
      if (!(u.flags & format::kUsageProcessKnown)) continue;
      dev.nvml_process_used_bytes = u.process_used_bytes;
      dev.untracked_bytes =
          u.process_used_bytes > u.tracked_live_bytes ? u.process_used_bytes - u.tracked_live_bytes : 0;
    }
    out->devices.push_back(std::move(dev));
  }
}

void fill_iterations(const Capture &capture, const std::vector<Span> &spans, const Ledger &ledger,
                     const std::string &primary, Analysis *out) {
  std::unordered_map<std::string, uint32_t> next_index;
  uint32_t *counter = nullptr;  // the previous span's loop's: usually this one's too
  const uint64_t anchor = capture.header.monotonic_ns;
  out->iterations.reserve(spans.size());
  format::prefer_huge_pages(out->iterations);
  for (size_t s = 0; s < spans.size(); ++s) {
    Iteration it;
    it.loop = spans[s].loop;
    if (!counter || s == 0 || spans[s].loop != spans[s - 1].loop) counter = &next_index[it.loop];
    it.index = (*counter)++;
    it.primary = it.loop == primary;
    it.start_ns = since_start(spans[s].start_ns, anchor);
    it.end_ns = since_start(spans[s].end_ns, anchor);
    it.begin_event = spans[s].begin;
    it.end_event = spans[s].end;
    it.cells_begin = ledger.cell_start[s];  // the cells come over at the end (analyze())
    it.cells_end = ledger.cell_start[s + 1];
    out->iterations.push_back(std::move(it));
  }
}

void fill_live_at_exit(std::vector<LiveSite> live, const AnalysisOptions &o, Analysis *out) {
  std::sort(live.begin(), live.end(), [](const LiveSite &a, const LiveSite &b) {
    if (a.live_bytes != b.live_bytes) return a.live_bytes > b.live_bytes;
    if (a.device != b.device) return a.device < b.device;
    return a.site.stack_id != b.site.stack_id ? a.site.stack_id < b.site.stack_id
                                              : a.site.py_stack_id < b.site.py_stack_id;
  });
  out->live_at_exit_sites = live.size();
  if (live.size() > o.max_live_at_exit_sites) live.resize(o.max_live_at_exit_sites);
  out->live_at_exit = std::move(live);
}

// A loop judged beside the primary: its passes as a Primary of its own, and its survivors.
struct LoopRun {
  size_t judgment = 0;  // index into Analysis::loops
  Primary primary;
  std::unique_ptr<SurvivorObserver> survivors;
};

// Fills the primary's LoopJudgment and the rest of `loops` (observed levels come described from
// spans_from_observed; marked and inferred loops are described here), and returns the loops
// other than the primary with enough passes, their passes in end order.
std::vector<LoopRun> loops_to_judge(const std::vector<Span> &spans, const std::string &primary_loop,
                                    IterationSource source, uint64_t anchor, const AnalysisOptions &o,
                                    std::vector<LoopJudgment> *loops) {
  if (loops->empty() && !primary_loop.empty()) {
    std::unordered_map<std::string, uint32_t> count;
    std::vector<std::string> order;
    uint32_t *counter = nullptr;  // the previous span's loop's: a loop's spans come in runs
    for (size_t s = 0; s < spans.size(); ++s) {
      if (!counter || spans[s].loop != spans[s - 1].loop) {
        auto [it, fresh] = count.try_emplace(spans[s].loop, 0);
        if (fresh) order.push_back(spans[s].loop);
        counter = &it->second;
      }
      ++*counter;
    }
    const bool marked = source == IterationSource::kApi || source == IterationSource::kNvtx;
    const uint32_t reps = static_cast<uint32_t>(std::max(2, o.min_auto_repetitions));
    for (const std::string &name : order) {
      if (name != primary_loop && (!marked || count[name] < reps)) continue;
      LoopJudgment j;
      j.name = name;
      j.kind = marked ? "marked" : "inferred";
      j.primary = name == primary_loop;
      loops->push_back(std::move(j));
    }
  }
  std::unordered_map<std::string, size_t> by_name;
  for (size_t i = 0; i < loops->size(); ++i) by_name.emplace((*loops)[i].name, i);
  std::vector<LoopRun> runs;
  std::vector<size_t> run_of(loops->size(), SIZE_MAX);
  for (size_t i = 0; i < loops->size(); ++i)
    if (!(*loops)[i].primary) run_of[i] = runs.size(), runs.emplace_back(), runs.back().judgment = i;
  size_t judged = SIZE_MAX;  // the previous span's loop's index into *loops (SIZE_MAX: none)
  for (uint32_t s = 0; s < spans.size(); ++s) {
    if (s == 0 || spans[s].loop != spans[s - 1].loop) {
      auto it = by_name.find(spans[s].loop);
      judged = it == by_name.end() ? SIZE_MAX : it->second;
    }
    if (judged == SIZE_MAX) continue;
    LoopJudgment &j = (*loops)[judged];
    const uint64_t start = since_start(spans[s].start_ns, anchor), end = since_start(spans[s].end_ns, anchor);
    if (j.passes++ == 0) j.start_ns = start;
    j.start_ns = std::min(j.start_ns, start);
    j.end_ns = std::max(j.end_ns, end);
    if (run_of[judged] != SIZE_MAX) runs[run_of[judged]].primary.spans.push_back(s);
  }
  for (LoopRun &r : runs) {
    std::vector<uint32_t> &v = r.primary.spans;
    std::stable_sort(v.begin(), v.end(), [&](uint32_t a, uint32_t b) { return spans[a].end < spans[b].end; });
    for (uint32_t s : v) r.primary.end_pos.push_back(spans[s].end);
    r.primary.warmup = warmup_for(static_cast<uint32_t>(v.size()), o.warmup_iterations);
  }
  return runs;
}

// After decide(): each loop's verdict and leaks, and the run's verdict the worst of them.
void judge_loops(const Ledger &ledger, const SiteTable &sites, std::vector<LoopRun> &others, const AnalysisOptions &o,
                 const RetentionJoin *retention, Analysis *out) {
  auto growth = [](const Analysis &a) {
    double most = 0;
    for (const DeviceSummary &d : a.devices) most = std::max(most, d.growth_bytes_per_iteration);
    return most;
  };
  for (Leak &l : out->leaks) l.loop = out->primary_loop;
  for (LoopJudgment &j : out->loops) {
    if (!j.primary) continue;
    j.verdict = out->verdict;
    j.warmup = out->warmup_iterations;
    j.leaks = out->leaks;
    j.growth_bytes_per_iteration = growth(*out);
  }
  const LoopJudgment *primary = nullptr;
  for (const LoopJudgment &j : out->loops)
    if (j.primary) primary = &j;
  const uint64_t primary_start = primary ? primary->start_ns : 0;
  auto listed = [&](const Leak &l) {
    for (const Leak &x : out->leaks)
      if (x.device == l.device && x.site == l.site) return true;
    return false;
  };
  for (LoopRun &r : others) {
    Analysis scratch;
    scratch.devices = out->devices;
    for (DeviceSummary &d : scratch.devices) {  // the same devices, none judged yet
      DeviceSummary fresh;
      fresh.index = d.index, fresh.name = d.name, fresh.total_bytes = d.total_bytes;
      d = std::move(fresh);
    }
    decide(ledger, sites, r.primary, r.survivors.get(), o, &scratch);
    r.survivors.reset();
    if (retention) retention->apply(ledger.devices, sites, &scratch);
    LoopJudgment &j = out->loops[r.judgment];
    j.warmup = r.primary.warmup;
    if (primary && j.test.empty() && j.end_ns <= primary_start) {  // a setup loop (LoopJudgment::setup)
      j.setup = true;
      for (const Leak &l : scratch.leaks) j.kept_bytes += l.live_bytes;
      continue;
    }
    j.verdict = scratch.verdict;
    j.growth_bytes_per_iteration = growth(scratch);
    for (Leak &l : scratch.leaks) l.loop = j.name;
    for (size_t d = 0; d < scratch.devices.size() && d < out->devices.size(); ++d) {
      const Verdict v = scratch.devices[d].verdict;
      if (v == Verdict::kLeak || v == Verdict::kGrowth) out->devices[d].verdict = std::max(out->devices[d].verdict, v);
    }
    for (const Leak &l : scratch.leaks)
      if (!listed(l)) out->leaks.push_back(l);
    j.leaks = std::move(scratch.leaks);
  }
  std::stable_sort(out->leaks.begin(), out->leaks.end(),
                   [](const Leak &a, const Leak &b) { return a.bytes_per_iteration > b.bytes_per_iteration; });
  out->verdict = Verdict::kClean;
  for (const DeviceSummary &d : out->devices) out->verdict = std::max(out->verdict, d.verdict);
  std::stable_sort(out->loops.begin(), out->loops.end(),
                   [](const LoopJudgment &a, const LoopJudgment &b) { return a.start_ns < b.start_ns; });
}

}  // namespace
}  // namespace detail

namespace detail {
namespace {

// analyze() over `memory`; `record_order`: its time order as indices into capture.memory (kept in
// Lives::record_of), null when the records are streamed.
Analysis run(const format::Capture &capture, const format::MemorySource &memory, const AnalysisOptions &options,
             const std::vector<uint32_t> *record_order) {
  Analysis out;
  out.user_code = user_code_for(capture, options.user_code);
  std::vector<Span> spans = marked_iterations(capture, capture_end_ns(capture, memory), options, &out);
  OomObserver ooms(capture, options);
  std::vector<uint32_t> oom_positions;
  SiteTable sites;
  const Timeline timeline = make_timeline(capture, memory, &spans, ooms.times(), &oom_positions, spans.empty(), &sites);
  const Frameworks frameworks = detect_frameworks(capture);
  const HidingPool pool = hiding_pool(capture, frameworks);
  spans = find_iterations(capture, timeline, &sites, pool, std::move(spans), options, &out);

  Primary primary;
  out.primary_loop = primary_loop(spans);
  for (const LoopJudgment &j : out.loops)  // observed: the level chosen, not the one with the most passes
    if (j.primary) out.primary_loop = j.name;
  for (uint32_t s = 0; s < spans.size(); ++s)
    if (spans[s].loop == out.primary_loop) primary.spans.push_back(s);
  auto by_end = [&](uint32_t a, uint32_t b) { return spans[a].end < spans[b].end; };
  if (!std::is_sorted(primary.spans.begin(), primary.spans.end(), by_end))
    std::stable_sort(primary.spans.begin(), primary.spans.end(), by_end);
  for (uint32_t s : primary.spans) primary.end_pos.push_back(spans[s].end);
  primary.warmup = warmup_for(static_cast<uint32_t>(primary.spans.size()), options.warmup_iterations);
  out.primary_iterations = static_cast<uint32_t>(primary.spans.size());
  out.warmup_iterations = primary.warmup;
  // Every other loop with enough passes is judged on its own passes, in the same replay.
  std::vector<LoopRun> others =
      loops_to_judge(spans, out.primary_loop, out.iteration_source, capture.header.monotonic_ns, options, &out.loops);

  // Pass 1: the ledger, and everything that must see allocations while they live.
  ooms.place(oom_positions, timeline.devices);
  ooms.use_sites(&sites.sites);
  // A framework allocator's blocks, when the capture has them: first, so that every observer
  // after it knows which allocations are segments (pool_blocks.h).
  std::optional<PoolBlocks> blocks;
  if (timeline.pool_block_allocs > 0) blocks.emplace(sites, timeline.devices);
  if (blocks && !primary.end_pos.empty()) blocks->snapshot_at(primary.end_pos.back());
  const PoolBlocks *segments = blocks ? &*blocks : nullptr;
  ooms.use_pool(segments);
  SurvivorObserver survivors(primary, segments);
  for (LoopRun &o : others) o.survivors = std::make_unique<SurvivorObserver>(o.primary, segments, true);
  LiveAtExit live_at_exit(timeline.devices, sites, segments);
  Advisor advisor(capture, timeline, sites, spans, primary, options);
  std::vector<Observer *> observers = {&ooms, &survivors, &live_at_exit};
  if (blocks) observers.insert(observers.begin(), &*blocks);
  for (LoopRun &o : others) observers.push_back(o.survivors.get());
  // The advice rules read nothing of the other observers: told by a replay of their own, beside.
  const std::vector<Observer *> beside = advisor.observers();
  std::optional<LifeRecorder> lives;
  if (options.record_lives) observers.push_back(&lives.emplace(sites, segments, timeline.devices));
  std::optional<RetentionJoin> retention;  // only with the start-up hook's paths (format 1.7)
  if (!capture.retentions.empty()) observers.push_back(&retention.emplace(capture));
  Ledger ledger;
  replay(capture, timeline, sites, spans, primary.end_pos, observers, &ledger, beside);
  if (lives) out.lives = lives->take(record_order ? *record_order : std::vector<uint32_t>{});

  out.accounting = ledger.accounting;
  out.duration_ns = since_start(timeline.end_ns, capture.header.monotonic_ns);
  out.allocator_mode =
      pool.mode.empty() ? format::AllocatorModes{{allocator_mode(capture, frameworks, timeline, ledger)}} : pool.mode;
  out.allocator_note = pool.note;
  if (out.allocator_mode.segments_only())
    out.allocator_note =
        "gpuleak saw a caching allocator's segments, not tensors: a leak smaller than the cached segments (a "
        "scalar kept every step) may be hidden; for per-tensor call sites rerun with `gpuleak run --torch "
        "per-tensor` (PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync)";
  // The default PyTorch mode's adapter could not attach: which need was missing, said here (the
  // summary's note) rather than on the program's stderr.
  if (std::string missing = missing_tracker_note(capture); !missing.empty()) out.allocator_note = std::move(missing);
  // A framework's objects seen (or sampled, with none live at a sample): what was seen, per framework.
  if (blocks || pool_tracked(capture, format::PoolFramework::kCuPy) ||
      pool_tracked(capture, format::PoolFramework::kJax)) {
    if (blocks) out.segments = blocks->take();
    for (const format::PoolTracker &t : capture.pool_trackers) out.pool_tracker = t.description;  // the last
    const HidingPool objects = pool_objects(capture, !spans.empty());
    out.allocator_mode = objects.mode;
    out.allocator_note = objects.note;
  }
  fill_devices(capture, ledger, &out);
  fill_iterations(capture, spans, ledger, out.primary_loop, &out);

  decide(ledger, sites, primary, &survivors, options, &out);
  if (retention) retention->apply(ledger.devices, sites, &out);
  forecast(spans, primary, ledger, blocks ? blocks->pools() : std::vector<PoolTotals>{}, &out);
  out.ooms = ooms.events();
  fill_live_at_exit(std::move(live_at_exit.live), options, &out);
  advisor.finish(&out);  // may replay once more (advice_internal.h)
  // Last: the forecast and the advice are the primary's; the other loops add leaks and verdicts.
  judge_loops(ledger, sites, others, options, retention ? &*retention : nullptr, &out);
  out.device_live = std::move(ledger.live_steps);
  out.iteration_cells = std::move(ledger.cells);  // by span, and the iterations are the spans in order
  return out;
}

}  // namespace
}  // namespace detail

Analysis analyze(const format::Capture &capture, const format::MemorySource &memory, const AnalysisOptions &options) {
  return detail::run(capture, memory, options, nullptr);
}

Analysis analyze(const format::Capture &capture, const AnalysisOptions &options) {
  const format::VectorMemorySource memory(capture.memory);
  return detail::run(capture, memory, options, &memory.order());
}

}  // namespace gpuleak::analysis
