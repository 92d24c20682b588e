// Building blocks for the paths that may run inside a signal handler: _exit and _Exit (a handler
// may call them while the interrupted thread holds the malloc arena lock), fatal signals, and
// exec (async-signal-safe too). Everything here is async-signal-safe: no malloc, no locks, no
// stdio, only system calls on fixed buffers (docs/safety.md).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace gpuleak::core {

// A file's identity, to tell whether a descriptor number still refers to the file we opened
// (the program may close it and open its own file under the same number, or dup2 over it).
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  bool valid = false;
};
FileId file_id(int fd);  // invalid when `fd` is not open
bool still_same_file(int fd, const FileId &id);

// gpuleak's own lines go to descriptor 2 only while it is the stderr the process started with,
// or a terminal, pipe or socket: never into a regular file the program opened under number 2.
void remember_stderr();  // at load time
bool stderr_is_safe();

// One line built in a fixed buffer and written to stderr with a single write(2), when
// stderr_is_safe(), never raising SIGPIPE (log/stderr_write.h). Longer text is cut, never
// allocated.
class Line {
 public:
  Line &text(const char *s);  // control characters and ill-formed UTF-8 become U+FFFD
  Line &num(uint64_t v);
  Line &bytes(uint64_t b);  // "512 B", "1.5 MiB" (one decimal, rounded down)
  void emit();              // adds the newline

 private:
  char buf_[1024];
  size_t n_ = 0;
};

}  // namespace gpuleak::core
