#include "output/trace/chrome_trace_reader.h"

#include <vector>

#include "text/json_input.h"

namespace gpuleak::output::trace {

using nlohmann::json;

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '\n'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

// The rules for other tools' traces: the nesting bound, and at most kMaxTraceEventValues values in
// one event, so that no event costs more than about 100 MB once parsed. Duplicate keys are theirs
// to write (the last counts, as in every viewer).
text::JsonRules trace_rules() {
  text::JsonRules rules;
  rules.refuse_duplicate_keys = false;
  rules.max_element_values = text::kMaxTraceEventValues;
  return rules;
}

// Untrusted text through the one bounded parser (text/json_input.h); discarded on any failure, and
// *why set to the failure's kind.
json parse(std::string_view text, text::JsonError::Kind *why) {
  json doc;
  text::JsonError error;
  if (text::parse_json(text, &doc, &error, trace_rules())) return doc;
  *why = error.kind;
  return json(json::value_t::discarded);
}

// gpuleak's own layout: "[" alone on the first line, an object on the second.
bool own_layout(std::string_view text) {
  size_t nl = text.find('\n');
  if (nl == std::string_view::npos || trim(text.substr(0, nl)) != "[") return false;
  std::string_view rest = text.substr(nl + 1);
  size_t nl2 = rest.find('\n');
  std::string_view second = trim(rest.substr(0, nl2));
  return !second.empty() && second.front() == '{';
}

bool read_lines(std::string_view text, const std::function<bool(json &)> &fn, TraceReadStats *stats,
                std::string *error) {
  stats->line_mode = true;
  size_t pos = text.find('\n') + 1;  // past "["
  uint64_t line_no = 1;
  bool closed = false;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = trim(text.substr(pos, nl - pos));
    pos = nl + 1;
    ++line_no;
    if (line.empty()) continue;
    if (line == "]") {
      closed = true;
      break;
    }
    if (line.back() == ',') line.remove_suffix(1);
    text::JsonError::Kind why = text::JsonError::kSyntax;
    json event = parse(line, &why);
    if (why == text::JsonError::kTooDeep || why == text::JsonError::kTooManyValues) {
      *error =
          "trace event on line " + std::to_string(line_no) +
          (why == text::JsonError::kTooDeep ? " nested deeper than " + std::to_string(text::kMaxJsonDepth) + " levels"
                                            : " holds more than " + std::to_string(text::kMaxTraceEventValues) +
                                                  " values (a limit, docs/limits.md)");
      return false;
    }
    if (event.is_discarded() || !event.is_object()) {
      if (trim(text.substr(std::min(pos, text.size()))).empty()) {  // the last line, torn
        ++stats->skipped;
        stats->repaired = true;
        break;
      }
      *error = "corrupt trace event on line " + std::to_string(line_no);
      return false;
    }
    ++stats->events;
    if (!fn(event)) return true;
  }
  if (!closed) stats->repaired = true;
  return true;
}

// Whether a parse that failed at `byte` of the array form is a tear the viewers mend: the text
// ends inside an event, a trailing comma before the "]", or garbage in the last line (a writer
// killed mid-line). The complete events before it were delivered.
bool torn_tail(std::string_view body, const text::JsonError &error) {
  if (error.kind == text::JsonError::kTruncated) return true;
  if (error.kind != text::JsonError::kSyntax || error.byte == 0) return false;
  const size_t at = std::min(error.byte - 1, body.size() - 1);
  if (body[at] == ']' && trim(body.substr(at + 1)).empty()) {
    std::string_view before = trim(body.substr(0, at));
    if (!before.empty() && before.back() == ',') return true;
  }
  const size_t nl = body.find_last_of('\n');
  return nl != std::string_view::npos && at > nl;
}

}  // namespace

bool read_chrome_trace(std::string_view text, const std::function<bool(json &)> &fn, TraceReadStats *stats,
                       std::string *error) {
  *stats = TraceReadStats{};
  std::string_view body = trim(text);
  if (body.empty()) {
    *error = "empty file, not a Chrome trace";
    return false;
  }
  if (own_layout(body)) return read_lines(body, fn, stats, error);

  // Streamed, one event at a time: a trace of a million events is never one parsed document.
  auto each = [&](json &event) {
    if (!event.is_object()) {
      ++stats->skipped;
      return true;
    }
    ++stats->events;
    return fn(event);
  };
  text::JsonStream stream;
  text::JsonError why;
  if (!text::stream_json_elements(body, "traceEvents", each, &stream, &why, trace_rules())) {
    if (why.kind == text::JsonError::kTooDeep) {
      *error = "not a Chrome trace (JSON nested deeper than " + std::to_string(text::kMaxJsonDepth) + " levels)";
      return false;
    }
    if (why.kind == text::JsonError::kTooManyValues) {
      *error = "trace event " + std::to_string(stream.elements + 1) + " holds more than " +
               std::to_string(text::kMaxTraceEventValues) + " values (a limit, docs/limits.md)";
      return false;
    }
    if (stream.shape == text::JsonShape::kArray && torn_tail(body, why)) {
      stats->repaired = true;
      return true;
    }
    *error = "not a Chrome trace (invalid JSON)";
    return false;
  }
  if (stream.shape == text::JsonShape::kObject && !stream.key_found) {
    *error = "not a Chrome trace (an object without a traceEvents array)";
    return false;
  }
  if (stream.shape == text::JsonShape::kOther) {
    *error = "not a Chrome trace (neither an array nor an object)";
    return false;
  }
  return true;
}

}  // namespace gpuleak::output::trace
