#include "output/trace/trace_capture.h"

#include <cstdlib>
#include <cstring>

#include "format/capture_reader.h"
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

bool trace_capture_file(const std::string &path, TraceFormat fmt, const ReadOptions &read, const TraceOptions &options,
                        ByteStream *out, TraceSummary *summary, std::vector<std::string> *warnings,
                        std::string *error) {
  ReadOptions keep = read;
  keep.keep_memory = true;  // the timeline shows every record, in the analysis's order
  auto opened = open_and_analyze(path, keep, error);
  if (!opened) return false;
  const format::Capture &capture = opened->capture();
  bool ok = false;
  if (fmt == TraceFormat::kJson) {
    ChromeTraceWriter writer(out);
    *summary = build_trace(capture, opened->analysis(), opened->sites(), options, &writer, &ok);
  } else {
    PerfettoWriter writer(out);
    *summary = build_trace(capture, opened->analysis(), opened->sites(), options, &writer, &ok);
  }
  for (const std::string &w : opened->analysis().warnings) warnings->push_back(w);
  for (const std::string &p : opened->symbol_problems()) warnings->push_back(p);
  if (capture.aggregated) warnings->push_back(path + ": " + aggregated_note(capture));
  if (capture.truncated) warnings->push_back(path + ": the capture ends inside a record (the program was killed?)");
  if (!ok) *error = "cannot write the trace of " + path;
  return ok;
}

}  // namespace gpuleak::output::trace
