// libFuzzer entry for the capture reader: any bytes, no crash, no sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string>

#include "format/capture_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gpuleak::format::Capture capture;
  std::string error;
  if (gpuleak::format::parse_capture(data, size, &capture, &error)) {
    for (const auto &m : capture.memory) (void)capture.string(m.stack_id);
  }
  return 0;
}
