// The report: one JSON document per analyzed capture ("schema": "gpuleak.report/1"), documented
// field by field in docs/report-format.md. It renders an analysis::Analysis and decides nothing
// itself: every verdict and number comes from src/analysis.
//
// Strings from the program (function names, file paths, NVTX names, environment values, the host
// name) are untrusted bytes: they are copied as they are, and dump_report() turns any invalid
// UTF-8 into U+FFFD, so the output is always valid JSON.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "analysis/analysis.h"
#include "format/capture_reader.h"
#include "output/frame.h"
#include "output/report_schema.h"
#include "output/sites.h"

namespace gpuleak::output {

// What the front-end knows that the capture does not.
struct ReportContext {
  // Version of the gpuleak that analyzes; used when the capture carries none.
  std::string gpuleak_version;
};

// Builds the report, naming every call site through `sites` (sites.h: frames, site_id, headline).
nlohmann::json make_report(const format::Capture &capture, const analysis::Analysis &analysis, Sites &sites,
                           const ReportContext &ctx);
// The same with Sites(symbolize, site_options(capture, analysis.user_code)).
nlohmann::json make_report(const format::Capture &capture, const analysis::Analysis &analysis,
                           const SymbolizeFn &symbolize, const ReportContext &ctx);

// The report's text and a tree for its readers at once, for `gpuleak report` and `gpuleak run`:
// `text` is dump_report(make_report(...)) byte for byte, with the iterations written straight from
// the analysis; `tree` is make_report(...) with each listed iteration a null (text_summary and
// report_markdown read only how many there are). A loop of one allocation pair lists 10,000
// iterations: building, writing and freeing their objects was a sixth of the at-exit analysis.
struct ReportDocument {
  nlohmann::json tree;
  std::string text;
};
ReportDocument make_report_document(const format::Capture &capture, const analysis::Analysis &analysis, Sites &sites,
                                    const ReportContext &ctx);

// The report as text: 2-space indentation, invalid UTF-8 replaced by U+FFFD, and "</" written
// "<\/" so that the text can sit inside an HTML <script> element unchanged. Always valid JSON.
std::string dump_report(const nlohmann::json &report);

// CLOCK_REALTIME nanoseconds as ISO-8601 UTC with milliseconds ("2026-11-29T14:02:11.482Z").
std::string iso8601_utc(uint64_t realtime_ns);

}  // namespace gpuleak::output
