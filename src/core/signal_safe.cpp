#include "core/signal_safe.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace gpuleak::core {

namespace {
FileId g_stderr;  // written once by the constructor, before any other thread exists
}

FileId file_id(int fd) {
  FileId id;
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) return id;
  id.dev = st.st_dev;
  id.ino = st.st_ino;
  id.valid = true;
  return id;
}

bool still_same_file(int fd, const FileId &id) {
  FileId now = file_id(fd);
  return id.valid && now.valid && now.dev == id.dev && now.ino == id.ino;
}

void remember_stderr() { g_stderr = file_id(2); }

bool stderr_is_safe() {
  struct stat st;
  if (fstat(2, &st) != 0) return false;
  if (g_stderr.valid && st.st_dev == g_stderr.dev && st.st_ino == g_stderr.ino) return true;
  return S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
}

Line &Line::text(const char *s) {
  while (s && *s && n_ < sizeof buf_ - 1) buf_[n_++] = *s++;
  return *this;
}

Line &Line::num(uint64_t v) {
  char digits[24];
  int k = 0;
  do {
    digits[k++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v);
  while (k > 0 && n_ < sizeof buf_ - 1) buf_[n_++] = digits[--k];
  return *this;
}

Line &Line::bytes(uint64_t b) {
  static const char *const units[] = {" B", " KiB", " MiB", " GiB", " TiB"};
  int u = 0;
  uint64_t scale = 1;
  while (u < 4 && b / scale >= 1024) scale *= 1024, ++u;
  num(b / scale);
  if (u) {
    text(".");
    num((b % scale) * 10 / scale);
  }
  return text(units[u]);
}

void Line::emit() {
  buf_[n_++] = '\n';
  if (!stderr_is_safe()) return;
  int saved = errno;
  for (size_t done = 0; done < n_;) {
    ssize_t w = write(2, buf_ + done, n_ - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    done += static_cast<size_t>(w);
  }
  errno = saved;
}

}  // namespace gpuleak::core
