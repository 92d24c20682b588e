// Whole-file artifacts (reports, traces, the viewer's HTML, JUnit XML) are written so that a
// reader never sees half a file and a failed run leaves none behind (STYLE.md lesson 7): the bytes
// go to a temporary file beside the destination, which is renamed over it once complete.
//
// The temporary file is created with O_EXCL | O_NOFOLLOW: a symlink planted at its name is never
// followed, and a file already there (another run's, or one a crashed run left) is never
// truncated: the next free name is taken instead. rename(2) replaces the destination itself, a
// symlink included, never what a symlink points to.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace gpuleak::text {

class AtomicFile {
 public:
  // Creates the temporary file next to `path`. Returns null with a one-line reason in *error.
  static std::unique_ptr<AtomicFile> create(const std::string &path, std::string *error);
  ~AtomicFile();  // removes the temporary file unless commit() succeeded
  AtomicFile(const AtomicFile &) = delete;
  AtomicFile &operator=(const AtomicFile &) = delete;

  // Unbuffered (callers buffer). After the first failure nothing more is written; commit()
  // reports it.
  void write(std::string_view bytes);
  // Flushes to disk, closes and renames over the destination. False with a one-line reason.
  bool commit(std::string *error);

  const std::string &path() const { return path_; }
  uint64_t bytes_written() const { return written_; }

 private:
  AtomicFile() = default;

  std::string path_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
  std::string error_;
  uint64_t written_ = 0;
};

// `bytes` into `path` through an AtomicFile. False with a one-line reason in *error.
bool write_file_atomically(const std::string &path, std::string_view bytes, std::string *error);

}  // namespace gpuleak::text
