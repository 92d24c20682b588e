// Temporary file, then rename (atomic_file.h).
#include "text/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gpuleak::text {

namespace {

// Enough names for any number of stale files a crashed run with our pid could have left.
constexpr int kNameAttempts = 100;

}  // namespace

std::unique_ptr<AtomicFile> AtomicFile::create(const std::string &path, std::string *error) {
  std::unique_ptr<AtomicFile> f(new AtomicFile());
  f->path_ = path;
  const std::string stem = path + ".tmp." + std::to_string(getpid());
  for (int attempt = 0; attempt < kNameAttempts; ++attempt) {
    std::string tmp = attempt == 0 ? stem : stem + "." + std::to_string(attempt);
    f->fd_ = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (f->fd_ >= 0) {
      f->tmp_ = std::move(tmp);
      return f;
    }
    if (errno != EEXIST) {
      *error = "cannot create " + tmp + ": " + std::strerror(errno);
      return nullptr;
    }
  }
  *error = "cannot create " + stem + ": " + std::strerror(EEXIST);
  return nullptr;
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) close(fd_);
  if (!committed_ && !tmp_.empty()) unlink(tmp_.c_str());
}

void AtomicFile::write(std::string_view bytes) {
  const char *data = bytes.data();
  size_t size = bytes.size();
  while (size > 0 && error_.empty()) {
    ssize_t n = ::write(fd_, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error_ = "cannot write " + path_ + ": " + std::strerror(n < 0 ? errno : EIO);
      return;
    }
    data += n;
    size -= static_cast<size_t>(n);
    written_ += static_cast<uint64_t>(n);
  }
}

bool AtomicFile::commit(std::string *error) {
  if (committed_) return true;
  // fsync before rename: after a crash the destination holds the old file or the whole new one,
  // never an empty one. EINVAL: the file system cannot sync (nothing to wait for).
  if (error_.empty() && fd_ >= 0 && fsync(fd_) != 0 && errno != EINVAL)
    error_ = "cannot write " + path_ + ": " + std::strerror(errno);
  if (fd_ >= 0 && close(fd_) != 0 && error_.empty()) error_ = "cannot write " + path_ + ": " + std::strerror(errno);
  fd_ = -1;
  if (error_.empty() && rename(tmp_.c_str(), path_.c_str()) != 0)
    error_ = "cannot write " + path_ + ": " + std::strerror(errno);
  if (!error_.empty()) {
    *error = error_;
    return false;
  }
  committed_ = true;
  return true;
}

bool write_file_atomically(const std::string &path, std::string_view bytes, std::string *error) {
  std::unique_ptr<AtomicFile> file = AtomicFile::create(path, error);
  if (!file) return false;
  file->write(bytes);
  return file->commit(error);
}

}  // namespace gpuleak::text
