// The loop advice thresholds on the command line (`gpuleak report`) and in the environment
// (GPULEAK_ADVICE*, also honoured by `gpuleak run`, the at-exit report and `gpuleak view`). A flag
// wins over its variable; a bad flag is a usage error, a bad variable is ignored with a warning.
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include <CLI/CLI.hpp>

#include "cli.h"

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
    std::fprintf(stderr, "gpuleak: ignoring %s='%s' (expected a number in [%g, %g])\n", name, v, lo, hi);
    return fallback;
  }
  return x;
}

}  // namespace

void add_advice_flags(CLI::App *cmd, ReportOptions *o) {
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

void apply_advice_options(const ReportOptions &o, analysis::AdviceOptions *out) {
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

}  // namespace gpuleak::cli
