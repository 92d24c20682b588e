// The one JSON parser for untrusted input: every reader of a report, a baseline, a budgets file or
// a Chrome trace parses through here, which bounds the nesting (limits.h), refuses duplicate keys
// where asked, and turns every failure into a one-line reason. nlohmann's parser is iterative, but
// its dump() and comparisons recurse once per level: a document 100,000 levels deep parses fine
// and then overflows the stack wherever it is written out (the viewer's page, a merged trace).
//
// Parsing is one linear pass: nlohmann's SAX interface drives a builder of our own (json_input.cpp)
// that counts the depth as containers open. nlohmann's callback parser, which this replaced,
// rescanned a parent after each child object and took 48 s on a 1.2 MB report (#25).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "text/limits.h"

namespace gpuleak::text {

struct JsonError {
  enum Kind { kEmpty, kTruncated, kSyntax, kTooDeep, kOutOfRange, kDuplicateKey, kTooManyValues } kind = kSyntax;
  size_t byte = 0;      // where the parser stopped (kSyntax, kTruncated: the text's size)
  std::string message;  // one line, without the file's name: "not valid JSON (syntax error at byte 7)"
};

struct JsonRules {
  size_t max_depth = kMaxJsonDepth;
  // A key twice in one object: nlohmann keeps the last, so a report saying "verdict": "leak" and
  // then "verdict": "clean" would pass the gate. Reports refuse it; other tools' traces do not.
  bool refuse_duplicate_keys = true;
  // Values (of every kind, containers included) one streamed element may hold, 0 = no limit: what
  // keeps one hostile trace event from costing gigabytes once parsed (stream_json_elements).
  uint64_t max_element_values = 0;
};

// Parses `text` into *out. False with *error filled when it is empty (only blanks), cut short,
// malformed, nested deeper than the rules allow, has a key twice in one object (unless allowed),
// or holds a number no double can carry.
bool parse_json(std::string_view text, nlohmann::json *out, JsonError *error, const JsonRules &rules = {});

// How stream_json_elements found the document: an array (its elements are the ones streamed), an
// object (the elements of its array under `key`; the object's other members are checked, never
// built), or anything else (nothing streamed).
enum class JsonShape { kArray, kObject, kOther };
struct JsonStream {
  JsonShape shape = JsonShape::kOther;
  bool key_found = false;  // kObject: `key` was there, with an array as its value
  bool stopped = false;    // the callback returned false; the rest was not read
  uint64_t elements = 0;   // elements handed to the callback
  size_t error_byte = 0;   // where a failure was found (JsonError::byte)
};

// Reads `text` as one JSON document and hands each element of its top-level array (or of the array
// under `key` in a top-level object) to `element` as soon as it is complete, in order, until it
// returns false: memory is one element, never the document. False with *error as parse_json gives
// it; elements before a failure stay delivered (a torn file's complete elements are usable).
bool stream_json_elements(std::string_view text, std::string_view key,
                          const std::function<bool(nlohmann::json &element)> &element, JsonStream *stream,
                          JsonError *error, const JsonRules &rules);

}  // namespace gpuleak::text
