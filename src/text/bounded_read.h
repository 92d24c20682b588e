// Reading a whole untrusted input file with a size limit (limits.h). Only a regular file is read
// (input_file.h: a FIFO with no writer would block forever, /dev/zero never ends); one that is too
// large is refused from its size before anything is read, and one that grows while it is read
// stops at the limit, so no input costs more than the limit.
#pragma once

#include <cstdint>
#include <string>

namespace gpuleak::text {

// The bytes of `path` into *out. On failure, *error says "PATH: reason": kIoError for what open()
// and read() say (a directory: "Is a directory"; a FIFO or device: "not a regular file (...)"), kTooLarge for more than
// `limit` bytes
// ("PATH: larger than 128 MiB, the limit for <what> (docs/limits.md)").
enum class ReadResult { kOk, kIoError, kTooLarge };
ReadResult read_bounded(const std::string &path, uint64_t limit, const char *what, std::string *out,
                        std::string *error);

// The error read_bounded() gives for `path` past `limit` (also used by readers that inflate).
std::string too_large(const std::string &path, uint64_t limit, const char *what);

}  // namespace gpuleak::text
