#include "output/trace/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "text/bounded_read.h"
#include "text/limits.h"

namespace gpuleak::output::trace {

namespace {

constexpr size_t kBufferSize = 1 << 20;

bool ends_with(const std::string &s, const char *suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

}  // namespace

std::unique_ptr<AtomicFile> AtomicFile::create(const std::string &path, std::string *error) {
  std::unique_ptr<AtomicFile> f(new AtomicFile());
  f->path_ = path;
  f->tmp_ = path + ".tmp." + std::to_string(getpid());
  f->fd_ = open(f->tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (f->fd_ < 0) {
    *error = "cannot create " + f->tmp_ + ": " + std::strerror(errno);
    return nullptr;
  }
  f->gzip_ = ends_with(path, ".gz");
  // windowBits 15 + 16: a gzip wrapper rather than zlib's.
  if (f->gzip_ && deflateInit2(&f->z_, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    *error = "cannot start gzip compression for " + path;
    f->gzip_ = false;
    return nullptr;  // the destructor removes the temporary file
  }
  f->buffer_.reserve(kBufferSize);
  return f;
}

AtomicFile::~AtomicFile() {
  if (gzip_) deflateEnd(&z_);
  if (fd_ >= 0) close(fd_);
  if (!committed_ && !tmp_.empty()) unlink(tmp_.c_str());
}

void AtomicFile::write(std::string_view bytes) {
  if (!error_.empty()) return;
  buffer_.append(bytes);
  if (buffer_.size() >= kBufferSize) flush_buffer(false);
}

void AtomicFile::write_raw(const char *data, size_t size) {
  while (size > 0 && error_.empty()) {
    ssize_t n = ::write(fd_, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error_ = "cannot write " + path_ + ": " + std::strerror(n < 0 ? errno : EIO);
      return;
    }
    data += n;
    size -= static_cast<size_t>(n);
    on_disk_ += static_cast<uint64_t>(n);
  }
}

void AtomicFile::flush_buffer(bool finish) {
  if (!error_.empty()) return;
  if (!gzip_) {
    write_raw(buffer_.data(), buffer_.size());
    buffer_.clear();
    return;
  }
  z_.next_in = reinterpret_cast<Bytef *>(buffer_.data());
  z_.avail_in = static_cast<uInt>(buffer_.size());
  compressed_.resize(kBufferSize);
  int rc;
  do {
    z_.next_out = reinterpret_cast<Bytef *>(compressed_.data());
    z_.avail_out = static_cast<uInt>(compressed_.size());
    rc = deflate(&z_, finish ? Z_FINISH : Z_NO_FLUSH);
    if (rc == Z_STREAM_ERROR) {
      error_ = "gzip compression failed for " + path_;
      return;
    }
    write_raw(compressed_.data(), compressed_.size() - z_.avail_out);
  } while (error_.empty() && (z_.avail_out == 0 || (finish && rc != Z_STREAM_END)));
  buffer_.clear();
}

bool AtomicFile::commit(std::string *error) {
  flush_buffer(true);
  if (error_.empty() && fsync(fd_) != 0 && errno != EINVAL)
    error_ = "cannot write " + path_ + ": " + std::strerror(errno);
  if (close(fd_) != 0 && error_.empty()) error_ = "cannot write " + path_ + ": " + std::strerror(errno);
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

Gunzip gunzip(std::string_view in, std::string *out, uint64_t limit) {
  z_stream z{};
  // windowBits 15 + 32: gzip or zlib, detected from the header.
  if (inflateInit2(&z, 15 + 32) != Z_OK) return Gunzip::kCorrupt;
  z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  std::string chunk(kBufferSize, '\0');
  Gunzip result = Gunzip::kOk;
  while (true) {
    z.next_out = reinterpret_cast<Bytef *>(chunk.data());
    z.avail_out = static_cast<uInt>(chunk.size());
    int rc = inflate(&z, Z_NO_FLUSH);
    const size_t got = chunk.size() - z.avail_out;
    if (out->size() + got > limit) {  // checked before the bytes are kept: a bomb costs the limit
      result = Gunzip::kTooLarge;
      break;
    }
    out->append(chunk.data(), got);
    if (rc == Z_STREAM_END) {
      if (z.avail_in == 0) break;
      inflateReset(&z);  // a file of several gzip members (concatenated .gz files)
      continue;
    }
    if (rc != Z_OK || (z.avail_in == 0 && z.avail_out != 0)) {
      result = Gunzip::kCorrupt;  // corrupt, or cut short
      break;
    }
  }
  inflateEnd(&z);
  return result;
}

bool read_file(const std::string &path, std::string *out, std::string *error) {
  out->clear();
  constexpr const char *kWhat = "a trace";
  std::string raw;
  if (text::read_bounded(path, text::kMaxTraceBytes, kWhat, &raw, error) != text::ReadResult::kOk) return false;
  if (raw.size() >= 2 && static_cast<unsigned char>(raw[0]) == 0x1f && static_cast<unsigned char>(raw[1]) == 0x8b) {
    switch (gunzip(raw, out, text::kMaxTraceBytes)) {
      case Gunzip::kOk:
        return true;
      case Gunzip::kTooLarge:
        out->clear();
        out->shrink_to_fit();
        *error = text::too_large(path, text::kMaxTraceBytes, "a trace, once decompressed");
        return false;
      case Gunzip::kCorrupt:
        *error = path + ": corrupt or truncated gzip data";
        return false;
    }
  }
  *out = std::move(raw);
  return true;
}

}  // namespace gpuleak::output::trace
