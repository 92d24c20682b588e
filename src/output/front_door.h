// The one way into a capture on the read side: read it, analyze it, and resolve its call sites,
// once, with one set of options. `gpuleak report`, `view`, `trace`, `merge` and `export` all open
// captures here, so they agree on iterations (GPULEAK_ITERATION_RANGE), warm-up, advice
// thresholds, what counts as the user's code, site ids and headlines. `check` and `diff` read the
// report these produce.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "format/capture_reader.h"
#include "format/memory_source.h"
#include "output/sites.h"
#include "output/symbolizer.h"

namespace gpuleak::output {

// Everything a reader of a capture can be told; built once by the command line (tools/gpuleak
// read_options.cpp) from flags and the environment.
struct ReadOptions {
  // With the folders that count as the user's code (analysis.user_code: --user-code,
  // GPULEAK_USER_CODE), for the analysis and the headlines alike.
  analysis::AnalysisOptions analysis;
  // Keep every memory record in Capture::memory and every allocation's life in Analysis::lives
  // (the trace, the viewer and the exports draw memory over time); otherwise the records are
  // streamed from the file and never held (the report).
  bool keep_memory = false;
};

// A capture, its analysis and its call sites. Not copyable: Sites and the Symbolizer point into
// the capture.
class AnalyzedCapture {
 public:
  const std::string &path() const { return path_; }
  const format::Capture &capture() const { return capture_; }
  const analysis::Analysis &analysis() const { return analysis_; }
  // Every output names call sites through this (frames, site_id, headline, label).
  Sites &sites() { return *sites_; }
  // One line per module whose symbols could not be used (symbolizer.h), once symbols were needed.
  const std::vector<std::string> &symbol_problems() const { return symbolizer_->problems(); }

  AnalyzedCapture(const AnalyzedCapture &) = delete;
  AnalyzedCapture &operator=(const AnalyzedCapture &) = delete;

 private:
  friend std::unique_ptr<AnalyzedCapture> open_and_analyze(const std::string &, const ReadOptions &, std::string *);
  AnalyzedCapture() = default;

  std::string path_;
  format::Capture capture_;
  analysis::Analysis analysis_;
  std::unique_ptr<Symbolizer> symbolizer_;
  std::unique_ptr<Sites> sites_;
};

// (capture format 1.4) One line saying that the capture was aggregated from where and what the
// trace, the view and the exports lack for it; "" for a raw capture.
std::string aggregated_note(const format::Capture &capture);

// Reads the capture at `path` and analyzes it under `options`. nullptr with a one-line reason
// (naming the file) when it cannot be read or is not a capture. Never throws for any file content.
std::unique_ptr<AnalyzedCapture> open_and_analyze(const std::string &path, const ReadOptions &options,
                                                  std::string *error);

// The symbolization every output uses: the stack's frames with gpuleak's and CUDA's innermost
// frames trimmed (trim_to_caller), so frame 0 is the code that called CUDA.
SymbolizeFn caller_symbolizer(Symbolizer &symbolizer);

}  // namespace gpuleak::output
