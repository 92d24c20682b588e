// libFuzzer entry for the capture reader: any bytes, no crash, no sanitizer report. The same bytes
// read as a file with the memory records left in it (read_capture_stream) must replay exactly the
// records the whole-file decoder kept, in its stable time order (the aggregated form's unfolded
// records included).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "format/capture_reader.h"
#include "format/memory_source.h"

namespace {

void check_stream(const uint8_t *data, size_t size, const gpuleak::format::Capture &whole) {
  int fd = memfd_create("capture", 0);
  if (fd < 0) return;
  if (::write(fd, data, size) != static_cast<ssize_t>(size)) {
    ::close(fd);
    return;
  }
  gpuleak::format::Capture rest;
  gpuleak::format::FileMemorySource file;
  std::string error;
  bool ok = gpuleak::format::read_capture_stream("/proc/self/fd/" + std::to_string(fd), &rest, &file, &error);
  ::close(fd);                // the source reopened the file: its copy stays valid
  if (!ok) __builtin_trap();  // the whole-file decoder accepted these bytes
  std::vector<uint64_t> expected, got;
  gpuleak::format::VectorMemorySource(whole.memory).replay([&](const auto &r) {
    expected.push_back(r.ts_ns ^ r.address);
  });
  file.replay([&](const auto &r) { got.push_back(r.ts_ns ^ r.address); });
  // The whole-file decoder keeps the records the aggregated form unfolds to (format 1.4) with the
  // file's own; the file source merges them into its replays.
  const uint64_t unfolded = rest.aggregated ? rest.aggregated->synthetic : 0;
  if (got != expected || rest.memory_records + unfolded != whole.memory.size()) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gpuleak::format::Capture capture;
  std::string error;
  if (gpuleak::format::parse_capture(data, size, &capture, &error)) {
    for (const auto &m : capture.memory) (void)capture.string(m.stack_id);
    check_stream(data, size, capture);
  }
  return 0;
}
