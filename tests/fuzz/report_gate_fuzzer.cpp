// libFuzzer entry for `gpuleak check`'s input side: any bytes as a report (and as a suppressions
// file) go through the same parsing, evaluation and writers as the CLI. GateError is the one-line
// error the CLI prints (exit 2); anything else escaping, or a sanitizer report, is a bug.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gate/evaluate.h"
#include "gate/report_view.h"
#include "gate/suppressions.h"
#include "gate/writers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  using namespace gpuleak::gate;
  try {
    Suppressions suppressions;
    suppressions.parse_text(text, "fuzz.supp");
  } catch (const GateError &) {
  }
  try {
    Report report = parse_report(parse_json_text(text, "fuzz.json"), "fuzz.json");
    Suppressions none;
    Budgets budgets;
    std::vector<ReportOutcome> outcomes{evaluate(report, budgets, none, &report)};
    judge_empty_captures(&outcomes);
    (void)write_junit(outcomes);
    (void)write_markdown(outcomes);
  } catch (const GateError &) {
  }
  return 0;
}
