// `gpuleak export --format collapsed CAPTURE [--at end|peak|oom]`: live device memory by call
// stack in the folded format of flamegraph.pl and speedscope
// (src/output/trace/collapsed_stacks.h). Writes to stdout unless -o is given.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "cli.h"
#include "log/log.h"
#include "output/front_door.h"
#include "output/trace/collapsed_stacks.h"
#include "text/escape.h"

namespace gpuleak::cli {

namespace {

struct ExportCommandOptions {
  std::string input;
  std::string format;
  std::string at = "end";
  std::string output;  // "" = stdout
  ReadFlags read;
};

int export_command(const ExportCommandOptions &o) {
  using namespace output::trace;
  if (o.format != "collapsed") throw UsageError{"export: unknown --format '" + o.format + "' (collapsed)"};
  Moment at;
  if (!parse_moment(o.at, &at)) throw UsageError{"export: unknown --at '" + o.at + "' (end, peak or oom)"};
  output::ReadOptions read = read_options(o.read);
  read.keep_memory = true;
  std::string error;
  auto opened = output::open_and_analyze(o.input, read, &error);
  if (!opened) throw UsageError{error};
  std::string text;
  if (!collapsed_stacks(opened->capture(), opened->analysis(), opened->sites(), at, &text, &error))
    throw UsageError{error};
  for (const std::string &p : opened->symbol_problems())
    GPULEAK_LOG_WARN("warning: %s", gpuleak::text::printable(p).c_str());
  if (o.output.empty() || o.output == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return std::fflush(stdout) == 0 ? 0 : kExitUsage;
  }
  write_file_atomically(o.output, text, true);
  return 0;
}

}  // namespace

void register_export(CLI::App &app, Action *action) {
  auto o = std::make_shared<ExportCommandOptions>();
  auto *cmd = app.add_subcommand("export", "Export live memory by stack (folded stacks for flamegraph.pl/speedscope)");
  cmd->add_option("capture", o->input, "Capture file (.gpuleak)")->required();
  cmd->add_option("--format", o->format, "collapsed: folded stacks, one 'frame;frame;frame bytes' line per stack")
      ->required();
  cmd->add_option("--at", o->at,
                  "end (default), peak (each device at its peak) or oom (the last out-of-memory failure)");
  cmd->add_option("-o,--output", o->output, "Output path (default: stdout)");
  add_read_flags(cmd, &o->read);
  cmd->callback([o, action] { *action = [o] { return export_command(*o); }; });
}

}  // namespace gpuleak::cli
