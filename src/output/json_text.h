// A JSON value as the report's text: what nlohmann's dump(2, ' ', false, error_handler_t::replace)
// writes, byte for byte (2-space indentation, UTF-8 kept, invalid UTF-8 as U+FFFD). nlohmann's
// serializer hands its output adapter every token through a virtual call; here plain ASCII
// strings and integers are appended to one string, about a quarter fewer instructions on the 4 MB
// report of 10,000 listed iterations. Anything else (a string that needs escaping or holds
// non-ASCII bytes, a floating point number) is still written by nlohmann: no rule of its own is
// re-implemented.
//
// A member can also be written without a tree (json_text with a Splice): the report's iterations
// go straight from the analysis to the text (report_json.h make_report_document).
#pragma once

#include <charconv>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace gpuleak::output {

// A number as the report writes it: whole numbers as integers ("1048576", not "1048576.0"), others
// rounded to `decimals` places; NaN and infinities as null.
nlohmann::json report_number(double v, int decimals = 3);

// Appends JSON text as nlohmann's pretty printer would at a given indentation. The text goes
// through a small buffer of the writer's own, appended to the string when full and by flush() or
// the destructor: one std::string append per 4 KiB, not one per token (its out-of-line append
// cost more than the token's bytes on the report of 10,000 listed iterations).
class JsonTextWriter {
 public:
  explicit JsonTextWriter(std::string *out) : out_(*out) {}
  ~JsonTextWriter() { flush(); }
  JsonTextWriter(const JsonTextWriter &) = delete;
  JsonTextWriter &operator=(const JsonTextWriter &) = delete;

  void value(const nlohmann::json &v, size_t indent);
  void string(const std::string &s);
  void boolean(bool b) { b ? put("true", 4) : put("false", 5); }
  template <typename T>
  void integer(T n) {
    if (kBuffer - used_ < 24) flush();
    used_ = static_cast<size_t>(std::to_chars(buf_ + used_, buf_ + used_ + 24, n).ptr - buf_);
  }
  void spaces(size_t n);
  void raw(const char *s) { put(s, std::strlen(s)); }
  // An object's member "key": value, the value written by `write` at `indent` + 2; `last` says
  // whether a comma follows.
  template <typename F>
  void member(const char *key, size_t indent, bool last, F &&write) {
    spaces(indent + 2);
    put("\"", 1);
    raw(key);  // the callers' keys are plain ASCII identifiers
    put("\": ", 3);
    write();
    last ? put("\n", 1) : put(",\n", 2);
  }
  // Everything written so far is in the string.
  void flush() {
    out_.append(buf_, used_);
    used_ = 0;
  }

  // One more member for the top-level object, written at its place in key order.
  struct Splice {
    std::string key;
    std::function<void(JsonTextWriter &, size_t indent)> write;
  };
  void object(const nlohmann::json &v, size_t indent, const Splice *splice = nullptr);

 private:
  static constexpr size_t kBuffer = 4096;
  void put(const char *s, size_t n) {
    if (n > kBuffer - used_) {
      flush();
      if (n > kBuffer) {
        out_.append(s, n);
        return;
      }
    }
    std::memcpy(buf_ + used_, s, n);
    used_ += n;
  }
  void put(const std::string &s) { put(s.data(), s.size()); }
  void array(const nlohmann::json &v, size_t indent);
  void string(const std::string &s, const nlohmann::json *v);
  std::string &out_;
  char buf_[kBuffer];
  size_t used_ = 0;
};

std::string json_text(const nlohmann::json &value);
// `value` (an object without splice.key) with splice.key's member written by splice.write.
std::string json_text(const nlohmann::json &value, const JsonTextWriter::Splice &splice);

}  // namespace gpuleak::output
