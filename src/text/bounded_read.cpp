#include "text/bounded_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "text/input_file.h"
#include "text/limits.h"

namespace gpuleak::text {

std::string limit_text(uint64_t bytes) {
  static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  size_t u = 0;
  while (u + 1 < sizeof units / sizeof *units && bytes >= 1024 && bytes % 1024 == 0) bytes /= 1024, ++u;
  return std::to_string(bytes) + " " + units[u];
}

std::string too_large(const std::string &path, uint64_t limit, const char *what) {
  return path + ": larger than " + limit_text(limit) + ", the limit for " + what + " (docs/limits.md)";
}

ReadResult read_bounded(const std::string &path, uint64_t limit, const char *what, std::string *out,
                        std::string *error) {
  out->clear();
  uint64_t size = 0;
  int fd = open_input(path, error, &size);
  if (fd < 0) return ReadResult::kIoError;
  if (size > limit) {
    ::close(fd);
    *error = too_large(path, limit, what);
    return ReadResult::kTooLarge;
  }
  out->reserve(static_cast<size_t>(size));
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = path + ": " + std::strerror(errno);
      ::close(fd);
      return ReadResult::kIoError;
    }
    if (n == 0) break;
    // A file that grows while it is read.
    if (out->size() + static_cast<size_t>(n) > limit) {
      ::close(fd);
      out->clear();
      out->shrink_to_fit();
      *error = too_large(path, limit, what);
      return ReadResult::kTooLarge;
    }
    out->append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return ReadResult::kOk;
}

}  // namespace gpuleak::text
