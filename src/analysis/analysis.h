// The analysis: a decoded capture in, every number and verdict of the report out.
//
// This is the single place where gpuleak decides what a leak is (DESIGN.md "Verdicts"): the
// at-exit summary, `gpuleak report`, `gpuleak check` and the viewer all render an Analysis and
// never re-decide. Pure code: no CUDA, no I/O of its own (a file-backed MemorySource reads the
// capture file), no global state; analyze() may be called from any thread on any capture, and the
// same capture with the same options always gives the same result, from either entry point.
//
// Units everywhere: bytes; times in nanoseconds since the run's start (the capture header's
// monotonic anchor); iterations numbered from 0 within their loop.
//
// How the memory records are read (capture_format.h says what each field means):
//   - events are replayed in effective-time order (MemoryRecord::ts_ns, stable sort), and only
//     records whose result is 0 change memory; a failed Alloc is counted, never live;
//   - device live bytes: kinds device, async, vmm (cuMemCreate to cuMemRelease), managed, pitched,
//     array, mipmapped_array; host pinned/registered memory is kept apart; imported memory,
//     virtual address ranges and graph reservations (kFlagGraphReservation) are not owned;
//   - a Free matches the live allocation with the same address in the same address space (device
//     pointers per device, VMM handles, array handles, host pointers); an unmatched free is counted
//     and otherwise ignored; a context reset drops everything live on its device;
//   - a call site is the pair (native stack_id, Python py_stack_id); (0, 0) is the unknown site.
//     A VMM allocation belongs to the site of the first cuMemMap that mapped it, else its create.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/advice.h"  // Advice, AdviceOptions (and Site, analysis/site.h)
#include "analysis/lives.h"
#include "analysis/user_code.h"
#include "format/allocator_mode.h"
#include "format/capture_reader.h"
#include "format/memory_source.h"

namespace gpuleak::analysis {

// Ordered by severity: the overall verdict is the maximum over devices.
enum class Verdict : uint8_t { kClean = 0, kInconclusive = 1, kGrowth = 2, kLeak = 3 };
// By strength: api (gpuleak_iteration_* marks), nvtx (named ranges), observed (the passes of a
// loop or the calls of a callback of the user's Python code, as the interpreter ran them: capture
// format 1.5), python_loop (the passes of a loop in the user's Python code, read from the
// allocations' Python frames), auto (period found in the allocation sequence), none. The values
// are not in that order: kObserved came last.
enum class IterationSource : uint8_t { kNone = 0, kAuto = 1, kPythonLoop = 2, kNvtx = 3, kApi = 4, kObserved = 5 };

const char *verdict_name(Verdict v);                   // "clean", "inconclusive", "growth", "leak"
const char *iteration_source_name(IterationSource s);  // "none", "auto", "python_loop", "nvtx", "api", "observed"

// Every threshold the verdicts use. The defaults are the documented ones (docs/report-format.md
// "Verdict rules"); front-ends expose a few of them as options.
struct AnalysisOptions {
  // NVTX ranges whose whole message matches this (case-insensitive, anchored) are iterations.
  // An invalid expression falls back to the default, with a line in Analysis::warnings.
  std::string iteration_range_regex = "(step|iter|iteration|train_step|training_step)([ _:#-]?[0-9]+)?";
  // Iterations ignored at the start of the primary loop; -1: max(1, 10% of them), at most 5.
  int warmup_iterations = -1;
  // Iterations after warm-up needed before leak, growth or clean can be said (else inconclusive).
  int min_post_warmup_iterations = 3;
  // Unmarked loops (the Python loop, then the allocation sequence's period): repetitions needed.
  int min_auto_repetitions = 4;
  // ... and the iterations found must span at least this share of all allocations (a Python loop:
  // of the allocations with Python frames).
  double min_auto_coverage = 0.5;

