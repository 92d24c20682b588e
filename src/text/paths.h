// Small text helpers every part of gpuleak needs (paths, addresses); header-only so that the
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
// path itself when it has no slash.
inline std::string basename_of(std::string_view path) {
  size_t slash = path.find_last_of('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

// "0x1f2e": an address as gpuleak prints it (lowercase hex).
inline std::string hex(uint64_t value) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, value);
  return buf;
}

}  // namespace gpuleak::text
