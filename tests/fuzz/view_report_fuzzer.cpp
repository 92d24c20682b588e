// libFuzzer entry for `gpuleak view REPORT`: any bytes as the report a user hands to the viewer,
// through the same parsing, the page's data (embedded_data: the report dumped again, iterations
// as columns) and the splice into a template. A one-line error is fine; a crash, a sanitizer
// report or an exception the CLI would print as "internal error" is a bug.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "output/view/html_document.h"
#include "output/view/report_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace gpuleak::output::view;
  nlohmann::json report;
  std::string error;
  if (!parse_report_text(std::string_view(reinterpret_cast<const char *>(data), size), &report, &error)) return 0;
  try {
    (void)splice_into_template("<p>\"__GPULEAK_DATA__\"</p>", embedded_data(std::move(report), nullptr));
  } catch (const std::runtime_error &) {  // the CLI's "view: ..." one-line error
  }
  return 0;
}
