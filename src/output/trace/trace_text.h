// Text helpers shared by the trace writers and the exports: repairing
// untrusted bytes (function names, NVTX messages, paths come from the program as they are).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "output/frame.h"

namespace gpuleak::output::trace {

// The bytes with every invalid UTF-8 sequence (bad lead or continuation bytes, overlong forms,
// surrogates, code points past U+10FFFF, a sequence cut short) replaced by U+FFFD.
std::string valid_utf8(std::string_view bytes);

// "0x1f2e" (lowercase hex).
std::string hex(uint64_t value);

std::string basename_of(const std::string &path);

}  // namespace gpuleak::output::trace
