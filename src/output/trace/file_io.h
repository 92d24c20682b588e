// Where trace bytes go and come from: a trace is a whole-file artifact written through
// text::AtomicFile (a temporary name beside the destination, renamed into place on success); a
// path ending in ".gz" is gzip-compressed on the way (one gzip member, which Perfetto and
// chrome://tracing open directly). Reading undoes gzip when the bytes start with its magic,
// whatever the name.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "text/atomic_file.h"

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

// A trace file: buffered, gzip-compressed when the name ends in ".gz", atomic.
class OutputFile : public ByteStream {
 public:
  // Creates the temporary file next to `path`. Returns null with a one-line reason in *error.
  static std::unique_ptr<OutputFile> create(const std::string &path, std::string *error);
  ~OutputFile() override;  // the temporary file is removed unless commit() succeeded
  OutputFile(const OutputFile &) = delete;
  OutputFile &operator=(const OutputFile &) = delete;

  // Buffered; the first failure is remembered and reported by commit().
  void write(std::string_view bytes) override;
  // Flushes, closes and renames over `path` (replacing it). False with a one-line reason.
  bool commit(std::string *error);
  uint64_t bytes_on_disk() const { return file_->bytes_written(); }
  bool gzip() const { return gzip_; }

 private:
  OutputFile() = default;
  void flush_buffer(bool finish);

  std::unique_ptr<text::AtomicFile> file_;
  bool gzip_ = false;
  std::string error_;  // the compressor's; the file's own are text::AtomicFile's
  std::string buffer_;
  std::string compressed_;
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
