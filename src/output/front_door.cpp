#include "output/front_door.h"

#include <cstdio>

namespace gpuleak::output {

SymbolizeFn caller_symbolizer(Symbolizer &symbolizer) {
  return [&symbolizer](uint32_t id) { return trim_to_caller(symbolizer.symbolize(id)); };
}

std::unique_ptr<AnalyzedCapture> open_and_analyze(const std::string &path, const ReadOptions &options,
                                                  std::string *error) {
  std::unique_ptr<AnalyzedCapture> a(new AnalyzedCapture());
  a->path_ = path;
  if (options.keep_memory) {
    if (!format::read_capture_file(path, &a->capture_, error)) return nullptr;
    analysis::AnalysisOptions with_lives = options.analysis;
    with_lives.record_lives = true;  // what the timelines draw, from this one replay
    a->analysis_ = analysis::analyze(a->capture_, with_lives);
  } else {
    // The memory records stay in the file: the analysis replays them (bounded memory, any size).
    format::FileMemorySource memory;
    if (!format::read_capture_stream(path, &a->capture_, &memory, error)) return nullptr;
    a->analysis_ = analysis::analyze(a->capture_, memory, options.analysis);
    if (memory.failed()) {
      *error = path + ": " + memory.error();
      return nullptr;
    }
  }
  a->symbolizer_ = std::make_unique<Symbolizer>(a->capture_);
  a->sites_ =
      std::make_unique<Sites>(caller_symbolizer(*a->symbolizer_), site_options(a->capture_, a->analysis_.user_code));
  return a;
}

std::string aggregated_note(const format::Capture &c) {
  if (!c.aggregated) return "";
  const uint64_t from =
      c.aggregated->from_ns > c.header.monotonic_ns ? c.aggregated->from_ns - c.header.monotonic_ns : 0;
  char when[32];
  std::snprintf(when, sizeof when, "%.3f s", static_cast<double>(from) / 1e9);
  return std::string(c.aggregated->low_disk ? "the capture's file system ran low and it was aggregated from "
                                            : "the capture reached its budget and was aggregated from ") +
         when + " (" + std::to_string(c.aggregated->iterations) + " iterations in " +
         std::to_string(c.aggregated->windows) +
         " windows): after that, allocations are spaced evenly over each window's iterations, one pair per site and "
         "iteration stands for the short-lived ones, and NVTX ranges are not kept";
}

}  // namespace gpuleak::output
