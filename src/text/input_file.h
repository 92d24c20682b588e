// Opening an input file named by the user (a capture, a report, a baseline, a trace, a budgets or
// suppressions file): only a regular file is read. open() on a FIFO with no writer blocks forever,
// and a device (/dev/zero, a terminal) never ends or waits for a person, so every reader opens
// through open_input(): O_NONBLOCK, which makes open() return at once whatever the file is, then
// fstat(), and anything but a regular file is refused with one line (#25). Header-only: the
// capture reader (src/format) uses it without linking the rest of src/text.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace gpuleak::text {

// What a file that is not regular is, in words: "a FIFO (named pipe) or pipe", "a character device".
inline const char *file_kind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO (named pipe) or pipe";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a plain file";
}

// An open descriptor (O_RDONLY, O_CLOEXEC, blocking again) for the regular file at `path`, with
// its size in *size when size is given; -1 with *error = "PATH: reason" otherwise: what open()
// says ("No such file or directory", "Is a directory"), or "not a regular file (a FIFO (named
// pipe) or pipe)".
inline int open_input(const std::string &path, std::string *error, uint64_t *size = nullptr) {
  int fd;
  do fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    *error = path + ": " + std::strerror(errno);
    return -1;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    *error = path + ": " + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = S_ISDIR(st.st_mode) ? path + ": " + std::strerror(EISDIR)
                                 : path + ": not a regular file (" + file_kind(st.st_mode) + ")";
    ::close(fd);
    return -1;
  }
  // Reads of a regular file never wait, but the flag is dropped so nothing downstream sees it.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  if (size) *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

}  // namespace gpuleak::text
