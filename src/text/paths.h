// Small text helpers every part of gpuleak needs (paths, addresses, build ids); header-only so that the
// shim, the analysis, the outputs, the gate and the CLI share one copy without a library between
// them. (Escaping for JSON, terminals and Markdown lives beside it in src/text/.)
#pragma once

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace gpuleak::text {

// The last component of a '/'-separated path ("libcuda.so.1" for "/usr/lib/libcuda.so.1"); the
// path itself when it has no slash. basename_view allocates nothing (a view into `path`), for the
// shim's code that runs inside the program's dlsym and dl_iterate_phdr calls.
inline std::string_view basename_view(std::string_view path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}
inline std::string basename_of(std::string_view path) { return std::string(basename_view(path)); }

// The folder of a path, as dirname(3) has it: "/usr/lib" for "/usr/lib/libcuda.so.1", "/" for
// "/init", "." for a path without a slash.
inline std::string dirname_of(std::string_view path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string_view::npos) return ".";
  return slash == 0 ? "/" : std::string(path.substr(0, slash));
}

// "0x1f2e": an address as gpuleak prints it (lowercase hex).
inline std::string hex(uint64_t value) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, value);
  return buf;
}

// "8f3a00": bytes as two lowercase hex digits each, no prefix (a GNU build id).
inline std::string hex_bytes(std::string_view bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  s.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    s += digits[c >> 4];
    s += digits[c & 15];
  }
  return s;
}

}  // namespace gpuleak::text
