// Escaping for terminals, XML, GitHub workflow commands and Markdown (escape.h).
#include "text/escape.h"

#include <cstdint>

namespace gpuleak::text {

namespace {

const char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

// Length of the valid UTF-8 sequence at s[i], or 0 when it is not one.
size_t utf8_length(const std::string &s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  uint8_t c = byte(i);
  if (c < 0x80) return 1;
  size_t n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 0;
  if (n == 0 || c > 0xF4 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  uint8_t c1 = byte(i + 1);
  if (c == 0xE0 && c1 < 0xA0) return 0;  // overlong
  if (c == 0xED && c1 > 0x9F) return 0;  // UTF-16 surrogates
  if (c == 0xF0 && c1 < 0x90) return 0;  // overlong
  if (c == 0xF4 && c1 > 0x8F) return 0;  // above U+10FFFF
  return n;
}

// Valid UTF-8 with the C1 controls (U+0080-U+009F, encoded C2 80 to C2 9F) replaced: 8-bit CSI
// (U+009B) and OSC (U+009D) act like ESC [ and ESC ] on terminals that honour them in UTF-8.
std::string inert_utf8(const std::string &text);

}  // namespace

std::string valid_utf8(const std::string &text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t n = utf8_length(text, i);
    if (n == 0) {
      out += kReplacement;
      ++i;
    } else {
      out.append(text, i, n);
      i += n;
    }
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
