#include "core/signal_safe.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "log/stderr_write.h"

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

namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD, as text::printable writes it

// The length of the well-formed UTF-8 sequence at `s` that is not a C1 control (U+0080-U+009F),
// or 0.
size_t printable_sequence(const unsigned char *s) {
  const unsigned char c = s[0];
  auto cont = [&](int i) { return (s[i] & 0xC0) == 0x80; };
  if (c >= 0xC2 && c <= 0xDF) return cont(1) && !(c == 0xC2 && s[1] < 0xA0) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2) || (c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] > 0x9F)) return 0;
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3) || (c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] > 0x8F)) return 0;
    return 4;
  }
  return 0;
}

}  // namespace

// Untrusted text (paths, the environment's values) is made inert for a terminal, like
// text::printable: control characters (C0, DEL, C1) and ill-formed UTF-8 become U+FFFD.
Line &Line::text(const char *s) {
  const auto *p = reinterpret_cast<const unsigned char *>(s);
  while (p && *p && n_ < sizeof buf_ - 1) {
    size_t len = *p >= 0x20 && *p < 0x7F ? 1 : *p >= 0x80 ? printable_sequence(p) : 0;
    const char *from = len ? reinterpret_cast<const char *>(p) : kReplacement;
    size_t copy = len ? len : sizeof kReplacement - 1;
    if (n_ + copy > sizeof buf_ - 1) break;
    for (size_t i = 0; i < copy; ++i) buf_[n_++] = from[i];
    p += len ? len : 1;
  }
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
  if (stderr_is_safe()) log::write_stderr(buf_, n_);
}

}  // namespace gpuleak::core
