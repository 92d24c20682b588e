// What the analysis stages hand each other. Private to src/analysis: nothing outside it includes it
// but unit tests (tests/unit/sites_test.cpp checks its framework classifier against the headline's).
//
// The memory records are never held: every stage that needs them reads them during a replay of
// the capture's format::MemorySource in effective-time order, and keeps only what is proportional
// to live allocations, call sites and iterations. The stages, in the order analyze()
// (analysis.cpp) runs them:
//   iterations.cpp        spans_from_markers, spans_from_nvtx, primary_loop
//   timeline.cpp          make_timeline (pass 0): sites interned, spans and OOMs placed
//   observed_loops.cpp    spans_from_observed: the observed Python loop level that explains the memory
//   period_detection.cpp  spans_from_period: iterations found in the allocation sequence (own passes)
//   ledger.cpp            replay (pass 1, and 2 for the advice): what is live, device totals,
//                         per-iteration numbers, handed to the observers below as it happens
//   verdicts.cpp          SurvivorObserver, decide: leaks, growth, per-device and overall verdicts
//   forecast.cpp          forecast: when a leaking or growing device runs out
//   oom.cpp               OomObserver: what was live at each out-of-memory failure
//   advice*.cpp           the loop advice (advice_internal.h)
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/flat_map.h"
#include "analysis/user_code.h"
#include "format/address_space.h"
#include "format/capture_reader.h"
#include "format/memory_source.h"

namespace gpuleak::analysis::detail {

inline constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

// Address spaces a free is matched in (a VMM handle may equal a device pointer value).
using Space = format::AddressSpace;
inline Space space_of(uint8_t kind) { return format::address_space_of(kind); }
inline bool on_device(Space s) { return s == Space::kDevicePtr || s == Space::kArray || s == Space::kVmm; }
inline int device_of(int16_t device) { return device < 0 ? 0 : device; }
// Monotonic time -> ns since the run's start (clamped at 0).
inline uint64_t since_start(uint64_t ts, uint64_t anchor) { return ts > anchor ? ts - anchor : 0; }
// The API name the program called, as advice sentences show it (advice_text.cpp api_text).
inline uint16_t api_label(const format::MemoryRecord &r) {
  return (r.flags & format::kFlagRuntimeLabel) && r.runtime_api != 0 ? r.runtime_api : r.api;
}
inline bool owned_alloc(const format::MemoryRecord &r) {
  return r.op == static_cast<uint8_t>(format::Op::kAlloc) && r.result == 0 &&
         !(r.flags & format::kFlagGraphReservation) && space_of(r.kind) != Space::kNotOwned;
}
// Stream-ordered calls return at once; everything else may wait for the device.
inline bool stream_ordered(const format::MemoryRecord &r) {
  switch (static_cast<format::Api>(r.api)) {
    case format::Api::cuMemAllocAsync:
    case format::Api::cuMemAllocAsync_ptsz:
    case format::Api::cuMemAllocFromPoolAsync:
    case format::Api::cuMemAllocFromPoolAsync_ptsz:
    case format::Api::cuMemFreeAsync:
    case format::Api::cuMemFreeAsync_ptsz:
      return true;
    default:
      return r.kind == static_cast<uint8_t>(format::Kind::kAsync);
  }
}
inline bool successful_map(const format::MemoryRecord &r) {
  return r.op == static_cast<uint8_t>(format::Op::kMap) && r.result == 0;
}

struct U64Hash {
  uint64_t operator()(uint64_t k) const { return mix64(k); }
};
inline uint64_t site_key(uint32_t stack_id, uint32_t py_stack_id) {
  return static_cast<uint64_t>(stack_id) << 32 | py_stack_id;
}

// One iteration while it is being found: raw monotonic times, and the events it holds as the
// half-open range [begin, end) of event positions. Position p means "after the first p memory
// records in effective-time order": every stage refers to a moment that way.
struct Span {
  std::string loop;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t begin = 0;
  uint32_t end = 0;
};

// Call sites interned to dense indices, in the order their first allocation (or VMM map) happens.
struct SiteTable {
  std::vector<Site> sites;
  FlatMap<uint64_t, uint32_t, U64Hash> index;  // site_key -> index in sites
  uint32_t of(const format::MemoryRecord &r) const;
  // The site of every successful allocation of owned memory, in time order: only collected when
  // automatic period detection needs it (no iteration marks), 4 bytes an allocation.
  std::vector<uint32_t> alloc_sequence;
  std::vector<uint32_t> alloc_positions;  // ... and their event positions (4 more bytes): no replay finds them again
  uint64_t allocations = 0;               // successful allocations of owned memory
};

// What pass 0 learns about the memory records; replay() hands them out again, with positions.
struct Timeline {
  const format::MemorySource *source = nullptr;
  uint32_t size = 0;
  uint64_t end_ns = 0;       // latest timestamp of any record (memory, NVTX, marker, OOM)
  std::vector<int> devices;  // every device index of a record or a device record, ascending
  // Successful allocations by kind, for the allocator mode (analysis.cpp).
  uint64_t device_allocs = 0, device_2mib_allocs = 0, async_allocs = 0, vmm_allocs = 0;
  uint64_t pool_block_allocs = 0;  // a framework allocator's blocks (format 1.3)

