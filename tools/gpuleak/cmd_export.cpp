// `gpuleak export --format collapsed|speedscope|pprof CAPTURE [--at end|peak|oom | --iterations A:B]`:
// live device memory by call stack, as folded stacks for flamegraph.pl
// (src/output/trace/collapsed_stacks.h), a speedscope JSON file (speedscope_export.h) or a
// gzipped pprof profile (pprof_export.h). Writes to stdout unless -o is given.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli.h"
#include "log/log.h"
#include "output/front_door.h"
#include "output/trace/collapsed_stacks.h"
#include "output/trace/pprof_export.h"
#include "output/trace/speedscope_export.h"
#include "text/escape.h"

namespace gpuleak::cli {

namespace {

struct ExportCommandOptions {
  std::string input;
  std::string format;
  std::string at;          // "" = end
  std::string iterations;  // "" = use --at
  std::string output;      // "" = stdout
  ReadFlags read;
};

int export_command(const ExportCommandOptions &o) {
  using namespace output::trace;
  if (o.format != "collapsed" && o.format != "speedscope" && o.format != "pprof")
    throw UsageError{"export: unknown --format '" + o.format + "' (collapsed, speedscope or pprof)"};
  if (!o.at.empty() && !o.iterations.empty()) throw UsageError{"export: give --at or --iterations, not both"};
  Moment at = Moment::kEnd;
  if (!o.at.empty() && !parse_moment(o.at, &at))
    throw UsageError{"export: unknown --at '" + o.at + "' (end, peak or oom)"};
  IterationSpan span;
  if (!o.iterations.empty() && !parse_iteration_span(o.iterations, &span))
    throw UsageError{"export: bad --iterations '" + o.iterations + "' (A:B with A <= B, or A)"};
  output::ReadOptions read = read_options(o.read);
  read.keep_memory = true;
  std::string error;
  auto opened = output::open_and_analyze(o.input, read, &error);
  if (!opened) throw UsageError{error};

  std::vector<LiveStack> live;
  bool ok =
      o.iterations.empty()
          ? live_stacks(opened->capture(), opened->analysis(), opened->sites(), at, &live, &error)
          : live_stacks_in_iterations(opened->capture(), opened->analysis(), opened->sites(), span, &live, &error);
  if (!ok) throw UsageError{error};
  std::string text;
  if (o.format == "pprof") {
    text = pprof_profile(live, static_cast<int64_t>(opened->capture().header.realtime_ns),
                         std::filesystem::path(o.input).stem().string());
  } else {
    const std::string moment = o.iterations.empty() ? moment_name(at) : "iterations " + o.iterations;
    text =
        o.format == "speedscope"
            ? speedscope_profile(live, std::filesystem::path(o.input).filename().string() + " (live at " + moment + ")")
            : collapsed_stacks(live);
  }
  for (const std::string &p : opened->symbol_problems())
    GPULEAK_LOG_WARN("warning: %s", gpuleak::text::printable(p).c_str());
  if (opened->capture().aggregated)
    GPULEAK_LOG_WARN("warning: %s", gpuleak::text::printable(output::aggregated_note(opened->capture())).c_str());
  if (o.output.empty() || o.output == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return std::fflush(stdout) == 0 ? 0 : kExitUsage;
  }
  write_file_atomically(o.output, text);
  return 0;
}

}  // namespace

void register_export(CLI::App &app, Action *action) {
  auto o = std::make_shared<ExportCommandOptions>();
  auto *cmd = app.add_subcommand("export", "Export live memory by stack (folded stacks, speedscope, pprof)");
  cmd->add_option("capture", o->input, "Capture file (.gpuleak)")->required();
  cmd->add_option("--format", o->format,
                  "collapsed: folded stacks, one 'frame;frame;frame bytes' line per stack; "
                  "speedscope: a speedscope JSON file (one sampled profile in bytes); "
                  "pprof: a gzipped pprof profile (inuse_space, inuse_objects)")
      ->required();
  cmd->add_option("--at", o->at,
                  "end (default), peak (each device at its peak) or oom (the last out-of-memory failure)");
  cmd->add_option("--iterations", o->iterations,
                  "A:B (or A): memory allocated in iterations A to B of the main loop and still live when B "
                  "ended; compare two with pprof -diff_base");
  cmd->add_option("-o,--output", o->output, "Output path (default: stdout)");
  add_read_flags(cmd, &o->read);
  cmd->callback([o, action] { *action = [o] { return export_command(*o); }; });
}

}  // namespace gpuleak::cli
