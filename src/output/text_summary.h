// The human summary of an analysis, a few lines for a terminal: what `gpuleak run` and
// `gpuleak report` print. Renders src/analysis's decisions; decides nothing.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace gpuleak::output {

// "1.0 MiB", "512 B": binary units, one decimal.
std::string human_bytes(double bytes);

// What a device's forecast counted beyond the tracked live bytes (report 1.3), said after its
// phrase: ", when JAX's arena is full (...)" or ", with the ... held outside the tracked
// allocations"; "" when nothing. The summary and the Markdown report say it alike.
std::string forecast_basis(const nlohmann::json &forecast);

// Where a report entry (leak, advice, live_at_exit) points, in a few words: its headline's text
// ("train.py:41 in train_step (via Linear.forward, torch/nn/modules/linear.py:134)"); for a
// report from before headlines, the innermost Python frame, else the innermost named frame.
std::string site_text(const nlohmann::json &entry);

// When a "kept by" path was taken, said after it (" (at the out-of-memory)"): at exit is the
// default and says nothing. The summary and the Markdown report say it alike.
std::string retention_when(const std::string &event);

// The advice[] findings, one line each (at most max_lines, then a count); "" when none.
// text_advice.cpp.
std::string advice_summary(const nlohmann::json &report, size_t max_lines = 6);

// The loops[] of a report (issue #33): a block per loop that leaks or grows, a line counting the
// others; "" when the report has one loop and no test. text_loops.cpp.
std::string loops_summary(const nlohmann::json &report);
// A loop of loops[] in a few words: "test_a.py::test_b, the loop at test_a.py:12-14 in test_b".
std::string loop_label(const nlohmann::json &loop);

// The summary of one report (as built by make_report), ending with a newline.
std::string text_summary(const nlohmann::json &report, const std::string &report_path);

}  // namespace gpuleak::output
