// `gpuleak trace CAPTURE`: the capture's timeline as a Chrome/Perfetto trace
// (docs/trace-format.md). JSON by default, opened by ui.perfetto.dev and chrome://tracing;
// `--format perfetto` for Perfetto's protobuf, smaller and faster to load for long runs.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <memory>

#include "cli.h"
#include "format/words.h"
#include "log/log.h"
#include "output/text_summary.h"
#include "output/trace/trace_capture.h"
#include "text/escape.h"

namespace gpuleak::cli {

namespace {

struct TraceCommandOptions {
  std::string input;
  std::string output;  // "" = next to the capture
  std::string format = "json";
  bool full = false;
  bool quiet = false;
  ReadFlags read;
};

int trace_command(const TraceCommandOptions &o) {
  using namespace output::trace;
  TraceFormat format;
  if (!parse_trace_format(o.format, &format))
    throw UsageError{"trace: unknown --format '" + o.format + "' (json or perfetto)"};
  TraceOptions options;
  std::string bad_env;
  options.full = o.full || trace_full_from_env(&bad_env);
  if (!bad_env.empty()) throw UsageError{"trace: GPULEAK_TRACE='" + bad_env + "' is not 'full' or 'default'"};

  const std::string path = o.output.empty() ? default_trace_path(o.input, format) : o.output;
  if (path == o.input) throw UsageError{"trace: the output would overwrite the capture " + o.input};
  const auto started = std::chrono::steady_clock::now();
  std::string error;
  auto file = OutputFile::create(path, &error);
  if (!file) throw UsageError{"trace: " + error};
  TraceSummary summary;
  std::vector<std::string> warnings;
  if (!trace_capture_file(o.input, format, read_options(o.read), options, file.get(), &summary, &warnings, &error))
    throw UsageError{error};
  if (!file->commit(&error)) throw UsageError{"trace: " + error};
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (o.quiet) return 0;
  for (const std::string &w : warnings) GPULEAK_LOG_WARN("warning: %s", text::printable(w).c_str());
  std::string shown = summary.policy == "bounded"
                          ? ", " + std::to_string(summary.memory_events_shown) + " of " +
                                format::count_of(summary.memory_events, "allocation event") + " (--full for all)"
                          : "";
  if (summary.gpu_activities)
    shown += ", " + std::to_string(summary.gpu_activities_shown) + " of " + std::to_string(summary.gpu_activities) +
             " GPU activities";
  std::fprintf(stderr, "gpuleak: trace %s (%s, %llu events%s, %.1f s)\n", path.c_str(),
               output::human_bytes(static_cast<double>(file->bytes_on_disk())).c_str(),
               static_cast<unsigned long long>(summary.events), shown.c_str(), seconds);
  return 0;
}

}  // namespace

void register_trace(CLI::App &app, Action *action) {
  auto o = std::make_shared<TraceCommandOptions>();
  auto *cmd = app.add_subcommand("trace", "Write a capture's timeline as a Chrome/Perfetto trace (<stem>.trace.json)");
  cmd->add_option("capture", o->input, "Capture file (.gpuleak)")->required();
  cmd->add_option("-o,--output", o->output,
                  "Trace path (default: next to the capture; a name ending in .gz is gzip-compressed)");
  cmd->add_option("--format", o->format, "json (Chrome Trace Event Format, default) or perfetto (protobuf)");
  cmd->add_flag("--full", o->full, "Every allocation, free and NVTX range (default: bounded; GPULEAK_TRACE=full)");
  cmd->add_flag("--quiet", o->quiet, "No summary line on stderr");
  add_read_flags(cmd, &o->read);
  cmd->callback([o, action] { *action = [o] { return trace_command(*o); }; });
}

}  // namespace gpuleak::cli
