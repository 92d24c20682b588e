// `gpuleak merge FILE... -o merged.trace.json`: the traces (or captures) of several processes or
// ranks in one Chrome trace, one process per input, ordered by rank, aligned on one clock
// (src/output/trace/trace_merge.h).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "cli.h"
#include "format/words.h"
#include "log/log.h"
#include "output/text_summary.h"
#include "output/trace/trace_merge.h"
#include "text/escape.h"

namespace gpuleak::cli {

namespace {

struct MergeCommandOptions {
  std::vector<std::string> inputs;
  std::string output;
  bool quiet = false;
  ReadFlags read;  // for captures among the inputs
};

int merge_command(const MergeCommandOptions &o) {
  using namespace output::trace;
  for (const std::string &in : o.inputs)
    if (in == o.output) throw UsageError{"merge: the output " + o.output + " is also an input"};
  std::string error;
  auto file = OutputFile::create(o.output, &error);
  if (!file) throw UsageError{"merge: " + error};
  MergeSummary summary;
  std::vector<std::string> warnings;
  if (!merge_traces(o.inputs, read_options(o.read), TraceOptions{}, file.get(), &summary, &warnings, &error))
    throw UsageError{error};
  if (!file->commit(&error)) throw UsageError{"merge: " + error};
  if (o.quiet) return 0;
  for (const std::string &w : warnings) GPULEAK_LOG_WARN("warning: %s", text::printable(w).c_str());
  std::fprintf(stderr, "gpuleak: merged %s into %s (%s, %s)\n", format::count_of(summary.inputs, "trace").c_str(),
               o.output.c_str(), output::human_bytes(static_cast<double>(file->bytes_on_disk())).c_str(),
               format::count_of(summary.events, "event").c_str());
  for (const std::string &l : summary.leaking)
    std::fprintf(stderr, "gpuleak: %s while the others stay flat\n", text::printable(l).c_str());
  return 0;
}

}  // namespace

void register_merge(CLI::App &app, Action *action) {
  auto o = std::make_shared<MergeCommandOptions>();
  auto *cmd =
      app.add_subcommand("merge", "Merge Chrome traces or captures into one trace, one process per input by rank");
  cmd->footer(input_limits_help());
  cmd->add_option("inputs", o->inputs, "Traces (.trace.json, .json.gz) or captures (.gpuleak)")->required();
  cmd->add_option("-o,--output", o->output, "Merged trace path (a name ending in .gz is gzip-compressed)")->required();
  cmd->add_flag("--quiet", o->quiet, "No summary line on stderr");
  add_read_flags(cmd, &o->read);
  cmd->callback([o, action] { *action = [o] { return merge_command(*o); }; });
}

}  // namespace gpuleak::cli
