// #25: every JSON reader was quadratic in sibling objects. The depth-bounding callback made
// nlohmann's callback parser rescan the parent after each child object: a 1.2 MB report took
// `gpuleak check` 48 s, a 300,000-event torch.profiler trace took `gpuleak merge` 35 s. These
// inputs take the unfixed readers many minutes; the ctest TIMEOUT (CMakeLists.txt) is the guard,
// no time is asserted here. Timings: docs/limits.md.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "gate/report_view.h"
#include "output/trace/chrome_trace_reader.h"
#include "text/json_input.h"

namespace gpuleak {
namespace {

constexpr size_t kSiblings = 1'000'000;

std::string sibling_objects(size_t n) {
  std::string s = "[";
  s.reserve(3 * n + 2);
  for (size_t i = 0; i < n; ++i) s += i ? ",{}" : "{}";
  return s + "]";
}

TEST(JsonScaling, AMillionSiblingObjectsParse) {
  nlohmann::json doc;
  text::JsonError error;
  ASSERT_TRUE(text::parse_json("{\"x\": " + sibling_objects(kSiblings) + "}", &doc, &error)) << error.message;
  EXPECT_EQ(doc["x"].size(), kSiblings);
}

// The gate's reader (check, diff, baselines): a valid report with a large member it ignores.
TEST(JsonScaling, TheGateReadsAReportWithAMillionSiblings) {
  const std::string text =
      R"({"schema": "gpuleak.report/1", "run": {"program": "train", "pid": 1, "rank": null}, "verdict": "clean",)"
      R"( "iteration_source": "none", "devices": [], "iterations": [], "leaks": [], "oom": null, "extra": )" +
      sibling_objects(kSiblings) + "}";
  gate::Report r = gate::parse_report(gate::parse_json_text(text, "big.report.json"), "big.report.json");
  EXPECT_EQ(r.verdict, "clean");
}

// The shape of a torch.profiler export: {"traceEvents": [...]} with small complete events.
TEST(JsonScaling, AProfilerTraceOf300kEventsStreams) {
  constexpr size_t kEvents = 300'000;
  std::string text = R"({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "GPU"}], "traceEvents": [)";
  for (size_t i = 0; i < kEvents; ++i) {
    if (i) text += ",\n";
    text += R"({"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 2, "ts": )" + std::to_string(i) +
            R"(, "dur": 1, "args": {"External id": )" + std::to_string(i) + R"(, "Sequence number": 3}})";
  }
  text += "], \"traceName\": \"t.json\"}";
  output::trace::TraceReadStats stats;
  std::string error;
  uint64_t seen = 0;
  ASSERT_TRUE(output::trace::read_chrome_trace(
      text,
      [&](nlohmann::json &e) {
        seen += e.value("ph", "") == "X";
        return true;
      },
      &stats, &error))
      << error;
  EXPECT_EQ(seen, kEvents);
  EXPECT_EQ(stats.events, kEvents);
  EXPECT_FALSE(stats.repaired);
}

}  // namespace
}  // namespace gpuleak
