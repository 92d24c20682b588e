// `gpuleak export --format collapsed CAPTURE [--at end|peak|oom]`: live device memory by call
// stack in the folded format of flamegraph.pl and speedscope
// (src/output/trace/collapsed_stacks.h). Writes to stdout unless -o is given.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "analysis/analysis.h"
#include "cli.h"
#include "format/capture_reader.h"
#include "output/symbolizer.h"
#include "output/trace/collapsed_stacks.h"
#include "text/escape.h"

namespace gpuleak::cli {

namespace {

struct ExportCommandOptions {
  std::string input;
  std::string format;
  std::string at = "end";
  std::string output;  // "" = stdout
};

int export_command(const ExportCommandOptions &o) {
  using namespace output::trace;
  if (o.format != "collapsed") throw UsageError{"export: unknown --format '" + o.format + "' (collapsed)"};
  Moment at;
  if (!parse_moment(o.at, &at)) throw UsageError{"export: unknown --at '" + o.at + "' (end, peak or oom)"};
  format::Capture capture;
  std::string error;
  if (!format::read_capture_file(o.input, &capture, &error)) throw UsageError{error};
  const analysis::Analysis result = analysis::analyze(capture);
  output::Symbolizer symbolizer(capture);
  auto symbolize = [&](uint32_t id) { return output::trim_to_caller(symbolizer.symbolize(id)); };
  std::string text;
  if (!collapsed_stacks(capture, result, symbolize, at, &text, &error)) throw UsageError{error};
  for (const std::string &p : symbolizer.problems())
    std::fprintf(stderr, "gpuleak: warning: %s\n", text::printable(p).c_str());
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
  cmd->callback([o, action] { *action = [o] { return export_command(*o); }; });
}

}  // namespace gpuleak::cli
