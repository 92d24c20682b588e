// gpuleak: the command line. Each subcommand lives in its own cmd_*.cpp and registers itself
// here; this file only wires CLI11 and turns every error into one line on stderr and exit 2.
#include <CLI/CLI.hpp>

#include <algorithm>
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

// Edit distance between two short words (subcommand names), for "did you mean".
size_t distance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The first word names no subcommand (`gpuleak runn`): CLI11 says only "A subcommand is
// required". Say which word, and the nearest subcommand when one is close.
std::string unknown_subcommand(const CLI::App &app, const std::string &word) {
  std::string best;
  size_t best_d = 3;  // at most two edits away, or a prefix
  for (const CLI::App *sub : app.get_subcommands([](const CLI::App *) { return true; })) {
    const std::string &name = sub->get_name();
    const size_t d = name.rfind(word, 0) == 0 ? 1 : distance(word, name);
    if (d < best_d) best_d = d, best = name;
  }
  return "unknown subcommand '" + word + "'" + (best.empty() ? "" : "; did you mean " + best + "?") +
         " (see gpuleak --help)";
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

  // `gpuleak help [SUBCOMMAND]` is --help, as git and pip read it.
  if (argc >= 2 && std::string(argv[1]) == "help") {
    if (argc == 2) return std::printf("%s", app.help().c_str()) < 0 ? kExitUsage : 0;
    for (CLI::App *sub : app.get_subcommands([](CLI::App *) { return true; }))
      if (sub->get_name() == argv[2]) return std::printf("%s", sub->help().c_str()) < 0 ? kExitUsage : 0;
    std::fprintf(stderr, "gpuleak: help: %s\n", unknown_subcommand(app, argv[2]).c_str());
    return kExitUsage;
  }
  if (argc >= 2 && argv[1][0] != '-') {
    bool known = false;
    for (CLI::App *sub : app.get_subcommands([](CLI::App *) { return true; }))
      known = known || sub->get_name() == argv[1];
    if (!known) {
      std::fprintf(stderr, "gpuleak: %s\n", unknown_subcommand(app, argv[1]).c_str());
      return kExitUsage;
    }
  }
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