  template <typename F>
  void replay(F &&visit) const {
    uint32_t k = 0;
    source->replay([&](const format::MemoryRecord &r) {
      if (k < size) visit(k, r);
      ++k;
    });
  }
};
// The latest timestamp of any record (memory, NVTX, marker, OOM).
uint64_t capture_end_ns(const format::Capture &capture, const format::MemorySource &source);
// Pass 0. Sets begin/end of every span from its times (events at or after start_ns and at or
// before end_ns), each oom_positions[i] to the first position at or after oom_ts[i], and collects
// the allocation sequence when `sequence` is set.
Timeline make_timeline(const format::Capture &capture, const format::MemorySource &source, std::vector<Span> *spans,
                       const std::vector<uint64_t> &oom_ts, std::vector<uint32_t> *oom_positions, bool sequence,
                       SiteTable *sites);

std::vector<Span> spans_from_markers(const format::Capture &capture, uint64_t capture_end_ns);
// Whether an NVTX message names an iteration, and with it the pattern's first group when that
// matched. A callback, not a std::regex: <regex> stays in the one file that compiles the pattern
// (iteration_finding.cpp) instead of in every file of the analysis (docs/benchmarks.md, "The
// demo's build"). It may throw std::regex_error, which reaches spans_from_nvtx's caller.
using RangeMatcher = std::function<bool(const std::string &message, std::optional<std::string> *group)>;
std::vector<Span> spans_from_nvtx(const format::Capture &capture, const RangeMatcher &is_range,
                                  uint64_t capture_end_ns);
// The loop with the most iterations (ties: the one that started first).
std::string primary_loop(const std::vector<Span> &spans);
// Allocation indices (into the allocation sequence) -> their event positions (timeline.size past
// the last), from SiteTable::alloc_positions; and event positions (ascending, each <
// timeline.size; repeats allowed) -> their times, in one replay.
std::vector<uint32_t> positions_of(const Timeline &timeline, const SiteTable &sites,
                                   const std::vector<uint32_t> &allocs);
std::vector<uint64_t> times_at(const Timeline &timeline, const std::vector<uint32_t> &positions);
// Spans from iteration starts given as allocation indices (ascending): each runs to the next
// start; the last one gets the median length in events of the others, and never reaches `tail`
// (an allocation index known to be past the loop, kNone: none) or the capture's end. Times set.
std::vector<Span> spans_from_starts(const Timeline &timeline, const SiteTable &sites, const std::string &loop,
                                    const std::vector<uint32_t> &starts, uint32_t tail);
// Spans come back with begin/end set, loop "auto"; empty when no period repeats often enough.
std::vector<Span> spans_from_period(const Timeline &timeline, const SiteTable &sites, int min_repetitions,
                                    double min_coverage);
// Iterations from the Python frames of the allocations (python_loop_detection.cpp): the passes of
// the loop in the outermost user-code frame most allocations go through. Loop named after that
// frame; empty when no such loop repeats min_repetitions times over min_coverage of the
// allocations that carry Python frames.
std::vector<Span> spans_from_python_loop(const format::Capture &capture, const Timeline &timeline,
                                         const SiteTable &sites, const UserCode &user, int min_repetitions,
                                         double min_coverage);

// Iterations from the observed Python loops (observed_loops.cpp, capture format 1.5): the passes
// of the loop level or callback whose passes explain the memory; `choice` says which, and what the
// observer said. Empty when none has min_repetitions passes (or the capture has no loop records).
// With them, the passes of one level per other group of nested levels (issue #33), each level
// described in *judged (name, kind, place, test, threads; the primary flagged).
std::vector<Span> spans_from_observed(const format::Capture &capture, const Timeline &timeline, const SiteTable &sites,
                                      int min_repetitions, IterationChoice *choice, std::vector<LoopJudgment> *judged);
// The `--loop FILE:LINE` to suggest when no iterations were found: the outermost observed loop
// the allocations pass through, else the outermost user frame of the first allocation with Python
// frames; "" when the program has no Python frames of the user's.
std::string suggest_loop(const format::Capture &capture, const SiteTable &sites, const UserCode &user);
// Sets begin/end of each span from its times (as make_timeline does for the spans it is given),
// in one replay.
void place_spans(const Timeline &timeline, const std::vector<Span *> &spans);

// How many of an ascending list of event positions are at or before p (std::upper_bound's
// count), for a p that never decreases, as a replay's position: O(1) amortized where a binary
// search per event cost log2(iterations). A p below the last one asked is searched for.
class PositionCursor {
 public:
  explicit PositionCursor(const std::vector<uint32_t> &positions) : positions_(&positions) {}
  uint32_t through(uint32_t p) {
    const std::vector<uint32_t> &v = *positions_;
    if (p < last_) return static_cast<uint32_t>(std::upper_bound(v.begin(), v.end(), p) - v.begin());
    last_ = p;
    while (next_ < v.size() && v[next_] <= p) ++next_;
    return next_;
  }

