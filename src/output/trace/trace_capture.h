// One capture file to one trace: read, analyze, symbolize, build, write. What `gpuleak trace`
// runs, and what `gpuleak merge` runs on a capture given among its inputs.
#pragma once

#include <string>
#include <vector>

#include "output/front_door.h"
#include "output/trace/file_io.h"
#include "output/trace/trace_builder.h"
#include "output/trace/trace_options.h"

namespace gpuleak::output::trace {

enum class TraceFormat { kJson, kPerfetto };

// Parses "json" / "perfetto"; false for anything else.
bool parse_trace_format(const std::string &text, TraceFormat *out);

// True when GPULEAK_TRACE asks for everything ("full"); other values are left to the caller
// to reject (*bad set to the value).
bool trace_full_from_env(std::string *bad);

// The default output next to a capture: "<stem>.trace.json" (JSON) or "<stem>.pftrace"
// (Perfetto), stem = the capture path without ".gpuleak".
std::string default_trace_path(const std::string &capture_path, TraceFormat format);

// Opens the capture at `path` through the front door (front_door.h, with `read`) and writes its
// trace to `out`. False with a one-line reason when the
// capture cannot be read or the output written. Symbolization problems (a library that is gone,
// a build id that differs) are appended to `warnings`: the trace is written without those names.
bool trace_capture_file(const std::string &path, TraceFormat format, const ReadOptions &read,
                        const TraceOptions &options, ByteStream *out, TraceSummary *summary,
                        std::vector<std::string> *warnings, std::string *error);

}  // namespace gpuleak::output::trace