  // A fitted rate below this many bytes per iteration is no growth at all.
  double min_bytes_per_iteration = 1.0;
  // The fitted rise over the post-warm-up iterations must reach this fraction of the series'
  // last value (the site's live bytes for a leak, the device's for growth).
  double min_relative_growth = 0.01;
  // Robust fit quality (robust_fit.h: a median-based R^2) needed for a leak or growth.
  double min_fit_quality = 0.6;
  // Plateau rule: over the last half of the post-warm-up iterations the slope must still be at
  // least this fraction of the whole slope (and a leak's live count must still rise there).
  double min_late_slope_fraction = 0.25;
  // A site whose allocations outlive their iteration but are mostly freed later (more than this
  // fraction) is a pool that breathes, not a leak: it can only make the device's growth.
  double max_survivor_free_fraction = 0.5;

  // Bounds on what is kept for the report.
  size_t max_live_at_exit_sites = 100;
  size_t max_oom_events = 16;      // newest first
  size_t oom_history_events = 32;  // memory events before each OOM, same device
  size_t oom_top_sites = 20;

  // Loop advice (advice.h): the thresholds of each finding.
  AdviceOptions advice;

  // Folders that count as the user's code besides the program's own (--user-code,
  // GPULEAK_USER_CODE): user_code.h. Analysis::user_code is the setting they make.
  std::vector<std::string> user_code;

