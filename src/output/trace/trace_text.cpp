#include "output/trace/trace_text.h"

#include <cinttypes>
#include <cstdio>

#include "text/paths.h"

namespace gpuleak::output::trace {

std::string valid_utf8(std::string_view in) {
  static const char kReplacement[] = "\xEF\xBF\xBD";
  std::string out;
  out.reserve(in.size());
  const auto *p = reinterpret_cast<const unsigned char *>(in.data());
  const size_t n = in.size();
  size_t i = 0;
  while (i < n) {
    unsigned char c = p[i];
    if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    size_t len = 0;
    uint32_t cp = 0, min = 0;
    if (c >= 0xC2 && c <= 0xDF)
      len = 2, cp = c & 0x1F, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF)
      len = 3, cp = c & 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4)
      len = 4, cp = c & 0x07, min = 0x10000;
    size_t k = 1;
    for (; len && k < len && i + k < n && (p[i + k] & 0xC0) == 0x80; ++k) cp = cp << 6 | (p[i + k] & 0x3F);
    if (len == 0 || k < len || cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      out += kReplacement;  // one replacement per maximal bad prefix, as WHATWG decoders do
      i += len == 0 ? 1 : k;
      continue;
    }
    out.append(in.data() + i, len);
    i += len;
  }
  return out;
}

std::string hex(uint64_t value) { return text::hex(value); }

std::string basename_of(const std::string &path) { return text::basename_of(path); }

}  // namespace gpuleak::output::trace
