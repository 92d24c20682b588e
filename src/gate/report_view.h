// The CI gate's view of a report ("schema": "gpuleak.report/1", docs/report-format.md): the few
// fields the gate, the diff and the writers read, typed and checked once, so that the rest of
// src/gate never touches raw JSON. The gate never re-decides a verdict: it reads the verdicts,
// rates and forecasts the analysis wrote and weighs them against budgets.
//
// Reading is strict about what makes a file unusable (not JSON, cut short, not a gpuleak report,
// a newer major version, a known field of the wrong type) and lenient about what a reader must
// ignore (unknown fields) or may miss (optional fields absent: null / empty).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpuleak::gate {

// Bad input (unreadable, truncated, foreign, newer, malformed file or option): one line, no
// trailing period, meant to be printed after "gpuleak: " with exit status 2.
struct GateError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Frame {
  std::string kind;  // "native" or "python"
  std::optional<std::string> function, file, module;
  std::optional<int64_t> line;
};

// A call site's stack, innermost first (native frames, then Python frames).
struct Stack {
  std::vector<Frame> frames;
  // The report's headline: the frame the analysis chose to show (the innermost frame of the
  // user's own code) and its text. Absent in reports written before headlines.
  std::optional<Frame> headline;
  std::optional<std::string> headline_text;
  // The headline's via: the library code the user's line called (absent: none or older report).
  std::optional<std::string> via_function, via_file;
  std::optional<int64_t> via_line;
  // The headline's caller (headline.caller): the user's line that called a helper's function.
  // Absent when the headline is not in a helper, and in older reports.
  std::optional<Frame> caller;

  // The frame a person should be sent to: the headline; in a report without one, the innermost
  // Python frame with a file and line, else the innermost native frame with a file and line.
  // nullptr when there is none.
  const Frame *user_frame() const;
  // The headline's text ("train.py:41 in train_step (via ...)"); in a report without one,
  // "function (file:line)" of user_frame(), else the innermost function, else "unknown site".
  std::string describe() const;
  // "Linear.forward (torch/nn/modules/linear.py:125)": the via, else describe().
  std::string via_text() const;
};

struct Forecast {
  uint64_t iterations_left = 0;
  double seconds_left = 0;
};

struct Device {
  int index = 0;
  std::optional<std::string> name;
  std::optional<uint64_t> total_bytes;
  uint64_t peak_live_bytes = 0;
  uint64_t live_at_exit_bytes = 0;
  std::string verdict;
  double growth_bytes_per_iteration = 0;
  // growth_after_warmup[k]: the analysis's slope with the first k primary iterations left out
  // (absent in reports written before it: empty).
  std::vector<double> growth_after_warmup;
  std::optional<Forecast> forecast;
};

// One device's numbers at the end of one iteration.
struct IterationDevice {
  int index = 0;
  uint64_t live_end_bytes = 0;
  uint64_t peak_bytes = 0;
};

struct Iteration {
  int64_t index = 0;
  std::string loop;
  bool primary = false;
  std::vector<IterationDevice> devices;
};

struct Leak {
  std::string site_id;
  int device = 0;
  double bytes_per_iteration = 0;
  uint64_t live_bytes = 0;
  uint64_t live_count = 0;
  int64_t first_iteration = 0;
  double confidence = 0;
  std::vector<uint64_t> live_by_iteration;  // per primary iteration; may be empty
  Stack stack;
  // Who keeps it (issue #30): its leak group's retained_by text, "" when none (older reports too).
  std::string retained_by;
  // (1.1) The loop whose passes it leaks over (Report::loops' name; its rate is per pass of that
  // loop); "" in older reports: the primary loop.
  std::string loop;
};

// One finding per device and user line (leak_groups[]): the unit the gate judges and counts.
// Reports written before leak_groups get one group per leak.
struct LeakGroup {
  int device = 0;
  double bytes_per_iteration = 0;  // the analysis's sum over its sites
  uint64_t live_bytes = 0, live_count = 0;
  int64_t first_iteration = 0;
  std::optional<Frame> headline;  // the user's line; absent in a group made from one leak
  std::optional<Frame> caller;    // the headline's caller (Stack::caller), when it has one
  std::string text;               // "train.py:52 in train_step"; from one leak: its describe()
  std::vector<size_t> sites;      // indexes into Report::leaks, largest first

  const std::string &describe() const { return text; }
};

// A loop of the run judged on its own passes (loops[], gpuleak.report/1.1, issue #33); its leaks
// are in Report::leaks, named by Leak::loop. Absent in older reports: Report::loops is empty.
struct Loop {
  std::string name, kind;
  std::optional<std::string> file, function, test;
  std::optional<int64_t> first_line;
  bool primary = false;
  uint64_t passes = 0;
  std::string verdict;
  double growth_bytes_per_iteration = 0;

  // "test_a.py::test_b, the loop at test_a.py:12 in test_b", "loop 'train'".
  std::string describe() const;
  // The user location baselines match loops by: "FILE:LINE" (the file's base name) of an
  // observed loop, the name of a marked one.
  std::string location() const;
};

// What held the memory when an allocation failed, one call site (oom.events[].live_by_site[]).
struct OomSite {
  uint64_t bytes = 0, count = 0;
  Stack stack;
};

struct OomEvent {
  int device = 0;
  uint64_t requested_bytes = 0;
  uint64_t free_bytes = 0, total_bytes = 0;
  uint64_t live_bytes = 0;
  bool recovered = false;
  std::string api;
  std::string site_id;
  Stack stack;
  std::vector<OomSite> live_by_site;  // largest first, as the report lists them
};

struct Report {
  std::string path;     // where it was read from ("" when parsed from memory)
  std::string program;  // run.program, else the file's basename
  std::optional<int64_t> pid, rank;
  std::string verdict;  // leak, growth, inconclusive, clean (others kept as they are)
  std::string iteration_source;
  int64_t warmup_iterations = 0;  // analysis.warmup_iterations (0 when absent)
  uint64_t events_dropped = 0;
  std::optional<uint64_t> capture_events;  // run.capture.events; absent in hand-made reports
  std::optional<std::string> tracking_disabled;
  bool capture_truncated = false;
  std::vector<Device> devices;
  std::vector<Iteration> iterations;
  std::vector<Leak> leaks;
  std::vector<LeakGroup> leak_groups;  // every leak is in exactly one
  std::vector<OomEvent> ooms;          // newest first
  std::vector<Loop> loops;             // by first pass; empty in reports before 1.1

  const Device *device(int index) const;
  // The loop a leak was judged in (its Leak::loop, or the primary); nullptr when loops[] has none.
  const Loop *loop_of(const Leak &leak) const;
  // A short name for messages and JUnit: "program (pid N[, rank R])".
  std::string display_name() const;
  // Live bytes of `device` at the end of each post-warm-up primary iteration, in order.
  std::vector<uint64_t> steady_live(int device, int64_t warmup) const;
};

// Parses and checks a report document. `path` only names the source in error messages.
// Throws GateError.
Report parse_report(const nlohmann::json &doc, const std::string &path);

// Reads `path` and parses it: a missing or unreadable file, text that is not JSON or is cut
// short, JSON that is not a gpuleak report, a newer major schema, or a malformed field each give
// a GateError of one line naming the file.
Report load_report(const std::string &path);

// Parses JSON text with the same one-line errors as load_report (used for config files too).
nlohmann::json parse_json_text(const std::string &text, const std::string &path);
std::string read_text_file(const std::string &path);

}  // namespace gpuleak::gate
