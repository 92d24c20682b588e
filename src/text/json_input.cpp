#include "text/json_input.h"

#include <cstring>
#include <utility>
#include <vector>

namespace gpuleak::text {

namespace {

using nlohmann::json;

bool blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// nlohmann's SAX events, turned into values with the rules applied as each container opens or each
// key arrives: one pass, nothing rescanned. Either the whole document is built (into *root), or,
// streaming, only the elements of one array, each handed out when complete and then dropped.
class Builder {
 public:
  // `root`: build the whole document there. Otherwise stream the elements of the top-level array,
  // or of the array under `key` in a top-level object, to `element`.
  Builder(const JsonRules &rules, json *root, std::string_view key, const std::function<bool(json &)> *element)
      : rules_(rules), root_(root), key_(key), element_(element), building_(root != nullptr) {}

  bool null() { return scalar(json(nullptr)); }
  bool boolean(bool b) { return scalar(json(b)); }
  bool number_integer(json::number_integer_t v) { return scalar(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return scalar(json(v)); }
  bool number_float(json::number_float_t v, const json::string_t &) { return scalar(json(v)); }
  bool string(json::string_t &s) { return scalar(json(std::move(s))); }
  bool binary(json::binary_t &b) { return scalar(json::binary(std::move(b))); }

  bool start_object(std::size_t) { return open(json::value_t::object); }
  bool start_array(std::size_t) { return open(json::value_t::array); }
  bool end_object() { return close(); }
  bool end_array() {
    if (!building_ && streaming_ && depth_ == stream_level_) streaming_ = false;
    return close();
  }

  bool key(json::string_t &k) {
    if (building_) {
      pending_key_ = std::move(k);
    } else if (depth_ == 1 && stream_.shape == JsonShape::kObject) {
      top_key_matches_ = k == key_;
    }
    return true;
  }

  bool parse_error(std::size_t position, const std::string &, const nlohmann::detail::exception &e) {
    failure_ = e.id == 406 ? JsonError::kOutOfRange : JsonError::kSyntax;  // 406: a number out of range
    truncated_ = std::strstr(e.what(), "unexpected end of input") != nullptr;
    byte_ = position;
    return false;
  }

  JsonStream stream_;
  JsonError::Kind failure_ = JsonError::kSyntax;
  bool failed_ = false;  // a rule was broken (failure_ says which); else a parse error or a stop
  bool truncated_ = false;
  size_t byte_ = 0;
  std::string duplicate_;  // the key seen twice (kDuplicateKey)

 private:
  bool fail(JsonError::Kind kind) {
    failure_ = kind;
    failed_ = true;
    return false;
  }

  // The top level decides what is streamed: an array's elements, or those of the array under key_.
  void note_container_at(size_t depth, json::value_t type) {
    if (depth == 0) {
      stream_.shape = type == json::value_t::array ? JsonShape::kArray : JsonShape::kObject;
      if (type == json::value_t::array) streaming_ = true, stream_level_ = 1;
    } else if (depth == 1 && stream_.shape == JsonShape::kObject && top_key_matches_ && type == json::value_t::array) {
      stream_.key_found = true;
      streaming_ = true, stream_level_ = 2;
    }
  }

  bool starts_element() const { return !building_ && streaming_ && depth_ == stream_level_; }

  // Where a new value goes inside the element being built; nullptr when a rule forbids it.
  json *place(json &&v) {
    if (rules_.max_element_values != 0 && ++values_ > rules_.max_element_values) {
      fail(JsonError::kTooManyValues);
      return nullptr;
    }
    if (stack_.empty()) {
      *target() = std::move(v);
      return target();
    }
    json *parent = stack_.back();
    if (parent->is_array()) {
      auto &a = parent->get_ref<json::array_t &>();
      a.push_back(std::move(v));
      return &a.back();
    }
    auto &o = parent->get_ref<json::object_t &>();
    auto [it, inserted] = o.emplace(std::move(pending_key_), json());
    if (!inserted && rules_.refuse_duplicate_keys) {
      duplicate_ = it->first;
      fail(JsonError::kDuplicateKey);
      return nullptr;
    }
    it->second = std::move(v);  // a key twice, where allowed: the last wins, as nlohmann's parser has it
    return &it->second;
  }

  json *target() { return root_ ? root_ : &element_value_; }

  bool scalar(json &&v) {
    if (depth_ == 0) stream_.shape = JsonShape::kOther;
    if (starts_element()) {
      building_ = true;
      values_ = 0;
    }
    if (!building_) return true;
    if (!place(std::move(v))) return false;
    return stack_.empty() ? deliver() : true;
  }

  bool open(json::value_t type) {
    if (depth_ >= rules_.max_depth) return fail(JsonError::kTooDeep);
    if (starts_element()) {
      building_ = true;
      values_ = 0;
    }
    if (building_) {
      json *slot = place(json(type));
      if (!slot) return false;
      stack_.push_back(slot);
    } else {
      note_container_at(depth_, type);
    }
    if (root_ && depth_ == 0) stream_.shape = type == json::value_t::array ? JsonShape::kArray : JsonShape::kObject;
    ++depth_;
    return true;
  }

  bool close() {
    --depth_;
    if (!building_) return true;
    stack_.pop_back();
    return stack_.empty() ? deliver() : true;
  }

  // An element is complete: hand it out (streaming) and forget it.
  bool deliver() {
    if (root_) return true;
    building_ = false;
    ++stream_.elements;
    const bool more = (*element_)(element_value_);
    element_value_ = json();
    if (!more) stream_.stopped = true;
    return more;
  }

  const JsonRules &rules_;
  json *root_;
  std::string_view key_;
  const std::function<bool(json &)> *element_;
  bool building_;
  std::vector<json *> stack_;  // the containers open in the value being built, innermost last
  std::string pending_key_;
  json element_value_;
  size_t depth_ = 0;  // containers open around the next value
  bool streaming_ = false;
  size_t stream_level_ = 0;  // depth_ directly inside the streamed array
  bool top_key_matches_ = false;
  uint64_t values_ = 0;
};

bool empty_text(std::string_view text, JsonError *error) {
  size_t first = 0;
  while (first < text.size() && blank(text[first])) ++first;
  if (first < text.size()) return false;
  *error = {JsonError::kEmpty, 0, "empty file, not JSON"};
  return true;
}

// The one-line reason for a failed parse.
void describe(const Builder &b, std::string_view text, const JsonRules &rules, JsonError *error) {
  if (b.failed_) {
    switch (b.failure_) {
      case JsonError::kTooDeep:
        *error = {JsonError::kTooDeep, 0, "JSON nested deeper than " + std::to_string(rules.max_depth) + " levels"};
        return;
      case JsonError::kDuplicateKey:
        *error = {JsonError::kDuplicateKey, 0,
                  "JSON object has the key \"" + b.duplicate_ + "\" twice (which one counts is ambiguous)"};
        return;
      default:
        *error = {JsonError::kTooManyValues, 0,
                  "a JSON element holds more than " + std::to_string(rules.max_element_values) +
                      " values (a limit, docs/limits.md)"};
        return;
    }
  }
  if (b.failure_ == JsonError::kOutOfRange) {
    // Well-formed text that still cannot be held, such as a number too large for a double.
    *error = {JsonError::kOutOfRange, b.byte_, "not valid JSON (a number out of range)"};
    return;
  }
  // An error past the last non-blank byte means the text stopped inside the document: the file
  // was cut short (a killed writer, a partial upload), which deserves its own words.
  size_t end = text.size();
  while (end > 0 && blank(text[end - 1])) --end;
  if (b.byte_ > end || b.truncated_)
    *error = {JsonError::kTruncated, text.size(),
              "truncated JSON (the document ends early, at byte " + std::to_string(text.size()) + ")"};
  else
    *error = {JsonError::kSyntax, b.byte_, "not valid JSON (syntax error at byte " + std::to_string(b.byte_) + ")"};
}

}  // namespace

bool parse_json(std::string_view text, nlohmann::json *out, JsonError *error, const JsonRules &rules) {
  *out = json();
  if (empty_text(text, error)) return false;
  Builder b(rules, out, {}, nullptr);
  if (json::sax_parse(text, &b)) return true;
  describe(b, text, rules, error);
  *out = json();
  return false;
}

bool stream_json_elements(std::string_view text, std::string_view key, const std::function<bool(json &)> &element,
                          JsonStream *stream, JsonError *error, const JsonRules &rules) {
  *stream = JsonStream{};
  if (empty_text(text, error)) return false;
  Builder b(rules, nullptr, key, &element);
  const bool ok = json::sax_parse(text, &b);
  *stream = b.stream_;
  if (ok || (b.stream_.stopped && !b.failed_)) return true;
  describe(b, text, rules, error);
  stream->error_byte = error->byte;
  return false;
}

}  // namespace gpuleak::text
