#include "output/front_door.h"

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
  a->sites_ = std::make_unique<Sites>(caller_symbolizer(*a->symbolizer_), site_options(a->capture_, options.user_code));
  return a;
}

}  // namespace gpuleak::output
