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

// The folded stacks. False with a one-line reason when the moment does not exist (kOom in a
// capture without an out-of-memory failure). The bytes on each device's lines add up to the
// analysis' number for that moment (live_at_exit_bytes, peak_live_bytes, OomEvent::live_bytes).
bool collapsed_stacks(const format::Capture &capture, const analysis::Analysis &analysis, Sites &sites, Moment at,
                      std::string *out, std::string *error);
bool collapsed_stacks(const format::Capture &capture, const analysis::Analysis &analysis, const SymbolizeFn &symbolize,
                      Moment at, std::string *out, std::string *error);

// A frame name made safe for the folded format (see above).
std::string folded_frame(const std::string &name);

}  // namespace gpuleak::output::trace