 private:
  const std::vector<uint32_t> *positions_;
  uint32_t next_ = 0;
  uint32_t last_ = 0;
};

// The ledger's working state for one allocation while it is live: an entry of its live set,
// erased at the release. Not a second record of a life: the one kept for readers is
// AllocationLife (lives.h), written from these by LifeRecorder (life_recorder.h).
struct LiveAllocation {
  uint64_t size = 0;
  uint32_t birth = 0;  // event position
  uint32_t site = 0;
  uint32_t birth_ns = 0;  // duration of the allocating call
  uint32_t ordinal = 0;   // the how-manieth allocation of owned memory (from 0)
  // Primary iteration ends (Primary::end_pos) at or before its birth: which iteration it was born
  // in, without a search over the ends on every death (LoopView::iteration_born).
  uint32_t ends_at_birth = 0;
  uint16_t slot = 0;  // device slot (Ledger::devices)
  uint16_t api = 0;   // api_label of the allocating call
  Space space = Space::kDevicePtr;
  bool async = false;   // the allocating call was stream-ordered
  bool mapped = false;  // VMM: mapped once already (the first mapping's site owns it)
};

// Where a live allocation is found again: host pointers are process-wide, the rest per device.
struct LiveKey {
  uint64_t address;
  int32_t device;
  Space space;
  bool operator==(const LiveKey &o) const { return address == o.address && device == o.device && space == o.space; }
};
struct LiveKeyHash {
  uint64_t operator()(const LiveKey &k) const {
    uint64_t where = static_cast<uint64_t>(static_cast<uint32_t>(k.device) + 1) << 8 | static_cast<uint8_t>(k.space);
    return mix64(k.address ^ (where << 44));
  }
};
using LiveSet = FlatMap<LiveKey, LiveAllocation, LiveKeyHash>;

class PoolBlocks;  // pool_blocks.h
// Whether an allocation's bytes are a call site's own, for leaks, live at exit and OOM sites: device
// memory, and a framework allocator's blocks; not the segments that hold blocks (`pool` null: no
// blocks in the capture).
bool leak_candidate(const PoolBlocks *pool, const LiveAllocation &a);

// Told about every change as the replay makes it. Positions only grow; at one position a
// release comes before a birth.
class Observer {
 public:
  virtual ~Observer() = default;
  // Before event k changes anything (k == size: at the end, after the last event). The default
  // does nothing and says so: the replay stops calling it (two virtual calls per observer and
  // event, most of them to these, were a tenth of a replay's own work).
  virtual void before(uint32_t k, const format::MemoryRecord *r, const LiveSet &live) {
    (void)k, (void)r, (void)live;
    default_before_ = true;
  }
  virtual void born(uint32_t k, const format::MemoryRecord &r, const LiveAllocation &a) { (void)k, (void)r, (void)a; }
  // `r` is the record that ended it: a free, an allocation reusing the address, a context reset.
  virtual void died(uint32_t k, const format::MemoryRecord &r, const LiveAllocation &a) { (void)k, (void)r, (void)a; }
  // A VMM allocation's first mapping at event k moved it from site `old` to a.site: what an
  // observer noted about it while it lived (a snapshot of the live set) must follow.
  virtual void remapped(uint32_t k, uint32_t old, const LiveAllocation &a) { (void)k, (void)old, (void)a; }
  // After event k was applied. The default, like before()'s, is called once.
  virtual void after(uint32_t k, const LiveSet &live) {
    (void)k, (void)live;
    default_after_ = true;
  }
  // After the last event: what is still live.
  virtual void finish(const LiveSet &live) { (void)live; }
  // Whether before() or after() is the default that does nothing (known once it was called).
  bool default_before() const { return default_before_; }
  bool default_after() const { return default_after_; }

