// GPULEAK_* settings of the profiled process, read once at load time. Every variable is documented
// in the README with its default. A value that does not parse turns tracking off (one stderr line):
// guessing what the user meant would give them a capture they did not ask for.
#pragma once

#include <cstdint>
#include <string>

namespace gpuleak::core {

struct Config {
  bool enabled = true;                  // GPULEAK_DISABLE=1 turns everything off
  std::string out_dir = "gpuleak-out";  // GPULEAK_OUT
  unsigned stack_depth = 32;            // GPULEAK_STACK_DEPTH (0 = no stacks, at most 128)
  bool stack_memo = true;               // GPULEAK_STACK_MEMO=0: unwind every stack (stack_memo.h)
  // GPULEAK_BLOCK_NATIVE_STACKS=1: native stacks for a framework's blocks (PyTorch's tensors through
  // its allocator's trace) also on threads that run Python. Off: those blocks keep their Python
  // frames, which name the call site, and skip the native unwind through the framework, which
  // costs most of a step (docs/benchmarks.md run 9); threads without Python keep native stacks.
  bool block_native_stacks = false;
  // GPULEAK_UNWINDER: "libunwind" (the default: its cached walk, when libunwind.so.8 is found) or
  // "libgcc" (the C++ runtime's walk, several times slower; for comparison, or a program whose
  // generated code libunwind walks wrongly).
  bool prefer_libgcc = false;
  bool self_time = false;     // GPULEAK_SELF_TIME=1: one exit line on the hooks' own time (self_time.h)
  bool cupti = false;         // GPULEAK_CUPTI=1
  bool quiet = false;         // GPULEAK_QUIET=1: no at-exit summary
  unsigned buffer_kib = 256;  // GPULEAK_BUFFER_KB: per-thread event buffer (16..65536)
  // GPULEAK_MAX_CAPTURE ("4GiB", "512MiB"; 0 = no budget; GPULEAK_MAX_CAPTURE_MB, the older
  // spelling, in MiB): the capture's size budget. Past 3/4 of it the capture is aggregated, at
  // it writing stops (capture_budget.h). kDefaultBudget: the default, from the free space.
  static constexpr uint64_t kDefaultBudget = UINT64_MAX;
  uint64_t max_capture_bytes = kDefaultBudget;
  bool under_run = false;  // GPULEAK_UNDER_RUN=1: `gpuleak run` analyzes, the shim does not
  // GPULEAK_RUN_TOKEN: set by `gpuleak run` for the processes it runs, recorded in the capture's
  // RunInfo, so that it reports their captures only (never a neighbour's in a shared --out).
  std::string run_token;
  std::string cli_path;            // GPULEAK_CLI, else set by the preload: ../bin/gpuleak next to the shim
  unsigned exit_code = 0;          // GPULEAK_EXITCODE: exit with this when a leak was found (0 = off)
  unsigned report_timeout_s = 60;  // GPULEAK_REPORT_TIMEOUT: bound on the at-exit analysis (0 = skip it)
  bool nvml = true;                // GPULEAK_NVML=0: do not ask NVML for the process's usage at exit
  // GPULEAK_NVML_INTERVAL_MS: NVML usage samples while the capture runs, taken by the writer thread
  // (0 = at exit only). Ignored with GPULEAK_NVML=0.
  unsigned nvml_interval_ms = 250;
  std::string error;  // non-empty: the first bad value, tracking is off

  // GPULEAK_ACTIVITY=0: with CUPTI on, no kernels, copies or memsets for the timeline.
  bool activity = true;
  // GPULEAK_ACTIVITY_MB: cap on the GPU activity records' bytes (0 = none); past it, counted only.
  uint64_t activity_max_bytes = 256ull << 20;
};

// Parses the environment. Never throws; a bad value sets `error` and `enabled = false`.
Config read_config();

// Parses "123", "64K", "2M", "1G" into bytes; false on anything else.
bool parse_size(const char *text, uint64_t *out);
// Parses an unsigned integer in [lo, hi]; false on anything else.
bool parse_unsigned(const char *text, unsigned lo, unsigned hi, unsigned *out);

}  // namespace gpuleak::core
