// The one JSON parser for untrusted input: every reader of a report, a baseline, a budgets file or
// a Chrome trace parses through parse_json(), which bounds the nesting (limits.h) and turns every
// failure into a one-line reason. nlohmann's parser is iterative, but its dump() and comparisons
// recurse once per level: a document 100,000 levels deep parses fine and then overflows the stack
// wherever it is written out (the viewer's page, a merged trace).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "text/limits.h"

namespace gpuleak::text {

struct JsonError {
  enum Kind { kEmpty, kTruncated, kSyntax, kTooDeep, kOutOfRange } kind = kSyntax;
  size_t byte = 0;      // where the parser stopped (kSyntax, kTruncated: the text's size)
  std::string message;  // one line, without the file's name: "not valid JSON (syntax error at byte 7)"
};

// Parses `text` into *out. False with *error filled when it is empty (only blanks), cut short,
// malformed, nested deeper than `max_depth`, or holds a number no double can carry.
bool parse_json(std::string_view text, nlohmann::json *out, JsonError *error, size_t max_depth = kMaxJsonDepth);

}  // namespace gpuleak::text
