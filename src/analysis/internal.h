// What the analysis stages hand each other. Private to src/analysis: nothing outside includes it.
//
// The stages, in the order analyze() (analysis.cpp) runs them:
//   ledger.cpp            make_timeline, intern_sites: memory records in effective-time order
//   iterations.cpp        spans_from_markers, spans_from_nvtx, place_spans, primary_loop
//   period_detection.cpp  spans_from_period: iterations found in the allocation sequence
//   ledger.cpp            replay: every allocation's life, device totals, per-iteration numbers
//   verdicts.cpp          decide: leaks, growth, per-device and overall verdicts
//   forecast.cpp          forecast: when a leaking or growing device runs out
//   oom.cpp               oom_events: what was live at each out-of-memory failure
#pragma once

#include <cstdint>
#include <limits>
#include <regex>
#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "format/address_space.h"
#include "format/capture_reader.h"

namespace gpuleak::analysis::detail {

inline constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

// Address spaces a free is matched in (a VMM handle may equal a device pointer value).
using Space = format::AddressSpace;
inline Space space_of(uint8_t kind) { return format::address_space_of(kind); }
inline bool on_device(Space s) { return s == Space::kDevicePtr || s == Space::kArray || s == Space::kVmm; }
inline int device_of(int16_t device) { return device < 0 ? 0 : device; }
// Monotonic time -> ns since the run's start (clamped at 0).
inline uint64_t since_start(uint64_t ts, uint64_t anchor) { return ts > anchor ? ts - anchor : 0; }

// The memory records in effective-time order. Positions in this order ("event positions") are
// how every later stage refers to a moment: position p means "after the first p events".
// Refers to the capture's records in place: the capture must outlive it.
struct Timeline {
  const format::MemoryRecord *memory = nullptr;
  std::vector<uint32_t> order;  // indices into Capture::memory; empty when file order is time order
  uint32_t size = 0;
  uint64_t end_ns = 0;  // latest timestamp of any record (memory, NVTX, marker, OOM)

  const format::MemoryRecord &at(uint32_t k) const { return memory[order.empty() ? k : order[k]]; }
  uint64_t ts(uint32_t k) const { return at(k).ts_ns; }
  // The first position whose time is >= t (lower_bound) or > t (upper_bound); size when none.
  uint32_t lower_bound(uint64_t t) const;
  uint32_t upper_bound(uint64_t t) const;
};
Timeline make_timeline(const format::Capture &capture);

// Call sites interned to dense indices.
struct SiteTable {
  std::vector<Site> sites;
  // Successful allocations of owned memory in time order, (event position, site): the sequence
  // automatic period detection reads, and, one for one, the allocations the ledger creates.
  std::vector<std::pair<uint32_t, uint32_t>> alloc_sequence;
  std::vector<std::pair<uint32_t, uint32_t>> map_sequence;  // successful VMM maps, likewise
};
SiteTable intern_sites(const Timeline &timeline);

// One iteration while it is being found: raw monotonic times, and the events it holds as the
// half-open range [begin, end) of event positions.
struct Span {
  std::string loop;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t begin = 0;
  uint32_t end = 0;
};

std::vector<Span> spans_from_markers(const format::Capture &capture, uint64_t capture_end_ns);
std::vector<Span> spans_from_nvtx(const format::Capture &capture, const std::regex &pattern, uint64_t capture_end_ns);
// Sets begin/end from the times: events at or after start_ns and at or before end_ns.
void place_spans(const Timeline &timeline, std::vector<Span> *spans);
// The loop with the most iterations (ties: the one that started first).
std::string primary_loop(const std::vector<Span> &spans);
// Spans come back with begin/end set, loop "auto"; empty when no period repeats often enough.
std::vector<Span> spans_from_period(const Timeline &timeline, const SiteTable &sites, int min_repetitions,
                                    double min_coverage);

// One allocation's life. birth/death are event positions; death == kNone: alive at the end.
struct Alloc {
  uint64_t size = 0;
  uint32_t birth = 0;
  uint32_t death = kNone;
  uint32_t site = 0;
  uint16_t slot = 0;  // device slot (Ledger::devices)
  Space space = Space::kDevicePtr;
};

struct DeviceTotals {
  uint64_t live = 0;  // at the end of the capture
  uint64_t peak = 0;
  uint64_t allocs = 0;
  uint64_t frees = 0;
};

struct Ledger {
  std::vector<int> devices;                            // slot -> device index, ascending
  std::vector<Alloc> allocs;                           // owned memory (device and host), in birth order
  std::vector<DeviceTotals> totals;                    // per slot
  std::vector<std::vector<IterationDevice>> per_span;  // per span, per slot
  Accounting accounting;
  int slot_of(int device) const;  // -1 when the device was never seen
};
Ledger replay(const format::Capture &capture, const Timeline &timeline, const SiteTable &sites,
              const std::vector<Span> &spans);

// The iterations the verdicts are computed on: the primary loop's spans in end order.
struct Primary {
  std::vector<uint32_t> spans;    // indices into the span list
  std::vector<uint32_t> end_pos;  // spans[i]'s end position, ascending
  uint32_t warmup = 0;
};

// Fills out->leaks, the devices' verdicts and growth fits, and out->verdict.
void decide(const Ledger &ledger, const SiteTable &sites, const Primary &primary, const AnalysisOptions &options,
            Analysis *out);
void forecast(const std::vector<Span> &spans, const Primary &primary, const Ledger &ledger, Analysis *out);
std::vector<OomEvent> oom_events(const format::Capture &capture, const Timeline &timeline, const SiteTable &sites,
                                 const Ledger &ledger, const AnalysisOptions &options);

}  // namespace gpuleak::analysis::detail
