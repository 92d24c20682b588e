// A reader of gpuleak's Perfetto protobuf traces for the tests, as trace_processor reads them: it
// follows the packet sequence's incremental state (cleared by SEQ_INCREMENTAL_STATE_CLEARED,
// grown by each packet's interned_data) and resolves every iid through it. What a reader would
// reject is listed in `problems` instead of failing at once, so a test can show all of it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpuleak::testing {

struct PerfettoTrace {
  struct Track {
    std::string name;
    bool has_parent = false;
    bool counter_bytes = false;
    int64_t pid = 0, tid = 0;
  };
  struct Event {
    uint64_t ts = 0;  // TracePacket.timestamp
    uint64_t type = 0;
    uint64_t track = 0;
    std::string name;  // resolved from name_iid when interned
    std::vector<std::string> categories;
    int64_t counter = 0;
    nlohmann::json args;  // the debug annotations as JSON (object), iids resolved; null for none
  };
  std::map<uint64_t, Track> tracks;
  std::string process_name;
  int64_t process_pid = 0;
  std::vector<Event> events;

  uint64_t packets = 0;
  uint64_t definitions = 0;           // interned entries defined
  uint64_t iid_references = 0;        // iids resolved
  uint64_t inline_strings = 0;        // names, categories and string values written inline
  std::vector<std::string> problems;  // an iid used before its definition, a missing flag, ...
};

PerfettoTrace decode_perfetto(const std::string &bytes);

// The JSON trace's args as the protobuf writer spells them: null as the string "null" (a
// DebugAnnotation has no null), empty objects and arrays as null (an annotation without a value).
nlohmann::json as_annotations(const nlohmann::json &args);

}  // namespace gpuleak::testing
