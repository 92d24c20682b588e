// `gpuleak export --format collapsed`: the device memory live at one moment, by call stack, in
// the folded-stack format of flamegraph.pl and speedscope: one line per stack,
//
//   cuda:0;main (train.py:40);step (model.py:12);cache_activation (leaky.cpp:14) 1048576
//
// root first, innermost frame last, then a space and the live bytes. The first frame names the
// device. Frames are "function (file:line)" (sites.h frame_label); in names, ';' becomes
// ',', line breaks and other control characters become spaces, and invalid UTF-8 becomes U+FFFD,
// so every line splits the same way in every tool. Lines are sorted; identical stacks are summed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "format/capture_reader.h"
#include "output/sites.h"

namespace gpuleak::output::trace {

enum class Moment {
  kEnd,   // the end of the capture (what was never freed)
  kPeak,  // each device at its own peak (the first time it was reached)
  kOom,   // the newest out-of-memory failure, its device, just before the failed request
};

// Parses "end", "peak", "oom"; false for anything else.
bool parse_moment(const std::string &text, Moment *out);
const char *moment_name(Moment at);  // "end", "peak", "oom"

// The folded stacks. False with a one-line reason when the moment does not exist (kOom in a
// capture without an out-of-memory failure). The bytes on each device's lines add up to the
// analysis' number for that moment (live_at_exit_bytes, peak_live_bytes, OomEvent::live_bytes).
bool collapsed_stacks(const format::Capture &capture, const analysis::Analysis &analysis, Sites &sites, Moment at,
                      std::string *out, std::string *error);
bool collapsed_stacks(const format::Capture &capture, const analysis::Analysis &analysis, const SymbolizeFn &symbolize,
                      Moment at, std::string *out, std::string *error);

// The allocations live at one moment, grouped by (device, call site): what every export format
// draws. In device order, then site order (stable for one capture). Frames innermost first,
// as Sites gives them; an empty stack is a site that could not be resolved.
struct LiveStack {
  int device = 0;
  Stack frames;
  uint64_t bytes = 0;
  uint64_t count = 0;  // allocations
};
bool live_stacks(const format::Capture &capture, const analysis::Analysis &analysis, Sites &sites, Moment at,
                 std::vector<LiveStack> *out, std::string *error);

// Iterations `first` to `last` (inclusive) of the loop the verdicts are computed on
// (Iteration::primary), numbered from 0.
struct IterationSpan {
  uint32_t first = 0, last = 0;
};
// Parses "A:B" (A <= B) or "A" (A:A); false for anything else.
bool parse_iteration_span(const std::string &text, IterationSpan *out);

// The allocations born during the span and still live when its last iteration ended: what the
// span added for good. Two spans from the same start, exported as pprof profiles, diff into the
// growth between their ends (`pprof -diff_base`). False with a one-line reason when the capture
// has no such iterations.
bool live_stacks_in_iterations(const format::Capture &capture, const analysis::Analysis &analysis, Sites &sites,
                               IterationSpan span, std::vector<LiveStack> *out, std::string *error);

// The folded stacks of `live` (the text collapsed_stacks returns).
std::string collapsed_stacks(const std::vector<LiveStack> &live);

// A frame name made safe for the folded format (see above).
std::string folded_frame(const std::string &name);

}  // namespace gpuleak::output::trace
