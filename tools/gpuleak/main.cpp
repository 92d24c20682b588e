// gpuleak: the command line. Each subcommand lives in its own cmd_*.cpp and registers itself
// here; this file only wires CLI11 and turns every error into one line on stderr and exit 2.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "cli.h"

#ifndef GPULEAK_VERSION
#define GPULEAK_VERSION "0.0.0"
#endif

int main(int argc, char **argv) {
  using namespace gpuleak::cli;
  CLI::App app{"gpuleak: GPU memory-leak and OOM profiler for CUDA programs", "gpuleak"};
  app.require_subcommand(1);
  app.set_version_flag("--version", GPULEAK_VERSION);

  Action action;
  register_run(app, &action);
  register_report(app, &action);
  register_stats(app, &action);
  register_doctor(app, &action);
  register_check(app, &action);
  register_diff(app, &action);
  register_view(app, &action);
  register_trace(app, &action);
  register_merge(app, &action);
  register_export(app, &action);

  try {
    std::vector<char *> args(argv, argv + argc);
    drop_run_separator(app, &args);
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::ParseError &e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "gpuleak: %s (see gpuleak --help)\n", e.what());
    return kExitUsage;
  }
  try {
    return action ? action() : kExitUsage;
  } catch (const UsageError &e) {
    std::fprintf(stderr, "gpuleak: %s\n", e.message.c_str());
    return kExitUsage;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "gpuleak: internal error: %s\n", e.what());
    return kExitUsage;
  }
}
