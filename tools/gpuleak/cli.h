// Shared pieces of the gpuleak command line. Every subcommand answers bad input or usage with one
// line on stderr and exit status 2 (DESIGN.md "Output contracts"); `gpuleak run` exits with the
// program's own status.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/advice.h"
#include "output/front_door.h"
#include "output/report_json.h"
#include "text/limits.h"

namespace CLI {
class App;
class Validator;
}  // namespace CLI

namespace gpuleak::cli {

inline constexpr int kExitUsage = 2;

// Thrown for bad input; main() prints "gpuleak: <message>" and exits 2.
struct UsageError {
  std::string message;
};

// The footer of every reading subcommand's --help: the input limits of docs/limits.md.
inline std::string input_limits_help() {
  return "Input limits: regular files only (a FIFO or device is refused); JSON nested up to " +
         std::to_string(text::kMaxJsonDepth) + " levels, no key twice in a report's objects; reports up to " +
         text::limit_text(text::kMaxReportBytes) + "; traces up to " + text::limit_text(text::kMaxTraceBytes) +
         " after gunzip; " + std::to_string(text::kMaxDevices) +
         " devices per capture. Past one: one line, exit 2 (docs/limits.md).\n";
}

// A whole number, 0 or more: "--warmup: -3 is not a whole number of 0 or more" (CLI11's
// NonNegativeNumber prints the 309 digits of DBL_MAX).
CLI::Validator non_negative_integer();

// What main() runs once the command line parsed: set by the chosen subcommand's callback.
using Action = std::function<int()>;

// One registration function per subcommand (cmd_*.cpp): adds the subcommand, its options and
// help to `app`, and sets *action from its parse callback. main.cpp lists them all.
void register_run(CLI::App &app, Action *action);
// `gpuleak run [options] -- CMD`: drops that `--` from args (argv) before parsing, so that CMD and
// all its words reach run as its command, `--` or not (CLI11 would hand them back to the parent).
void drop_run_separator(const CLI::App &app, std::vector<char *> *args);
void register_report(CLI::App &app, Action *action);
void register_stats(CLI::App &app, Action *action);
void register_doctor(CLI::App &app, Action *action);
void register_check(CLI::App &app, Action *action);
void register_diff(CLI::App &app, Action *action);
void register_view(CLI::App &app, Action *action);
void register_trace(CLI::App &app, Action *action);
void register_merge(CLI::App &app, Action *action);
void register_export(CLI::App &app, Action *action);

// libgpuleak.so next to this executable ($GPULEAK_LIB first, then ../lib, then the same folder).
std::string find_shim();

// What a command that reads a capture was told on its command line (read_flags.cpp).
struct ReadFlags {
  std::string iteration_range;         // NVTX iteration pattern ("" = GPULEAK_ITERATION_RANGE, else the default)
  int warmup = -1;                     // warm-up iterations (-1 = the default rule)
  std::vector<std::string> user_code;  // --user-code roots (GPULEAK_USER_CODE adds its own)

  // Loop advice thresholds; negative: GPULEAK_ADVICE* from the environment, else the default.
  int advice = -1;
  double advice_min_iteration_share = -1;
  double advice_min_saving_share = -1;
  int advice_late_max_lag = -1;
  double advice_serialization_min_share = -1;
  double advice_reserve_min_mb = -1;
  double advice_reserve_min_share = -1;
};

struct RunOptions {
  std::string out_dir = "gpuleak-out";
  int stack_depth = -1;  // -1: the shim's default
  bool cupti = false;
  bool quiet = false;
  bool no_report = false;
  int error_exitcode = -1;        // --error-exitcode: status on a leak when the program exited 0 (-1: GPULEAK_EXITCODE)
  std::string torch = "default";  // PyTorch allocator mode for the program (--torch)
  std::string jax = "default";    // JAX allocator mode (--jax)
  std::string cupy = "default";   // CuPy allocator mode (--cupy)
  std::string retention = "on";   // --retention on|off: who keeps each leak, at exit and at an OOM
  std::string loop;               // --loop FILE:LINE or a function name: marked with no code change
  ReadFlags read;                 // --iteration-range, --warmup, --user-code: for the report it writes
  std::vector<std::string> command;
};
int run_command(const RunOptions &options);

// --iteration-range, --warmup, --user-code and the --advice* thresholds.
void add_read_flags(CLI::App *cmd, ReadFlags *flags);
// --iteration-range, --warmup and --user-code only: what `gpuleak run` takes for its report, with
// the same meaning as on report, view, trace and export.
void add_shared_read_flags(CLI::App *cmd, ReadFlags *flags);
// The options every reader of a capture gets: the flags, else their variables, else the defaults
// (a bad variable: one warning line, the default).
output::ReadOptions read_options(const ReadFlags &flags);

// A capture analyzed before the report asked for it, and its report as `gpuleak report` makes it
// of a single capture (ReportDocument), when that was made too.
struct PreparedReport {
  std::unique_ptr<output::AnalyzedCapture> opened;
  std::optional<output::ReportDocument> single;
};

struct ReportOptions {
  std::vector<std::string> inputs;  // captures (.gpuleak)
  std::string output;               // report path ("" = next to the capture)
  bool json_to_stdout = false;      // --json: the same as format "json"
  std::string format;               // --format text|json|markdown ("" = write the report JSON, summary on stderr)
  bool quiet = false;
  bool fail_on_leak = false;  // exit 1 when any report's verdict is leak (GPULEAK_EXITCODE)
  std::string ranks_json;     // several processes: their comparison (gpuleak.ranks/1) here
  ReadFlags read;
  // Captures already analyzed with the same read options (`gpuleak run`'s early analysis), by
  // input path: used instead of reading them again, and taken.
  std::map<std::string, PreparedReport> *prepared = nullptr;
};
int report_command(const ReportOptions &options);

// Raw counts of each capture as a JSON array on stdout (no analysis).
int stats_command(const std::vector<std::string> &inputs);

// Writes `bytes` to `path` through text::AtomicFile (a temporary file, then rename(2)): readers
// never see half a file. Throws UsageError with the one-line reason.
void write_file_atomically(const std::string &path, const std::string &bytes);

}  // namespace gpuleak::cli
