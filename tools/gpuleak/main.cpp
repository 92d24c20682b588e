// gpuleak: the command line. Each subcommand lives in its own cmd_*.cpp and registers itself
// here; this file only wires CLI11 and turns every error into one line on stderr and exit 2.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "cli.h"
#include "text/escape.h"

#ifndef GPULEAK_VERSION
#define GPULEAK_VERSION "0.0.0"
#endif

namespace {

// Every flag takes exactly one value per occurrence; a repeatable flag is repeated
// (`--baseline A --baseline B`). CLI11's default for a vector-valued flag is to take every word
// that follows it, which swallowed the positional report paths of `gpuleak check --baseline B r1
// r2` and judged only r2. Applied here, after registration, so no subcommand's flag can do it.
void one_value_per_flag(CLI::App &app) {
  for (CLI::App *sub : app.get_subcommands([](CLI::App *) { return true; }))
    for (CLI::Option *opt : sub->get_options())
      if (opt->nonpositional()) opt->allow_extra_args(false);
}

}  // namespace

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
  one_value_per_flag(app);

  try {
    std::vector<char *> args(argv, argv + argc);
    drop_run_separator(app, &args);
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::ParseError &e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    // Point at the help of the subcommand being parsed (CLI11 lists it once its name was read):
    // "b is required" is answered by `gpuleak diff --help`, not by the list of subcommands.
    const std::vector<CLI::App *> parsed = app.get_subcommands();
    const std::string help = parsed.empty() ? "gpuleak --help" : "gpuleak " + parsed.back()->get_name() + " --help";
    std::fprintf(stderr, "gpuleak: %s (see %s)\n", gpuleak::text::printable(e.what()).c_str(), help.c_str());
    return kExitUsage;
  }
  try {
    return action ? action() : kExitUsage;
  } catch (const UsageError &e) {
    // The message may quote a file's bytes (a path, a key, a verdict): one inert line.
    std::fprintf(stderr, "gpuleak: %s\n", gpuleak::text::printable(e.message).c_str());
    return kExitUsage;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "gpuleak: internal error: %s\n", gpuleak::text::printable(e.what()).c_str());
    return kExitUsage;
  }
}
