// libFuzzer entry for the Chrome trace reader behind `gpuleak merge`: any bytes, gzip or not,
// no crash, no sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "output/trace/chrome_trace_reader.h"
#include "output/trace/file_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace gpuleak::output::trace;
  std::string_view text(reinterpret_cast<const char *>(data), size);
  std::string inflated;
  // The limit as `gpuleak merge` applies it, smaller: libFuzzer's RSS limit is 2 GiB.
  if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b && gunzip(text, &inflated, 64u << 20) == Gunzip::kOk)
    text = inflated;
  TraceReadStats stats;
  std::string error;
  size_t seen = 0;
  read_chrome_trace(
      text, [&](nlohmann::json &event) { return ++seen, event.is_object(); }, &stats, &error);
  return 0;
}
