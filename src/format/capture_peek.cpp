#include "format/capture_peek.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "format/capture_format.h"
#include "format/capture_reader.h"

namespace gpuleak::format {

bool peek_capture(const std::string &path, CapturePeek *out) {
  *out = CapturePeek{};
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  std::string head(64 * 1024, '\0');
  ssize_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? pread(fd, head.data(), head.size(), 0) : -1;
  // The last record, when it is a Stats record: its header and the record, at the file's end.
  constexpr size_t kTail = sizeof(RecordHeader) + sizeof(StatsRecord);
  unsigned char tail[kTail];
  const bool has_tail = n > 0 && static_cast<size_t>(st.st_size) >= sizeof(FileHeader) + kTail &&
                        pread(fd, tail, kTail, st.st_size - static_cast<off_t>(kTail)) == static_cast<ssize_t>(kTail);
  close(fd);
  if (n <= 0) return false;
  head.resize(static_cast<size_t>(n));
  Capture c;
  std::string error;
  if (!parse_capture(reinterpret_cast<const uint8_t *>(head.data()), head.size(), &c, &error)) return false;
  out->pid = c.header.pid;
  if (c.run) out->run_token = c.run->run_token;
  if (has_tail) {
    RecordHeader h;
    StatsRecord s;
    std::memcpy(&h, tail, sizeof h);
    std::memcpy(&s, tail + sizeof h, sizeof s);
    out->finished = h.size == sizeof s && h.type == static_cast<uint16_t>(RecordType::kStats) && s.final_record == 1;
  }
  return true;
}

}  // namespace gpuleak::format
