// `gpuleak check REPORT...`: the CI gate. Exit 0 within budget; 1 when a leak, growth, a
// regression against the baseline or an unrecovered out-of-memory is found (and, with
// --fail-on-inconclusive, an inconclusive run); 2 on bad input or usage. The decisions live in
// src/gate (evaluate.h); this file wires options, the config file and the outputs.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli.h"
#include "gate/budgets.h"
#include "gate/evaluate.h"
#include "gate/report_view.h"
#include "gate/sizes.h"
#include "gate/writers.h"

namespace gpuleak::cli {

namespace {

struct CheckOptions {
  std::vector<std::string> reports;
  std::string config;
  std::optional<std::string> max_leak, max_growth, tolerance;
  std::vector<std::string> max_peak, loop_budgets;
  std::optional<int64_t> min_oom_horizon, warmup;
  bool fail_on_inconclusive = false;
  std::vector<std::string> baselines, suppressions;
  std::string junit, format = "auto", summary;
};

bool env_is(const char *name, const char *value) {
  const char *v = std::getenv(name);
  return v && std::strcmp(v, value) == 0;
}

// Flags override the config file: the file is applied first, then each flag that was given.
gate::GateConfig build_config(const CheckOptions &o) {
  gate::GateConfig c;
  if (!o.config.empty()) gate::load_config_file(o.config, &c);
  gate::Budgets &b = c.budgets;
  if (o.max_leak) b.max_leak_per_iteration = gate::parse_size(*o.max_leak, "--max-leak-per-iteration");
  if (o.max_growth) b.max_growth = gate::parse_size(*o.max_growth, "--max-growth");
  for (const std::string &p : o.max_peak) gate::apply_max_peak(p, "--max-peak", &b);
  // Flags come first: the first rule that matches a loop wins, and flags win over the file.
  gate::Budgets flags;
  for (const std::string &l : o.loop_budgets) gate::apply_loop_budget(l, "--loop-budget", &flags);
  b.loops.insert(b.loops.begin(), flags.loops.begin(), flags.loops.end());
  if (o.min_oom_horizon) b.min_oom_horizon = static_cast<uint64_t>(*o.min_oom_horizon);
  if (o.warmup) b.warmup = *o.warmup;
  if (o.fail_on_inconclusive) b.fail_on_inconclusive = true;
  if (o.tolerance) b.tolerance = gate::parse_percent(*o.tolerance, "--tolerance");
  if (!o.baselines.empty()) c.baselines = o.baselines;
  for (const std::string &s : o.suppressions) c.suppressions.load_file(s);
  return c;
}

// One baseline applies to every report; with several, each report takes the one of the same
// program and rank.
const gate::Report *baseline_for(const gate::Report &r, const std::vector<gate::Report> &baselines) {
  if (baselines.size() == 1) return &baselines[0];
  for (const gate::Report &b : baselines)
    if (b.program == r.program && b.rank == r.rank) return &b;
  return nullptr;
}

void append_file(const std::string &path, const std::string &text) {
  FILE *f = std::fopen(path.c_str(), "a");
  if (!f) throw UsageError{"cannot append to " + path + ": " + std::strerror(errno)};
  std::fwrite(text.data(), 1, text.size(), f);
  if (std::fclose(f) != 0) throw UsageError{"cannot write " + path + ": " + std::strerror(errno)};
}

// A per-device peak budget for a device no report has is a typo or a stale config: a gate that
// ignored it would pass a budget nobody checks.
void check_peak_devices(const gate::Budgets &b, const std::vector<gate::ReportOutcome> &outcomes) {
  for (const auto &[index, bytes] : b.max_peak_by_device) {
    std::string have;
    bool found = false;
    for (const gate::ReportOutcome &o : outcomes)
      for (const gate::Device &d : o.report.devices) {
        found = found || d.index == index;
        const std::string i = std::to_string(d.index);
        if ((" " + have + ",").find(" " + i + ",") == std::string::npos) have += (have.empty() ? "" : ", ") + i;
      }
    if (!found)
      throw gate::GateError("max peak for device " + std::to_string(index) + ": no report has device " +
                            std::to_string(index) + " (devices: " + (have.empty() ? "none" : have) + ")");
  }
}

int check_command(const CheckOptions &o) {
  if (o.format != "auto" && o.format != "plain" && o.format != "github" && o.format != "markdown")
    throw UsageError{"check: --format must be auto, plain, github or markdown"};
  std::vector<gate::ReportOutcome> outcomes;
  gate::GateConfig config;
  try {
    config = build_config(o);
    // Read everything before judging anything: bad input is exit 2 with no partial verdict.
    std::vector<gate::Report> reports, baselines;
    // In the order of their paths: the output and the JUnit names do not depend on the glob's.
    std::vector<std::string> paths = o.reports;
    std::sort(paths.begin(), paths.end());
    for (const std::string &path : paths) reports.push_back(gate::load_report(path));
    for (const std::string &path : config.baselines) baselines.push_back(gate::load_report(path));
    for (gate::Report &r : reports) {
      const gate::Report *base = baseline_for(r, baselines);
      std::string missing = base || baselines.empty() ? "" : r.program;
      outcomes.push_back(gate::evaluate(std::move(r), config.budgets, config.suppressions, base));
      if (!missing.empty()) {
        gate::Finding f;
        f.kind = gate::Kind::kCapture;
        f.status = gate::Status::kWarn;
        f.message = "no baseline report is of program " + missing + " (rank included): not compared";
        outcomes.back().findings.push_back(std::move(f));
      }
    }
    gate::judge_empty_captures(&outcomes);
    check_peak_devices(config.budgets, outcomes);
  } catch (const gate::GateError &e) {
    throw UsageError{e.what()};
  }

  const bool github = o.format == "github" || (o.format == "auto" && env_is("GITHUB_ACTIONS", "true"));
  gate::WriteOptions wo;
  if (const char *ws = std::getenv("GITHUB_WORKSPACE")) wo.workspace = ws;
  std::string text =
      o.format == "markdown" ? gate::write_markdown(outcomes) : gate::write_plain(outcomes, config.suppressions, wo);
  if (github) text = gate::write_github_annotations(outcomes, wo) + text;
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);

