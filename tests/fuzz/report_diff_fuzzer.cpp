// libFuzzer entry for `gpuleak diff A B`: the input is split into two report texts at its first
// NUL byte (the whole of it twice when it has none), each read as the CLI reads a file, then
// diffed (text and gpuleak.diff/1 JSON; the pairing of their lines, src/gate/pairing.h, with
// it). GateError is the CLI's one-line error (exit 2); anything else escaping is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "gate/diff.h"
#include "gate/report_view.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace gpuleak::gate;
  const std::string input(reinterpret_cast<const char *>(data), size);
  const size_t nul = input.find('\0');
  const std::string a_text = nul == std::string::npos ? input : input.substr(0, nul);
  const std::string b_text = nul == std::string::npos ? input : input.substr(nul + 1);
  try {
    Report a = parse_report(parse_json_text(a_text, "a.json"), "a.json");
    Report b = parse_report(parse_json_text(b_text, "b.json"), "b.json");
    (void)diff_leaks(a, b, 0.05);
    (void)write_diff(a, b, 0.05);
    // As `gpuleak diff --json` writes it: the program's strings replaced where not UTF-8.
    (void)diff_json(a, b, 0.05).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  } catch (const GateError &) {
  }
  return 0;
}