  // Keep every allocation's life (Analysis::lives, lives.h) for the viewer and the trace: memory
  // proportional to the allocations, so the report does without.
  bool record_lives = false;
};

// One device during one iteration.
struct IterationDevice {
  int device = 0;
  uint64_t live_end_bytes = 0;   // device live bytes when the iteration ended
  uint64_t peak_bytes = 0;       // highest device live bytes inside it (its start included)
  uint64_t allocated_bytes = 0;  // successful device allocations that began inside it
  uint64_t freed_bytes = 0;      // device memory released inside it (context resets included)
  uint64_t alloc_count = 0;
  uint64_t free_count = 0;
};

// A device's live bytes after the memory record at event position `position` (positions count
// the memory records in time order, from 0). Kept only where an iteration boundary follows, so a
// device's steps are at most one per stretch between boundaries in which it allocated or freed.
struct LiveStep {
  uint32_t position = 0;
  uint64_t live_bytes = 0;
};
// The live bytes the steps say the device held just before event position `position`.
uint64_t live_before(const std::vector<LiveStep> &steps, uint32_t position);
// The numbers of a device that neither allocated nor released memory during [begin, end): its
// live bytes at the boundaries, no allocations, no frees.
IterationDevice idle_row(int device, const std::vector<LiveStep> &steps, uint32_t begin, uint32_t end);

struct Iteration {
  std::string loop;      // loop name: the C API's label, the NVTX range name, or "auto"
  uint32_t index = 0;    // position within its loop, from 0
  bool primary = false;  // belongs to the loop the verdicts are computed on
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  // The event positions it holds, [begin_event, end_event).
  uint32_t begin_event = 0;
  uint32_t end_event = 0;
  // Only the devices that allocated or released memory inside it, ascending index: the numbers
  // are sparse (a capture may name 32 devices and mark a million iterations). They are
  // Analysis::iteration_cells[cells_begin, cells_end) (Analysis::active_devices(), one array for
  // all iterations, not a vector each: a loop of one allocation pair has a million iterations).
  // Every device's row, touched or not: Analysis::iteration_device().
  uint32_t cells_begin = 0;
  uint32_t cells_end = 0;
};

struct Forecast {
  double bytes_per_iteration = 0;  // the growth rate used
  // floor((total - held elsewhere - live at the end of the last iteration + pool free) / rate), or
  // within JAX's arena floor(pool free / rate)
  uint64_t iterations_left = 0;
  double seconds_left = 0;  // iterations_left * median iteration duration
  // What NVML saw on the device at exit beyond gpuleak's tracked live bytes: this process's
  // untracked memory (the CUDA context, memory not allocated through the tracked calls) and other
  // processes'. 0 when NVML was not read.
  uint64_t held_elsewhere_bytes = 0;
  // The free bytes inside a framework's pool at the end of the last primary iteration (its
  // segments less the objects in them): free for the leak first (PyTorch and CuPy release cached
  // blocks before they fail).
  uint64_t pool_free_bytes = 0;
  // JAX's arena holds every array and does not grow past its limit: the forecast is for the arena
  // filling (pool_free_bytes at the rate), not the device.
  bool within_arena = false;
};

inline constexpr uint32_t kMaxWarmupFits = 64;

struct DeviceSummary {
  int index = 0;
  std::string name;          // "" when the capture has no device record
  uint64_t total_bytes = 0;  // 0 when unknown
  uint64_t peak_live_bytes = 0;
  uint64_t live_at_exit_bytes = 0;  // at the end of the capture
  uint64_t alloc_count = 0;         // successful device allocations over the run
  uint64_t free_count = 0;          // released: frees, context resets, addresses reused unfreed
  Verdict verdict = Verdict::kClean;
  // The device total's fit over the post-warm-up iterations (0 when there are too few):
  // Theil-Sen slope, its robust fit quality, and the least-squares R^2 (informational).
  double growth_bytes_per_iteration = 0;
  double growth_r2 = 0;
  double growth_fit_quality = 0;
  // The same slope with the first k primary iterations left out, k = 0, 1, ... (at most
  // kMaxWarmupFits + 1 entries, at least two iterations each): what `gpuleak check --warmup k`
  // reads, so that the gate never fits a series itself. Empty when the device is not fitted.
  std::vector<double> growth_after_warmup;
  std::optional<Forecast> forecast;  // only when leaking or growing and total_bytes is known
  // NVML's view, from the device's last DeviceUsage record (capture format 1.1), when one was
  // written: the process's usage, and that minus gpuleak's own live bytes at the same moment (the
  // CUDA context, module globals, memory from calls gpuleak does not track; 0 if negative).
  std::optional<uint64_t> nvml_process_used_bytes;
  std::optional<uint64_t> untracked_bytes;
  std::optional<uint64_t> nvml_device_used_bytes;  // everyone's usage of the device
};

// A call site whose surviving allocations keep accumulating after warm-up.
struct Leak {
  int device = 0;
  Site site;
  // The loop whose passes it leaks over (Iteration::loop): the primary's, or another judged loop's
  // (issue #33); then every number below is per pass of that loop and indexes its passes.
  std::string loop;
  // Theil-Sen slope of the site's live bytes at iteration ends, from first_iteration (or the end of
  // warm-up, whichever is later) to the last iteration: the rate the leak has, not diluted by the
  // iterations before it started.
  double bytes_per_iteration = 0;
  // Live at the end of the last primary iteration: what the leak holds while the loop runs (a
  // program that frees everything at exit still shows what it leaked).
  uint64_t live_bytes = 0;
  uint64_t live_count = 0;
  // Live at the end of the capture (0 when the program released it at exit).
  uint64_t live_at_exit_bytes = 0;
  uint64_t live_at_exit_count = 0;
  // The first post-warm-up primary iteration that left an allocation from here still live at the
  // end of the last iteration, extended back over directly preceding iterations that did too (a
  // leak from the first step says 0; a one-time workspace in step 0 does not count).
  uint32_t first_iteration = 0;
  double confidence = 0;                    // fit_quality * m / (m + 2), m = post-warm-up iterations; 0..1
  double fit_quality = 0;                   // robust fit quality over the post-warm-up iterations
  double r2 = 0;                            // least-squares R^2 over the same iterations (informational)
  uint32_t iterations_observed = 0;         // post-warm-up iterations fitted
  std::vector<uint64_t> live_by_iteration;  // site live bytes at the end of each primary iteration
  // (capture format 1.7) Who keeps it: per retention path (an index into Capture::retentions),
  // the bytes of this site's allocations that held the path's address when it was sent, most
  // bytes first. Empty when no walk ran or no path reached this site's memory.
  std::vector<std::pair<uint32_t, uint64_t>> retained;
};

// One walk of the start-up hook (a Retention record of address 0): when, why, how long.
struct RetentionWalk {
  uint8_t event = 0;  // format::RetentionEvent: 1 exit, 2 out-of-memory
  uint64_t t_ns = 0;  // since the run's start
  uint64_t duration_ns = 0;
  uint64_t objects = 0;  // Python objects visited
  uint64_t paths = 0;    // paths sent
  std::string stopped;   // "none", "budget", "nodes", "depth" (or what the hook said)
};

// Live at the end of the capture, by site (device memory only), largest first.
struct LiveSite {
  int device = 0;
  Site site;
  uint64_t live_bytes = 0;
  uint64_t live_count = 0;
};

struct OomSiteLive {
  Site site;
  uint64_t bytes = 0;
  uint64_t count = 0;
};

struct HistoryEvent {
  uint64_t t_ns = 0;
  uint8_t op = 0;    // format::Op
  uint8_t kind = 0;  // format::Kind
  uint16_t api = 0;  // format::Api
  uint64_t address = 0;
  uint64_t size = 0;
  int32_t result = 0;
  Site site;
};

struct OomEvent {
  uint64_t t_ns = 0;
  int device = 0;
  uint64_t requested = 0;
  uint16_t api = 0;
  int32_t result = 0;
  Site site;                // the failed request's call site
  uint64_t free_bytes = 0;  // cuMemGetInfo at the failure (0 when unreadable)
  uint64_t total_bytes = 0;
  uint64_t live_bytes = 0;  // device live bytes gpuleak counted at that moment
  uint64_t live_count = 0;
  std::vector<OomSiteLive> live_by_site;  // top sites by bytes
  std::vector<HistoryEvent> history;      // oldest first
  bool recovered = false;                 // a later allocation on the same device succeeded
  // (format 1.7) A framework pool's own failure (JAX's arena), no CUDA call failing: its framework
  // (format::PoolFramework, 0 for a CUDA call) and figures (0 when not known).
  int pool_framework = 0;
  uint64_t pool_in_use_bytes = 0, pool_largest_free_bytes = 0, pool_limit_bytes = 0;
};

// A framework allocator's blocks (tensors) inside its segments (capture format 1.3, kind
// pool_block), by the site that allocated the segments: which tensors live in which segment.
struct SegmentBlock {
  Site site;  // where the blocks were handed out (the tensors' site)
  uint64_t live_at_exit_bytes = 0;
  uint64_t live_at_exit_count = 0;
  uint64_t peak_bytes = 0;  // the most this site held in these segments at one moment
};
struct SegmentSite {
  int device = 0;
  Site site;                // where the segments were allocated (VMM: the site of their first mapping)
  uint64_t count = 0;       // segments from here over the run (an allocation that ever held a block)
  uint64_t peak_bytes = 0;  // the most this site's segments held at one moment
  uint64_t live_at_exit_bytes = 0;
  uint64_t live_at_exit_count = 0;
  std::vector<SegmentBlock> blocks;  // largest at exit first, then by peak
};

// Counters over the whole capture.
struct Accounting {
  uint64_t events = 0;              // memory records read
  uint64_t allocations = 0;         // successful allocations of owned memory (device and host)
  uint64_t frees = 0;               // frees that matched one of them
  uint64_t failed_allocations = 0;  // Alloc records with a non-zero result
  uint64_t unmatched_frees = 0;     // successful frees of no known live allocation
  uint64_t graph_reservations = 0;  // allocations made during stream capture (not live)
  uint64_t not_owned = 0;           // imported memory and address reservations
  uint64_t context_resets = 0;
  uint64_t pool_blocks = 0;  // (format 1.3) blocks a framework allocator handed out (also in allocations)
  uint64_t host_pinned_live_at_exit_bytes = 0;
  uint64_t host_pinned_peak_bytes = 0;
};

// How the iterations were chosen (report: analysis.iteration_choice), and why none were found.
struct IterationChoice {
  // Observed levels (iteration_source observed): the one chosen. "" / 0 otherwise.
  std::string summary;  // "40 passes of the loop at serve.py:38-39", "120 calls of training_step at model.py:12-20"
  std::string kind;     // "loop" or "callback"
  std::string file, function;
  uint32_t first_line = 0, last_line = 0, passes = 0;
  uint32_t levels = 0;    // observed levels with enough passes to be candidates
  bool observed = false;  // the observer ran (sys.monitoring)
  std::string observer;   // its note: "Python 3.12.1: sys.monitoring tool 3", or why it could not run ("" none)
  // When no iterations were found: what was tried, one phrase each, and for a Python program the
  // `--loop FILE:LINE` that would mark the outermost user loop the allocations pass through.
  std::vector<std::string> tried;
  std::string suggested_loop;
};

// A loop of the run judged on its own passes (issue #33; report: loops[]). Judged: every marked
// loop (C API names, NVTX ranges) with enough passes; with no marks, of each group of observed
// levels nested in one another, the level that explains the memory (observed_loops.cpp); else the
// one loop found. The primary loop is one of them, and its numbers are Analysis's own.
struct LoopJudgment {
  std::string name;  // the Iteration::loop of its passes
  std::string kind;  // "loop" or "callback" (observed), "marked" (C API, NVTX), "inferred" (python_loop, auto)
  std::string file, function;  // observed: the code object holding it; "" otherwise
  uint32_t first_line = 0, last_line = 0;
  // The test that ran it: the innermost function of the loop's parent chain (its own function
  // first) named test* in a file named as pytest collects them (test_*.py, *_test.py), as
  // "test_file.py::TestClass::test_name"; "" when none.
  std::string test;
  bool primary = false;
  uint32_t passes = 0;
  uint32_t warmup = 0;                    // passes left out of the fits
  uint32_t threads = 0;                   // threads and asyncio tasks its passes ran on (observed; 0: not known)
  uint64_t start_ns = 0, end_ns = 0;      // its first pass's start, its last pass's end, since the run's start
  Verdict verdict = Verdict::kClean;      // worst over its devices, judged on its passes alone
  double growth_bytes_per_iteration = 0;  // the largest device slope over its passes
  std::vector<Leak> leaks;                // largest bytes_per_iteration first
  // A setup loop (report 1.2): not the primary, run outside any test, its last pass ended before
  // the primary loop's first pass began. What such a loop keeps pass after pass is what the
  // program builds before its main work (`layers = [Linear(...).to(dev) for _ in range(n)]`): a
  // bounded amount that no later pass adds to, so it is not judged a leak. Its verdict stays
  // clean, `leaks` empty, and `kept_bytes` says what the sites that would have leaked held at its
  // last pass. A loop that runs again after the main loop began is judged as any other.
  bool setup = false;
  uint64_t kept_bytes = 0;
};

struct Analysis {
  Verdict verdict = Verdict::kClean;  // worst over devices
  IterationSource iteration_source = IterationSource::kNone;
  IterationChoice iteration_choice;
  std::string primary_loop;  // the loop the verdicts use ("" when none)
  uint32_t primary_iterations = 0;
  uint32_t warmup_iterations = 0;         // primary iterations skipped as warm-up
  uint64_t duration_ns = 0;               // last record's time
  format::AllocatorModes allocator_mode;  // what the allocation pattern and environment suggest
  // When allocator_mode says a caching allocator's segments were seen: a leak smaller than what
  // the segments cache may be hidden, and a per-tensor run would show it. "" otherwise.
  std::string allocator_note;
  std::vector<DeviceSummary> devices;  // ascending index
  std::vector<Iteration> iterations;   // every loop, by start time
  // Every iteration's active devices (Iteration::cells_begin), iteration after iteration.
  std::vector<IterationDevice> iteration_cells;
  // Per device of `devices` (same order): its live bytes as steps (LiveStep), the rows of the
  // iterations it did not touch.
  std::vector<std::vector<LiveStep>> device_live;
  // Every judged loop's leaks (Leak::loop), largest bytes_per_iteration first; a site leaking in
  // several loops is listed once, for the primary or the loop judged first.
  std::vector<Leak> leaks;
  // Every judged loop, by first pass start (issue #33). A device's verdict, and so `verdict`, is
  // the worst of the primary's and the other loops' leak or growth on it (their `inconclusive`
  // does not count: a loop of a few passes beside a judged one is no reason to doubt the run).
  std::vector<LoopJudgment> loops;
  std::vector<LiveSite> live_at_exit;  // at most max_live_at_exit_sites
  uint64_t live_at_exit_sites = 0;     // how many sites had live memory before the cut
  std::vector<OomEvent> ooms;          // newest first
  Accounting accounting;
  std::vector<std::string> warnings;  // options that could not be honoured
  std::vector<Advice> advice;         // loop advice findings (advice.h), in AdviceKind order
  // When the capture has a framework allocator's blocks (format 1.3): its segments by site, devices
  // ascending then most bytes at exit first; and what the framework said when its tracker attached
  // ("" when nothing attached). Then the leaks, live_at_exit and OOM sites are the blocks', and
  // the segments, which hold them, are no leak candidates (they still make the device bytes).
  std::vector<SegmentSite> segments;
  std::string pool_tracker;
  // (capture format 1.7) The start-up hook's walks, in time order (Leak::retained has their paths).
  std::vector<RetentionWalk> retention_walks;
  // Whose code a frame is (user_code.h) for this capture under AnalysisOptions::user_code: the
  // outputs' headlines draw the same line as the analysis did.
  UserCode user_code;
  // With AnalysisOptions::record_lives: every owned allocation's life from this analysis's replay.
  std::shared_ptr<const Lives> lives;

