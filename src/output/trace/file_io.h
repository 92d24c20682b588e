// Where trace bytes go and come from: a whole-file artifact is written to a temporary name in the
// destination's folder and renamed into place on success (a reader never sees half a trace, and a
// failed run leaves no file behind); a path ending in ".gz" is gzip-compressed on the way (one
// gzip member, which Perfetto and chrome://tracing open directly). Reading undoes gzip when the
// bytes start with its magic, whatever the name.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace gpuleak::output::trace {

class ByteStream {
 public:
  virtual ~ByteStream() = default;
  virtual void write(std::string_view bytes) = 0;
};

// Collects everything in memory (tests, and `gpuleak merge` converting a capture).
class StringStream : public ByteStream {
 public:
  void write(std::string_view bytes) override { data.append(bytes); }
  std::string data;
};

class AtomicFile : public ByteStream {
 public:
  // Creates the temporary file next to `path`. Returns null with a one-line reason in *error.
  static std::unique_ptr<AtomicFile> create(const std::string &path, std::string *error);
  ~AtomicFile() override;  // removes the temporary file unless commit() succeeded
  AtomicFile(const AtomicFile &) = delete;
  AtomicFile &operator=(const AtomicFile &) = delete;

  // Buffered; the first failure is remembered and reported by commit().
  void write(std::string_view bytes) override;
  // Flushes, closes and renames over `path` (replacing it). False with a one-line reason.
  bool commit(std::string *error);
  uint64_t bytes_on_disk() const { return on_disk_; }
  bool gzip() const { return gzip_; }

 private:
  AtomicFile() = default;
  void flush_buffer(bool finish);
  void write_raw(const char *data, size_t size);

  std::string path_, tmp_;
  int fd_ = -1;
  bool gzip_ = false;
  bool committed_ = false;
  std::string error_;
  std::string buffer_;
  std::string compressed_;
  uint64_t on_disk_ = 0;
  z_stream z_{};
};

// Reads a whole trace, gunzipping it (every member) when it starts with the gzip magic. False
// with a one-line reason (naming the path) on I/O errors, corrupt compressed data, or more than
// text::kMaxTraceBytes before or after gunzip (a gzip bomb stops there, docs/limits.md).
bool read_file(const std::string &path, std::string *out, std::string *error);

// The bytes gunzipped, stopping with kTooLarge once more than `limit` bytes came out.
enum class Gunzip { kOk, kCorrupt, kTooLarge };
Gunzip gunzip(std::string_view in, std::string *out, uint64_t limit);

}  // namespace gpuleak::output::trace
