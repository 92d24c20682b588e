// What the HTML viewer needs beyond the report, computed from the capture: memory over time per
// device, live memory by call site at the end, at the peak and at each out-of-memory failure (the
// flame graphs), and which iterations' allocations outlived which (the temporal view). Layout:
// docs/viewer.md "The embedded data". Like the report it renders src/analysis and decides nothing:
// verdicts, leaks and forecasts are read from the report only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include <nlohmann/json.hpp>

#include "analysis/analysis.h"
#include "format/capture_reader.h"
#include "output/frame.h"
#include "output/sites.h"

namespace gpuleak::output::view {

inline constexpr const char *kViewSchema = "gpuleak.view/1";

struct ViewOptions {
  // Points of each device's timeline; longer series are thinned by the one decimation rule
  // (output/curve_decimation.h: each bucket's min, max and last), so peaks survive. Roughly 25
  // bytes of HTML per point.
  size_t max_timeline_points = 1'000'000;
  // Call sites kept per flame graph snapshot (largest first); the rest is summed as "other".
  size_t max_snapshot_sites = 10'000;
};

// The "view" object of the embedded document. `analysis` must come from analyze(capture) and
// `sites` must be the ones the report was made with, so that site ids and headlines match the
// report's. Never throws for any capture content.
nlohmann::json make_view_data(const format::Capture &capture, const analysis::Analysis &analysis, Sites &sites,
                              const ViewOptions &options = {});
// The same with Sites(symbolize, site_options(capture, analysis.user_code)).
nlohmann::json make_view_data(const format::Capture &capture, const analysis::Analysis &analysis,
                              const SymbolizeFn &symbolize, const ViewOptions &options = {});

}  // namespace gpuleak::output::view
