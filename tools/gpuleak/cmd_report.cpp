// `gpuleak report CAPTURE...`: capture in, report JSON and a terminal summary out. Also what
// `gpuleak run` calls once the program has ended, so both print the same thing.
#include <cstdio>

#include <CLI/CLI.hpp>

#include <memory>

#include "analysis/analysis.h"
#include "cli.h"
#include "gate/rank_compare.h"
#include "log/log.h"
#include "output/front_door.h"
#include "output/report_json.h"
#include "output/report_markdown.h"
#include "output/text_summary.h"
#include "text/atomic_file.h"
#include "text/escape.h"

#ifndef GPULEAK_VERSION
#define GPULEAK_VERSION "0.0.0"
#endif

namespace gpuleak::cli {

void write_file_atomically(const std::string &path, const std::string &bytes) {
  std::string error;
  if (!text::write_file_atomically(path, bytes, &error)) throw UsageError{error};
}

namespace {

std::string report_path_for(const std::string &capture) {
  const std::string ext = ".gpuleak";
  std::string stem = capture.size() > ext.size() && capture.compare(capture.size() - ext.size(), ext.size(), ext) == 0
                         ? capture.substr(0, capture.size() - ext.size())
                         : capture;
  return stem + ".report.json";
}

bool is_report_file(const std::string &path) {
  const std::string ext = ".json";
  return path.size() > ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
}

// One existing report (a CI artifact): printed as text (default), Markdown or JSON, to -o or
// stdout; nothing re-analyzed, nothing else written.
int print_report_file(const std::string &input, const std::string &format, const ReportOptions &o) {
  nlohmann::json report;
  try {
    report = gate::parse_json_text(gate::read_text_file(input), input);
    gate::parse_report(report, input);  // the gate's checks: a gpuleak report of a known schema
  } catch (const gate::GateError &e) {
    throw UsageError{e.what()};
  }
  const std::string rendered = format == "json"       ? report.dump(2) + "\n"
                               : format == "markdown" ? output::report_markdown(report)
                                                      : output::text_summary(report, "");
  if (!o.output.empty())
    write_file_atomically(o.output, rendered);
  else
    std::fwrite(rendered.data(), 1, rendered.size(), stdout);
  return o.fail_on_leak && report.value("verdict", "") == "leak" ? 1 : 0;
}

}  // namespace

int report_command(const ReportOptions &o) {
  if (o.inputs.empty()) throw UsageError{"report: no capture given"};
  if (!o.output.empty() && o.inputs.size() > 1) throw UsageError{"report: -o takes a single capture"};
  if (o.json_to_stdout && !o.format.empty() && o.format != "json")
    throw UsageError{"report: --json and --format " + o.format + " disagree"};
  const std::string format = o.json_to_stdout ? "json" : o.format;
  const output::ReadOptions options = read_options(o.read);  // streams: memory records stay in the file
  bool leak = false;
  std::vector<gate::Report> compared;  // several processes (ranks): compared at the end
  for (const std::string &input : o.inputs) {
    if (is_report_file(input)) {  // an existing report: compared, not re-analyzed
      if (o.inputs.size() < 2) return print_report_file(input, format, o);
      try {
        compared.push_back(gate::load_report(input));
      } catch (const gate::GateError &e) {
        throw UsageError{e.what()};
      }
      leak = leak || compared.back().verdict == "leak";
      continue;
    }
    std::unique_ptr<output::AnalyzedCapture> opened;
    std::optional<output::ReportDocument> prepared;
    if (o.prepared)
      if (auto it = o.prepared->find(input); it != o.prepared->end()) {
        opened = std::move(it->second.opened);
        prepared = std::move(it->second.single);
        GPULEAK_LOG_DEBUG("report: %s was analyzed while its process ended", text::printable(input).c_str());
      }
    std::string error;
    if (!opened) opened = output::open_and_analyze(input, options, &error);
    if (!opened) throw UsageError{error};
    const analysis::Analysis &result = opened->analysis();
    for (const std::string &w : result.warnings) GPULEAK_LOG_WARN("%s", text::printable(w).c_str());
    output::ReportContext ctx;
    ctx.gpuleak_version = GPULEAK_VERSION;
    // Several processes are compared from their trees, iterations included: then the whole tree.
    output::ReportDocument doc;
    if (o.inputs.size() > 1) {
      doc.tree = output::make_report(opened->capture(), result, opened->sites(), ctx);
      doc.text = output::dump_report(doc.tree);
    } else if (prepared) {
      doc = std::move(*prepared);
    } else {
      doc = output::make_report_document(opened->capture(), result, opened->sites(), ctx);
    }
    const nlohmann::json &report = doc.tree;
    const std::string &text = doc.text;
    leak = leak || result.verdict == analysis::Verdict::kLeak;
    if (o.inputs.size() > 1) {
      try {
        compared.push_back(gate::parse_report(report, report_path_for(input)));
      } catch (const gate::GateError &e) {
        GPULEAK_LOG_WARN("warning: %s is left out of the comparison: %s", input.c_str(), e.what());
      }
    }
    if (!format.empty()) {  // one rendering, to -o or stdout, nothing else written
      std::string rendered = format == "json"       ? text + "\n"
                             : format == "markdown" ? output::report_markdown(report)
                                                    : output::text_summary(report, "");
      if (!o.output.empty()) {
        write_file_atomically(o.output, rendered);
      } else {
        std::fwrite(rendered.data(), 1, rendered.size(), stdout);
        if (o.inputs.size() > 1 && format != "json") std::fputc('\n', stdout);
      }
      continue;
    }
    std::string path = o.output.empty() ? report_path_for(input) : o.output;
    write_file_atomically(path, text + "\n");
    if (!o.quiet) std::fputs(output::text_summary(report, path).c_str(), stderr);
  }
  if (compared.size() > 1) {
    gate::RankComparison ranks = gate::compare_ranks(compared);
    if (!o.quiet) std::fputs(gate::comparison_text(ranks).c_str(), stderr);
    if (!o.ranks_json.empty()) write_file_atomically(o.ranks_json, gate::comparison_json(ranks).dump(2) + "\n");
  } else if (!o.ranks_json.empty()) {
    throw UsageError{"report: --ranks-json compares several processes; give two or more"};
  }
  return o.fail_on_leak && leak ? 1 : 0;
}

void register_report(CLI::App &app, Action *action) {
  auto o = std::make_shared<ReportOptions>();
  auto *cmd = app.add_subcommand("report", "Analyze captures: write <stem>.report.json and print a summary");
  cmd->footer(input_limits_help());
  cmd->add_option("captures", o->inputs,
                  "Capture files (.gpuleak); with several (or existing .report.json files), the processes are "
                  "compared and a rank that grows while the others stay flat is flagged; one .report.json is "
                  "printed (--format text, markdown or json)")
      ->required();
  cmd->add_option("--ranks-json", o->ranks_json, "Write the comparison of several processes here (gpuleak.ranks/1)");
  cmd->add_option("-o,--output", o->output, "Report path (default: next to the capture)");
  cmd->add_flag("--json", o->json_to_stdout, "Print the report JSON to stdout instead (= --format json)");
  cmd->add_option("--format", o->format,
                  "Print the report as text, json or markdown to stdout (to -o PATH when given) instead of "
                  "writing <stem>.report.json")
      ->check(CLI::IsMember({"text", "json", "markdown"}));
  cmd->add_flag("--quiet", o->quiet, "No summary on stderr");
  add_read_flags(cmd, &o->read);
  cmd->add_flag("--fail-on-leak", o->fail_on_leak, "Exit 1 when a leak was found (what GPULEAK_EXITCODE uses)");
  cmd->callback([o, action] { *action = [o] { return report_command(*o); }; });
}

}  // namespace gpuleak::cli
