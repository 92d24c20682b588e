// How every command that reads a capture is told to read it (output::ReadOptions): the flags of
// `gpuleak report`, `view`, `trace` and `export`, and their variables (GPULEAK_ITERATION_RANGE,
// GPULEAK_USER_CODE, GPULEAK_ADVICE*), also honoured by `gpuleak run`'s report and `merge`. Built
// here once, so that every output of one capture agrees. A flag wins over its variable; a bad flag
// is a usage error, a bad variable is ignored with a warning.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include <CLI/CLI.hpp>

#include "analysis/user_code.h"
#include "cli.h"
#include "log/log.h"

namespace gpuleak::cli {

namespace {

// A bad variable must not cost the user the report: one line on stderr, and the default.
double env_number(const char *name, double lo, double hi, double fallback) {
  const char *v = std::getenv(name);
  if (!v || !*v) return fallback;
  char *end = nullptr;
  errno = 0;
  double x = std::strtod(v, &end);
  if (errno != 0 || *end != '\0' || !(x >= lo && x <= hi)) {
    GPULEAK_LOG_WARN("ignoring %s='%s' (expected a number in [%g, %g])", name, v, lo, hi);
    return fallback;
  }
  return x;
}

}  // namespace

CLI::Validator non_negative_integer() {
  return CLI::Validator(
      [](std::string &value) -> std::string {
        char *end = nullptr;
        errno = 0;
        const long long v = std::strtoll(value.c_str(), &end, 10);
        if (value.empty() || errno != 0 || *end != '\0' || v < 0) return value + " is not a whole number of 0 or more";
        return "";
      },
      "INT>=0");
}

void add_shared_read_flags(CLI::App *cmd, ReadFlags *o) {
  cmd->add_option("--iteration-range", o->iteration_range,
                  "NVTX ranges whose whole name matches this regex are iterations (GPULEAK_ITERATION_RANGE)");
  cmd->add_option("--warmup", o->warmup, "Iterations ignored at the start (default: 10%, 1 to 5)")
      ->check(CLI::Range(0, 1000000));
  cmd->add_option("--user-code", o->user_code,
                  "A folder whose code is the user's, besides the program's own (repeatable; GPULEAK_USER_CODE, "
                  "colon-separated): findings are headed by the innermost frame in the user's code")
      ->allow_extra_args(false)  // one folder per --user-code: `--user-code DIR CAPTURE` leaves the capture alone
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

void add_read_flags(CLI::App *cmd, ReadFlags *o) {
  add_shared_read_flags(cmd, o);
  cmd->add_option("--advice", o->advice, "1: loop advice findings (default), 0: none (GPULEAK_ADVICE)")
      ->check(CLI::Range(0, 1));
  cmd->add_option("--advice-min-iteration-share", o->advice_min_iteration_share,
                  "Share of the post-warm-up iterations a pattern must show in (default 0.8; "
                  "GPULEAK_ADVICE_MIN_ITERATION_SHARE)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--advice-min-saving-share", o->advice_min_saving_share,
                  "Least saving of a loop finding, as a share of the median iteration's time or of the peak "
                  "(default 0.02; GPULEAK_ADVICE_MIN_SAVING_SHARE)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--advice-late-max-lag", o->advice_late_max_lag,
                  "Late release: most iterations an allocation may outlive its own (default 1; "
                  "GPULEAK_ADVICE_LATE_MAX_LAG)")
      ->check(CLI::Range(0, 1000));
  cmd->add_option("--advice-serialization-min-share", o->advice_serialization_min_share,
                  "Serialization: share of the iteration in synchronous allocation calls (default 0.1; "
                  "GPULEAK_ADVICE_SERIALIZATION_MIN_SHARE)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--advice-reserve-min-mb", o->advice_reserve_min_mb,
                  "Fragmentation (reserved above live): least excess over the recent live peak, in MiB "
                  "(default 256; GPULEAK_ADVICE_RESERVE_MIN_MB)")
      ->check(CLI::Range(0.0, 1048576.0));
  cmd->add_option("--advice-reserve-min-share", o->advice_reserve_min_share,
                  "Fragmentation (reserved above live): least excess as a share of the recent live peak "
                  "(default 0.25; GPULEAK_ADVICE_RESERVE_MIN_SHARE)")
      ->check(CLI::Range(0.0, 1000.0));
}

namespace {

void apply_advice_options(const ReadFlags &o, analysis::AdviceOptions *out) {
  // The flag when given (>= 0), else the variable, else what `out` holds (the default).
  auto pick = [](double flag, const char *name, double lo, double hi, double fallback) {
    return flag >= 0 ? flag : env_number(name, lo, hi, fallback);
  };
  out->enabled = pick(o.advice, "GPULEAK_ADVICE", 0, 1, 1) != 0;
  out->min_iteration_share =
      pick(o.advice_min_iteration_share, "GPULEAK_ADVICE_MIN_ITERATION_SHARE", 0, 1, out->min_iteration_share);
  out->min_saving_share =
      pick(o.advice_min_saving_share, "GPULEAK_ADVICE_MIN_SAVING_SHARE", 0, 1, out->min_saving_share);
  out->late_max_lag =
      static_cast<uint32_t>(pick(o.advice_late_max_lag, "GPULEAK_ADVICE_LATE_MAX_LAG", 0, 1000, out->late_max_lag));
  out->serialization_min_share = pick(o.advice_serialization_min_share, "GPULEAK_ADVICE_SERIALIZATION_MIN_SHARE", 0, 1,
                                      out->serialization_min_share);
  constexpr double kMiB = 1048576.0;
  out->reserve_min_bytes = static_cast<uint64_t>(
      pick(o.advice_reserve_min_mb, "GPULEAK_ADVICE_RESERVE_MIN_MB", 0, 1048576, out->reserve_min_bytes / kMiB) * kMiB);
  out->reserve_min_share =
      pick(o.advice_reserve_min_share, "GPULEAK_ADVICE_RESERVE_MIN_SHARE", 0, 1000, out->reserve_min_share);
}

}  // namespace

output::ReadOptions read_options(const ReadFlags &flags) {
  output::ReadOptions r;
  std::string range = flags.iteration_range;
  if (range.empty())
    if (const char *v = std::getenv("GPULEAK_ITERATION_RANGE")) range = v;
  if (!range.empty()) r.analysis.iteration_range_regex = range;
  if (flags.warmup >= 0) r.analysis.warmup_iterations = flags.warmup;
  apply_advice_options(flags, &r.analysis.advice);
  // One setting for the analysis (its loops, its advice) and the headlines (Analysis::user_code).
  r.analysis.user_code = flags.user_code;
  if (const char *v = std::getenv("GPULEAK_USER_CODE"))
    for (std::string &root : analysis::split_user_code(v))  // `gpuleak run --user-code` passed them on as well
      if (std::find(r.analysis.user_code.begin(), r.analysis.user_code.end(), root) == r.analysis.user_code.end())
        r.analysis.user_code.push_back(std::move(root));
  return r;
}

}  // namespace gpuleak::cli
