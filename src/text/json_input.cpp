#include "text/json_input.h"

#include <cstring>

namespace gpuleak::text {

namespace {

struct TooDeep {};  // thrown from the parser's callback: the only way to stop nlohmann's parser early

bool blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

}  // namespace

bool parse_json(std::string_view text, nlohmann::json *out, JsonError *error, size_t max_depth) {
  size_t first = 0;
  while (first < text.size() && blank(text[first])) ++first;
  if (first == text.size()) {
    *error = {JsonError::kEmpty, 0, "empty file, not JSON"};
    return false;
  }
  // The callback sees every value as it starts; `depth` is the number of containers around it.
  auto bounded = [max_depth](int depth, nlohmann::json::parse_event_t event, nlohmann::json &) {
    if ((event == nlohmann::json::parse_event_t::object_start || event == nlohmann::json::parse_event_t::array_start) &&
        static_cast<size_t>(depth) >= max_depth)
      throw TooDeep{};
    return true;
  };
  try {
    *out = nlohmann::json::parse(text, bounded);
    return true;
  } catch (const TooDeep &) {
    *error = {JsonError::kTooDeep, 0, "JSON nested deeper than " + std::to_string(max_depth) + " levels"};
  } catch (const nlohmann::json::parse_error &e) {
    // An error past the last non-blank byte means the text stopped inside the document: the file
    // was cut short (a killed writer, a partial upload), which deserves its own words.
    size_t end = text.size();
    while (end > 0 && blank(text[end - 1])) --end;
    if (e.byte > end || std::strstr(e.what(), "unexpected end of input") != nullptr)
      *error = {JsonError::kTruncated, text.size(),
                "truncated JSON (the document ends early, at byte " + std::to_string(text.size()) + ")"};
    else
      *error = {JsonError::kSyntax, e.byte, "not valid JSON (syntax error at byte " + std::to_string(e.byte) + ")"};
  } catch (const nlohmann::json::exception &) {
    // Well-formed text that still cannot be held, such as a number too large for a double.
    *error = {JsonError::kOutOfRange, 0, "not valid JSON (a number out of range)"};
  }
  *out = nlohmann::json();
  return false;
}

}  // namespace gpuleak::text
