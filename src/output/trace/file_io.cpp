#include "output/trace/file_io.h"

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

std::unique_ptr<OutputFile> OutputFile::create(const std::string &path, std::string *error) {
  std::unique_ptr<OutputFile> f(new OutputFile());
  f->file_ = text::AtomicFile::create(path, error);
  if (!f->file_) return nullptr;
  f->gzip_ = ends_with(path, ".gz");
  // windowBits 15 + 16: a gzip wrapper rather than zlib's.
  if (f->gzip_ && deflateInit2(&f->z_, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    *error = "cannot start gzip compression for " + path;
    f->gzip_ = false;
    return nullptr;  // the temporary file goes with file_
  }
  f->buffer_.reserve(kBufferSize);
  return f;
}

OutputFile::~OutputFile() {
  if (gzip_) deflateEnd(&z_);
}

void OutputFile::write(std::string_view bytes) {
  if (!error_.empty()) return;
  buffer_.append(bytes);
  if (buffer_.size() >= kBufferSize) flush_buffer(false);
}

void OutputFile::flush_buffer(bool finish) {
  if (!error_.empty()) return;
  if (!gzip_) {
    file_->write(buffer_);
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
      error_ = "gzip compression failed for " + file_->path();
      return;
    }
    file_->write(std::string_view(compressed_.data(), compressed_.size() - z_.avail_out));
  } while (z_.avail_out == 0 || (finish && rc != Z_STREAM_END));
  buffer_.clear();
}

bool OutputFile::commit(std::string *error) {
  flush_buffer(true);
  if (!error_.empty()) {
    *error = error_;
    return false;
  }
  return file_->commit(error);
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
