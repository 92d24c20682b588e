// Escaping for terminals, XML, GitHub workflow commands and Markdown (escape.h).
#include "text/escape.h"

#include <cstdint>

namespace gpuleak::text {

namespace {

const char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

// The UTF-8 sequence starting at s[i]: a well-formed one (`valid`), or the maximal subpart of an
// ill-formed one, the longest prefix of some well-formed sequence (at least its first byte).
struct Sequence {
  size_t length;
  bool valid;
};

Sequence sequence_at(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t c = byte(i);
  if (c < 0x80) return {1, true};
  // The lead byte sets the length and the second byte's range (the Unicode Standard's table 3-7):
  // the narrower ranges exclude overlong forms (E0, F0), UTF-16 surrogates (ED) and code points
  // above U+10FFFF (F4).
  size_t n = 0;
  uint8_t low = 0x80, high = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) low = 0xA0;
    if (c == 0xED) high = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) low = 0x90;
    if (c == 0xF4) high = 0x8F;
  } else {
    return {1, false};  // a continuation byte, C0, C1 or F5-FF: never a lead
  }
  for (size_t k = 1; k < n; ++k) {
    if (i + k >= s.size() || byte(i + k) < low || byte(i + k) > high) return {k, false};
    low = 0x80, high = 0xBF;
  }
  return {n, true};
}

// Valid UTF-8 with the C1 controls (U+0080-U+009F, encoded C2 80 to C2 9F) replaced: 8-bit CSI
// (U+009B) and OSC (U+009D) act like ESC [ and ESC ] on terminals that honour them in UTF-8.
std::string inert_utf8(const std::string &text);

}  // namespace

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const Sequence seq = sequence_at(text, i);
    if (seq.valid)
      out.append(text.substr(i, seq.length));
    else
      out += kReplacement;
    i += seq.length;
  }
  return out;
}

namespace {

std::string inert_utf8(const std::string &text) {
  const std::string valid = valid_utf8(text);
  std::string out;
  out.reserve(valid.size());
  for (size_t i = 0; i < valid.size(); ++i) {
    // In valid UTF-8 a C2 lead byte is always followed by a continuation byte (0x80-0xBF).
    if (static_cast<unsigned char>(valid[i]) == 0xC2 && static_cast<unsigned char>(valid[i + 1]) <= 0x9F) {
      out += kReplacement;
      ++i;
    } else {
      out += valid[i];
    }
  }
  return out;
}

}  // namespace

std::string printable(const std::string &text) {
  std::string out;
  for (char ch : inert_utf8(text)) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7F)
      out += kReplacement;
    else
      out += ch;
  }
  return out;
}

std::string xml_escape(const std::string &text, bool attribute) {
  std::string out;
  for (char ch : valid_utf8(text)) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      case '\t':
        out += attribute ? "&#9;" : "\t";
        break;
      case '\n':
        out += attribute ? "&#10;" : "\n";
        break;
      case '\r':
        out += "&#13;";
        break;
      default:
        if (c < 0x20 || c == 0x7F)
          out += kReplacement;
        else
          out += ch;
    }
  }
  return out;
}

std::string github_escape_data(const std::string &text) {
  std::string out;
  for (char ch : inert_utf8(text)) {
    switch (ch) {
      case '%':
        out += "%25";
        break;
      case '\r':
        out += "%0D";
        break;
      case '\n':
        out += "%0A";
        break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7F)
          out += kReplacement;
        else
          out += ch;
    }
  }
  return out;
}

std::string github_escape_property(const std::string &text) {
  std::string out;
  for (char ch : github_escape_data(text)) {
    switch (ch) {
      case ':':
        out += "%3A";
        break;
      case ',':
        out += "%2C";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

std::string markdown_escape(const std::string &text) {
  std::string out;
  for (char ch : inert_utf8(text)) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '|':
        out += "\\|";
        break;
      case '\\':
      case '`':
      case '*':
      case '_':
      case '[':
      case ']':
      case '#':
      case '~':
      case '!':
        out += '\\';
        out += ch;
        break;
      case '\n':
      case '\r':
      case '\t':
        out += ' ';
        break;
      default:
        if (c < 0x20 || c == 0x7F)
          out += kReplacement;
        else
          out += ch;
    }
  }
  return out;
}

}  // namespace gpuleak::text