  if (!o.junit.empty()) write_file_atomically(o.junit, gate::write_junit(outcomes));
  std::string summary = o.summary;
  if (summary.empty() && github)
    if (const char *s = std::getenv("GITHUB_STEP_SUMMARY"); s && *s) summary = s;
  if (!summary.empty()) append_file(summary, gate::write_markdown(outcomes));

  for (const gate::ReportOutcome &out : outcomes)
    if (out.failed()) return 1;
  return 0;
}

}  // namespace

void register_check(CLI::App &app, Action *action) {
  auto o = std::make_shared<CheckOptions>();
  auto *cmd = app.add_subcommand(
      "check", "CI gate: exit 0 within budget, 1 on a leak, growth, regression or unrecovered OOM, 2 on bad input");
  cmd->footer(input_limits_help());
  cmd->add_option("reports", o->reports, "Report files (.report.json)")->required();
  cmd->add_option("--config", o->config, "JSON file of budgets, baseline, suppressions (docs/ci.md)");
  cmd->add_option("--max-leak-per-iteration", o->max_leak, "Budget for each leaking site, e.g. \"1 MiB\" (default 0)");
  cmd->add_option("--loop-budget", o->loop_budgets,
                  "Leak budget of the loops a PATTERN names, PATTERN=SIZE: a test (test_a.py::test_b), function, loop "
                  "name or FILE:LINE, * for any text (repeat the flag for several; the first match wins)");
  cmd->add_option("--max-growth", o->max_growth, "Budget per iteration for a device whose verdict is growth");
  cmd->add_option("--max-peak", o->max_peak,
                  "Peak live memory per device: SIZE, or DEVICE=SIZE (repeat the flag for several)");
  cmd->add_option("--min-oom-horizon", o->min_oom_horizon,
                  "Fail when a device is forecast to run out sooner (iterations)")
      ->check(non_negative_integer());
  cmd->add_option("--warmup", o->warmup, "Ignore leaks first seen before iteration N that stopped growing")
      ->check(non_negative_integer());
  cmd->add_flag("--fail-on-inconclusive", o->fail_on_inconclusive, "An inconclusive run fails instead of warning");
  cmd->add_option("--baseline", o->baselines,
                  "Baseline report: fail on regressions and new leaking lines (repeat the flag for several)");
  cmd->add_option("--tolerance", o->tolerance,
                  "Allowed regression against the baseline of peak and steady-state live memory and of each leaking "
                  "line's rate (default 5%)");
  cmd->add_option("--suppressions", o->suppressions,
                  "Suppressions file (leak:/file:/module:/site: rules with # reason; repeat the flag for several)");
  cmd->add_option("--junit", o->junit, "Write JUnit XML here (one testcase per report)");
  cmd->add_option("--format", o->format, "auto (github when GITHUB_ACTIONS=true), plain, github or markdown")
      ->capture_default_str();
  cmd->add_option("--summary", o->summary,
                  "Append a Markdown summary here (default under GitHub: $GITHUB_STEP_SUMMARY)");
  cmd->callback([o, action] { *action = [o] { return check_command(*o); }; });
}

}  // namespace gpuleak::cli
