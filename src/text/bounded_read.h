// Reading a whole untrusted input file with a size limit (limits.h). Works on anything read() can
// read (a regular file, a pipe, /dev/stdin, a process substitution): a regular file that is too
// large is refused from its size before anything is read, anything else is read until it passes
// the limit, so /dev/zero or an endless pipe costs at most the limit, never all memory.
#pragma once

#include <cstdint>
#include <string>

namespace gpuleak::text {

// The bytes of `path` into *out. On failure, *error says "PATH: reason": kIoError for what open()
// and read() say (a directory: "Is a directory"), kTooLarge for more than `limit` bytes
// ("PATH: larger than 128 MiB, the limit for <what> (docs/limits.md)").
enum class ReadResult { kOk, kIoError, kTooLarge };
ReadResult read_bounded(const std::string &path, uint64_t limit, const char *what, std::string *out,
                        std::string *error);

// The error read_bounded() gives for `path` past `limit` (also used by readers that inflate).
std::string too_large(const std::string &path, uint64_t limit, const char *what);

}  // namespace gpuleak::text
