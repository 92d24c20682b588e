#include "output/trace/trace_capture.h"

#include <cstdlib>
#include <cstring>

#include "analysis/analysis.h"
#include "format/capture_reader.h"
#include "output/symbolizer.h"
#include "output/trace/chrome_trace_writer.h"
#include "output/trace/perfetto_writer.h"

namespace gpuleak::output::trace {

bool parse_trace_format(const std::string &text, TraceFormat *out) {
  if (text == "json")
    *out = TraceFormat::kJson;
  else if (text == "perfetto")
    *out = TraceFormat::kPerfetto;
  else
    return false;
  return true;
}

bool trace_full_from_env(std::string *bad) {
  const char *v = std::getenv("GPULEAK_TRACE");
  bad->clear();
  if (!v || !*v || std::strcmp(v, "default") == 0) return false;
  if (std::strcmp(v, "full") == 0) return true;
  *bad = v;
  return false;
}

std::string default_trace_path(const std::string &capture, TraceFormat format) {
  const std::string ext = ".gpuleak";
  std::string stem = capture.size() > ext.size() && capture.compare(capture.size() - ext.size(), ext.size(), ext) == 0
                         ? capture.substr(0, capture.size() - ext.size())
                         : capture;
  return stem + (format == TraceFormat::kJson ? ".trace.json" : ".pftrace");
}

bool trace_capture_file(const std::string &path, TraceFormat fmt, const TraceOptions &options, ByteStream *out,
                        TraceSummary *summary, std::vector<std::string> *warnings, std::string *error) {
  format::Capture capture;
  if (!format::read_capture_file(path, &capture, error)) return false;
  const analysis::Analysis result = analysis::analyze(capture);
  Symbolizer symbolizer(capture);
  auto symbolize = [&](uint32_t id) { return trim_to_caller(symbolizer.symbolize(id)); };
  bool ok = false;
  if (fmt == TraceFormat::kJson) {
    ChromeTraceWriter writer(out);
    *summary = build_trace(capture, result, symbolize, options, &writer, &ok);
  } else {
    PerfettoWriter writer(out);
    *summary = build_trace(capture, result, symbolize, options, &writer, &ok);
  }
  for (const std::string &p : symbolizer.problems()) warnings->push_back(p);
  if (capture.truncated) warnings->push_back(path + ": the capture ends inside a record (the program was killed?)");
  if (!ok) *error = "cannot write the trace of " + path;
  return ok;
}

}  // namespace gpuleak::output::trace
