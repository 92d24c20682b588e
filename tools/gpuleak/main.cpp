// gpuleak: the command line. Each subcommand lives in its own cmd_*.cpp; this file only wires
// CLI11 and turns every error into one line on stderr and exit status 2.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "cli.h"
#include "doctor.h"

#ifndef GPULEAK_VERSION
#define GPULEAK_VERSION "0.0.0"
#endif

int main(int argc, char **argv) {
  using namespace gpuleak::cli;
  CLI::App app{"gpuleak: GPU memory-leak and OOM profiler for CUDA programs", "gpuleak"};
  app.require_subcommand(1);
  app.set_version_flag("--version", GPULEAK_VERSION);

  RunOptions run;
  auto *run_cmd = app.add_subcommand("run", "Run a program under gpuleak; exits with the program's status");
  run_cmd->add_option("--out", run.out_dir, "Folder for captures, reports and traces")->capture_default_str();
  run_cmd->add_option("--stack-depth", run.stack_depth, "Native frames per stack (0-128, default 32)")
      ->check(CLI::Range(0, 128));
  run_cmd->add_flag("--cupti", run.cupti, "Use CUPTI too (GPU activity, cross-check); off by default");
  run_cmd->add_flag("--quiet", run.quiet, "No summary on stderr");
  run_cmd->add_flag("--no-report", run.no_report, "Only capture; analyze later with gpuleak report");
  run_cmd->add_option("command", run.command, "The program and its arguments (after --)")->required();

  ReportOptions report;
  auto *report_cmd = app.add_subcommand("report", "Analyze captures: write <stem>.report.json and print a summary");
  report_cmd->add_option("captures", report.inputs, "Capture files (.gpuleak)")->required();
  report_cmd->add_option("-o,--output", report.output, "Report path (default: next to the capture)");
  report_cmd->add_flag("--json", report.json_to_stdout, "Print the report JSON to stdout instead");
  report_cmd->add_flag("--quiet", report.quiet, "No summary on stderr");

  std::vector<std::string> stats_inputs;
  auto *stats_cmd = app.add_subcommand("stats", "Print raw counts of captures as JSON (no analysis)");
  stats_cmd->add_option("captures", stats_inputs, "Capture files (.gpuleak)")->required();

  DoctorInput doctor;
  auto *doctor_cmd = app.add_subcommand("doctor", "Say which capture paths work here and for a program");
  doctor_cmd->add_option("command", doctor.command, "The program to inspect (after --)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "gpuleak: %s (see gpuleak --help)\n", e.what());
    return kExitUsage;
  }
  try {
    if (*run_cmd) return run_command(run);
    if (*report_cmd) return report_command(report);
    if (*stats_cmd) return stats_command(stats_inputs);
    if (*doctor_cmd) {
      try {
        doctor.shim_path = find_shim();
      } catch (const UsageError &) {
        // The doctor reports a missing shim as one of its findings.
      }
      return run_doctor(doctor, stdout);
    }
  } catch (const UsageError &e) {
    std::fprintf(stderr, "gpuleak: %s\n", e.message.c_str());
    return kExitUsage;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "gpuleak: internal error: %s\n", e.what());
    return kExitUsage;
  }
  return kExitUsage;
}
