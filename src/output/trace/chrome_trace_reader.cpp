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

// Untrusted text through the one bounded parser (text/json_input.h); discarded on any failure, and
// *too_deep set when the failure was the nesting bound (worth its own words, not "corrupt").
json parse(std::string_view text, bool *too_deep = nullptr) {
  json doc;
  text::JsonError error;
  if (text::parse_json(text, &doc, &error)) return doc;
  if (too_deep && error.kind == text::JsonError::kTooDeep) *too_deep = true;
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
    bool too_deep = false;
    json event = parse(line, &too_deep);
    if (too_deep) {
      *error = "trace event on line " + std::to_string(line_no) + " nested deeper than " +
               std::to_string(text::kMaxJsonDepth) + " levels";
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

// The array form as the viewers repair it.
json parse_repaired_array(std::string_view text, bool *repaired) {
  std::string s(trim(text));
  while (!s.empty() && (s.back() == ',' || s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t'))
    s.pop_back();
  *repaired = true;
  json j = parse(s + "]");
  if (!j.is_discarded()) return j;
  // A torn last event: drop everything after the last complete line.
  size_t nl = s.find_last_of('\n');
  if (nl == std::string::npos) return json(json::value_t::discarded);
  s.resize(nl);
  while (!s.empty() && (s.back() == ',' || s.back() == ' ' || s.back() == '\r' || s.back() == '\t')) s.pop_back();
  return parse(s + "]");
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

  bool too_deep = false;
  json doc = parse(body, &too_deep);
  if (too_deep) {
    *error = "not a Chrome trace (JSON nested deeper than " + std::to_string(text::kMaxJsonDepth) + " levels)";
    return false;
  }
  if (doc.is_discarded() && body.front() == '[') doc = parse_repaired_array(body, &stats->repaired);
  if (doc.is_discarded()) {
    *error = "not a Chrome trace (invalid JSON)";
    return false;
  }
  json *events = &doc;
  if (doc.is_object()) {
    auto it = doc.find("traceEvents");
    if (it == doc.end() || !it->is_array()) {
      *error = "not a Chrome trace (an object without a traceEvents array)";
      return false;
    }
    events = &*it;
  } else if (!doc.is_array()) {
    *error = "not a Chrome trace (neither an array nor an object)";
    return false;
  }
  for (json &event : *events) {
    if (!event.is_object()) {
      ++stats->skipped;
      continue;
    }
    ++stats->events;
    if (!fn(event)) break;
  }
  return true;
}

}  // namespace gpuleak::output::trace