  // The devices that allocated or released memory during iterations[iteration], ascending index.
  struct Cells {
    const IterationDevice *first = nullptr, *last = nullptr;
    const IterationDevice *begin() const { return first; }
    const IterationDevice *end() const { return last; }
    size_t size() const { return static_cast<size_t>(last - first); }
    const IterationDevice &operator[](size_t i) const { return first[i]; }
  };
  Cells active_devices(size_t iteration) const;
  // Device `device` (an index into `devices`) during iterations[iteration]: its entry in
  // active_devices(), or its idle_row(). O(log) in the active devices and the device's steps.
  IterationDevice iteration_device(size_t iteration, size_t device) const;
};

// Who keeps a group of leaks (a leak group: the leaks of one user line): the retention path that
// holds the most of their bytes, summed over the leaks and over the records of one text (one
// record per object: the tensors of one list share their path), the earliest on a tie; returned as
// the index of its earliest record in capture.retentions, with those bytes in *bytes; -1 when no
// path holds any.
int64_t retained_by(const format::Capture &capture, const std::vector<const Leak *> &leaks, uint64_t *bytes);

// Runs the whole analysis. Never throws for any capture content; the capture is only read.
Analysis analyze(const format::Capture &capture, const AnalysisOptions &options = {});

// The same analysis over memory records that stay outside the capture (capture.memory is
// ignored): `memory` is replayed a few times in time order, and what the analysis keeps is
// proportional to live allocations, call sites and iterations, not to events. This is how
// `gpuleak report` reads a large capture (format::read_capture_stream). When a replay fails
// (memory.failed()), the result covers the records read before the failure: check it.
Analysis analyze(const format::Capture &capture, const format::MemorySource &memory,
                 const AnalysisOptions &options = {});

// What the drawings of a capture read (the trace, the viewer, the exports): `analysis`'s lives
// when it recorded them over capture.memory (AnalysisOptions::record_lives, as the front door asks
// when it keeps the records), else those of a default analysis of `capture` that records them (a
// life depends on no option). Never null.
std::shared_ptr<const Lives> lives_of(const format::Capture &capture, const Analysis &analysis);

}  // namespace gpuleak::analysis
