// The Chrome Trace Event Format, JSON array form (research/FORMATS-AND-VIEWER.md A2-A4): `[`,
// then one complete event per line, then `]`. Both viewers accept the array without its closing
// `]`, so a file cut short after any whole line still opens in ui.perfetto.dev and
// chrome://tracing. Every line is produced by nlohmann::json with invalid UTF-8 replaced by
// U+FFFD, and "</" written "<\/", so hostile names cannot break the JSON (or an HTML page that
// embeds it).
//
// Timestamps: `ts` and `dur` in microseconds since the capture's start, with nanosecond
// precision (three decimals). The capture's clock anchors are in the "gpuleak_trace" metadata
// event, which `gpuleak merge` reads to align several traces.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "output/trace/file_io.h"
#include "output/trace/trace_sink.h"

namespace gpuleak::output::trace {

class ChromeTraceWriter : public TraceSink {
 public:
  explicit ChromeTraceWriter(ByteStream *out) : out_(out) {}

  void begin(const TraceInfo &info, const std::vector<Track> &tracks) override;
  void event(const Event &event) override;
  bool end() override;

  uint64_t events_written() const { return events_; }

 private:
  void write(const nlohmann::json &event);

  ByteStream *out_;
  int64_t pid_ = 0;
  std::vector<Track> tracks_;
  uint64_t events_ = 0;
  std::string line_;
};

// One event as a single line of JSON text, always valid JSON (see above).
std::string json_line(const nlohmann::json &event);

// Microseconds from nanoseconds: an integer when whole, else with three decimals.
nlohmann::json micros(int64_t ns);

}  // namespace gpuleak::output::trace