 private:
  bool default_before_ = false, default_after_ = false;
};

// The ML frameworks with pools of their own the program ran (loaded modules, Python files);
// PyTorch's caching allocator is told by libc10_cuda.so and its settings (analysis.cpp).
struct Frameworks {
  bool jax = false, cupy = false;
};
Frameworks detect_frameworks(const format::Capture &capture);
// NAME's value in the recorder's allocator settings ("" when it was not set).
std::string allocator_setting(const format::Capture &capture, const char *name);
// A framework pool that hands gpuleak its own blocks instead of the program's objects (CuPy's
// memory pool, JAX's BFC allocator): then allocation patterns are the pool's, not the loop's, and
// no loop is looked for without marks. Empty mode: none.
struct HidingPool {
  format::AllocatorModes mode;  // allocator_mode
  std::string note;             // allocator_note
};
HidingPool hiding_pool(const format::Capture &capture, const Frameworks &frameworks);

// Iteration finding (iteration_finding.cpp), the one place that picks a run's iterations. First,
// before pass 0 (which places their times on event positions): the marked ones, from the C API,
// else from NVTX ranges matching AnalysisOptions::iteration_range_regex (sets iteration_source,
// warns about a bad pattern). Empty when the program marked none.
std::vector<Span> marked_iterations(const format::Capture &capture, uint64_t capture_end_ns,
                                    const AnalysisOptions &options, Analysis *out);
// Then, after pass 0: `marked` when there are any; else, unless a framework's pool hides the
// objects, the observed Python loops, the loop in the allocations' Python frames, the allocation
// sequence's period, the first that finds any. Sets iteration_source and iteration_choice (what
// was tried and the --loop to suggest when nothing was found) and frees the sites' allocation
// sequence. The spans come back sorted by start.
std::vector<Span> find_iterations(const format::Capture &capture, const Timeline &timeline, SiteTable *sites,
                                  const HidingPool &pool, std::vector<Span> marked, const AnalysisOptions &options,
                                  Analysis *out);
// Whether a framework's own allocator told gpuleak about its objects (a PoolTracker record of
// that framework: PyTorch's tensors, CuPy's arrays, JAX's sampled live arrays).
bool pool_tracked(const format::Capture &capture, format::PoolFramework framework);
// With a framework's objects in the capture (pool blocks): the report's allocator mode and note,
// which say what was seen and, for JAX, what is sampled. `iterations`: any were found.
HidingPool pool_objects(const format::Capture &capture, bool iterations);
// Why PyTorch's tensors were not seen when gpuleak's adapter could not attach (format 1.8: no C++
// compiler, no torch or CUDA headers), with what is lost; "" when it attached or never tried.
std::string missing_tracker_note(const format::Capture &capture);
// An allocator switch gpuleak made itself (gpuleak run --cupy per-array, --jax per-buffer, --torch
// per-tensor/no-caching): the cost it creates is gpuleak's, never advice to the program.
bool gpuleak_switched_allocator(const format::Capture &capture);

inline bool is_free(const format::MemoryRecord &r) { return r.op == static_cast<uint8_t>(format::Op::kFree); }

struct DeviceTotals {
  uint64_t live = 0;  // at the end of the capture
  uint64_t peak = 0;
  uint64_t allocs = 0;
  uint64_t frees = 0;
};

struct Ledger {
  std::vector<int> devices;          // slot -> device index, ascending
  std::vector<DeviceTotals> totals;  // per slot
  // Sparse per-iteration numbers (ledger.cpp): span s's cells, the devices that allocated or
  // released memory while it was open, are cells[cell_start[s] .. cell_start[s + 1]), by device.
  std::vector<IterationDevice> cells;
  std::vector<uint32_t> cell_start;
  std::vector<std::vector<LiveStep>> live_steps;           // per slot: the rest of the cells
  std::vector<std::pair<uint32_t, uint32_t>> span_bounds;  // per span: (begin, end)
  Accounting accounting;
  int slot_of(int device) const;  // -1 when the device was never seen
  // Span s's numbers for one slot, touched or not.
  IterationDevice row(uint32_t span, size_t slot) const;
};
// One replay of every event: fills *ledger and tells the observers. `primary_ends` (Primary::end_pos)
// sets each LiveAllocation's ends_at_birth.
void replay(const format::Capture &capture, const Timeline &timeline, const SiteTable &sites,
            const std::vector<Span> &spans, const std::vector<uint32_t> &primary_ends,
            const std::vector<Observer *> &observers, Ledger *ledger);

// The iterations the verdicts are computed on: the primary loop's spans in end order.
struct Primary {
  std::vector<uint32_t> spans;    // indices into the span list
  std::vector<uint32_t> end_pos;  // spans[i]'s end position, ascending
  uint32_t warmup = 0;
};

// Per (device, site): the live bytes and counts at the primary iteration ends, as changes at
// the ends where an allocation started or stopped counting (verdicts.cpp).
// With own_births, the loop is not the replay's primary (LiveAllocation::ends_at_birth counts another
// loop's ends): each allocation's birth iteration is searched for in `primary`'s ends.
class SurvivorObserver : public Observer {
 public:
  SurvivorObserver(const Primary &primary, const PoolBlocks *pool, bool own_births = false)
      : primary_(primary), pool_(pool), ends_(primary.end_pos), own_births_(own_births) {}
  void died(uint32_t k, const format::MemoryRecord &r, const LiveAllocation &a) override;
  void finish(const LiveSet &live) override;

