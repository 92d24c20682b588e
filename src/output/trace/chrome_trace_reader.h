// Reading Chrome Trace Event files back (for `gpuleak merge`): gpuleak's own traces, and other
// tools' (torch.profiler, Nsight exports) in either JSON container. It never trusts the bytes:
// garbage gives a one-line error, never a crash (tests/fuzz/trace_reader_fuzzer.cpp).
//
//   - gpuleak's own layout ("[" on the first line, then one event per line) is read line by line,
//     so a large trace is never held as one JSON document; a torn last line (a trace cut short)
//     is dropped and counted;
//   - anything else is streamed one event at a time (text/json_input.h: memory is the text and one
//     event, text::kMaxTraceEventValues values at most): the array form, repaired the way the
//     viewers repair it (a trailing comma dropped, a missing "]" added, a torn last event
//     dropped), or the object form {"traceEvents": [...]}, whose other members are checked and
//     skipped.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace gpuleak::output::trace {

struct TraceReadStats {
  bool line_mode = false;  // read as gpuleak's one-event-per-line layout
  bool repaired = false;   // a missing "]", a trailing comma or a torn event was mended
  uint64_t events = 0;     // objects handed to the callback
  uint64_t skipped = 0;    // array elements that were not objects, torn lines dropped
};

// Calls `event` with each event object in file order until it returns false. Returns false with
// a one-line reason when the text is not a Chrome trace (events already delivered stay delivered:
// line mode reports a corrupt line in the middle this way).
bool read_chrome_trace(std::string_view text, const std::function<bool(nlohmann::json &event)> &event,
                       TraceReadStats *stats, std::string *error);

}  // namespace gpuleak::output::trace