  struct Delta {
    uint32_t iteration;  // index into the primary iterations
    int64_t bytes;
    int64_t count;
  };
  struct Series {
    uint16_t slot = 0;
    uint32_t site = 0;
    std::vector<Delta> deltas;              // merged by iteration from time to time: O(iterations), not O(allocations)
    size_t merged = 0;                      // deltas.size() after the last merge
    uint64_t survivors = 0;                 // born after warm-up, alive at the end of >= 1 iteration
    uint64_t survivors_freed = 0;           // ... of which gone by the end of the last iteration
    std::vector<uint32_t> last_alive_from;  // birth iteration of each allocation live at the last end
    uint64_t live_at_exit_bytes = 0, live_at_exit_count = 0;
  };
  std::vector<Series> series;

 private:
  void add(const LiveAllocation &a, uint32_t ub);
  const Primary &primary_;
  const PoolBlocks *pool_;
  PositionCursor ends_;  // over primary_.end_pos, at the replay's position
  bool own_births_ = false;
  std::unordered_map<uint64_t, uint32_t> index_;  // (slot, site) -> series
};
// Fills out->leaks, the devices' verdicts and growth fits, and out->verdict.
void decide(const Ledger &ledger, const SiteTable &sites, const Primary &primary, SurvivorObserver *survivors,
            const AnalysisOptions &options, Analysis *out);
void forecast(const std::vector<Span> &spans, const Primary &primary, const Ledger &ledger, Analysis *out);

// Out-of-memory failures (oom.cpp): the ones reported (newest first, at most max_oom_events) see
// what is live when the replay reaches them, and the device's recent events (a ring per device).
class OomObserver : public Observer {
 public:
  OomObserver(const format::Capture &capture, const AnalysisOptions &options);
  const std::vector<uint64_t> &times() const { return times_; }
  // Before the replay: the positions make_timeline found for times(), the sites and the devices.
  void place(const std::vector<uint32_t> &positions, const std::vector<int> &devices);
  void use_sites(const std::vector<Site> *sites) { sites_ = sites; }
  void use_pool(const PoolBlocks *pool) { pool_ = pool; }
  void before(uint32_t k, const format::MemoryRecord *r, const LiveSet &live) override;
  void born(uint32_t k, const format::MemoryRecord &r, const LiveAllocation &a) override;
  void remapped(uint32_t k, uint32_t old, const LiveAllocation &a) override;
  std::vector<OomEvent> events();  // after the replay

 private:
  void snapshot(uint32_t i, const LiveSet &live);
  std::vector<std::unordered_map<uint32_t, OomSiteLive>> by_site_;  // per OOM: site -> live, once taken
  const AnalysisOptions &options_;
  uint64_t anchor_ = 0;
  const std::vector<Site> *sites_ = nullptr;
  const PoolBlocks *pool_ = nullptr;
  std::vector<const format::OomRecord *> ooms_;  // newest first
  std::vector<uint64_t> times_;
  std::vector<uint32_t> positions_;
  std::vector<uint32_t> by_position_;  // indices into ooms_, by position
  size_t next_ = 0;
  std::vector<int> devices_;  // slot -> device
  std::vector<OomEvent> events_;
  std::vector<std::pair<uint32_t, uint32_t>> pending_;   // (OOM, slot) taken, recovery still open
  std::vector<std::pair<bool, uint64_t>> last_success_;  // per slot: a successful device allocation's time
  std::vector<int> ring_devices_;                        // devices with an OOM
  std::vector<std::deque<HistoryEvent>> rings_;          // their recent events
};

}  // namespace gpuleak::analysis::detail
