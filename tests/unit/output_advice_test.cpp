// The advice[] section of the report and its lines in the terminal summary: the documented shape
// (docs/report-format.md "advice[]"), the call site's frames, hostile names kept inert.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "analysis/analysis.h"
#include "analysis/capture_builder.h"
#include "output/report_json.h"
#include "output/text_summary.h"

namespace gpuleak::output {
namespace {

using nlohmann::json;
using testing::CaptureBuilder;
using testing::kMiB;

// Stack 7: a churning site whose function name is hostile; anything else: unknown.
Stack symbolize(uint32_t id) {
  if (id != 7) return {};
  Frame f;
  f.kind = Frame::Kind::kNative;
  f.function = "scratch</script><b>\"x\"";
  f.file = "train.cu";
  f.line = 41;
  f.module = "/opt/app/train";
  f.address = 0x401000;
  return {f};
}

json report_of(const format::Capture &c) {
  analysis::Analysis a = analysis::analyze(c);
  return json::parse(dump_report(make_report(c, a, symbolize, ReportContext{})));
}

CaptureBuilder churning_loop() {
  CaptureBuilder b;
  b.alloc(16 * kMiB, 1);
  for (int i = 0; i < 10; ++i) {
    b.begin("train");
    uint64_t t = b.alloc(4 * kMiB, 7);
    b.capture.memory.back().duration_ns = 30'000;
    b.advance(1'000'000);
    b.free(t).duration_ns = 20'000;
    b.end();
  }
  return b;
}

TEST(ReportAdvice, ChurnHasTheDocumentedShape) {
  json r = report_of(churning_loop().capture);
  ASSERT_EQ(r["advice"].size(), 1u) << r["advice"].dump(2);
  const json &a = r["advice"][0];
  EXPECT_EQ(a["kind"], "churn");
  EXPECT_EQ(a["device"], 0);
  EXPECT_EQ(a["site_id"].get<std::string>().size(), 16u);
  EXPECT_EQ(a["stack"][0]["function"], "scratch</script><b>\"x\"");  // the same bytes, re-parsed
  EXPECT_EQ(a["evidence"]["allocs_per_iteration"], 1);
  EXPECT_EQ(a["evidence"]["bytes_per_iteration"], 4 * kMiB);
  EXPECT_EQ(a["evidence"]["alloc_time_ns_per_iteration"], 30000);
  EXPECT_EQ(a["evidence"]["free_time_ns_per_iteration"], 20000);
  EXPECT_EQ(a["saving"]["time_ns_per_iteration"], 50000);
  EXPECT_EQ(a["sites"], json::array());
  EXPECT_TRUE(a["message"].is_string());
  // "</" never appears raw in the dumped text (the report can sit inside a <script>).
  std::string text = dump_report(r);
  EXPECT_EQ(text.find("</script>"), std::string::npos);
}

TEST(ReportAdvice, SerializationHasNoSite) {
  CaptureBuilder b = churning_loop();
  for (auto &m : b.capture.memory) m.duration_ns = m.duration_ns ? 400'000 : 0;
  json r = report_of(b.capture);
  const json *serial = nullptr;
  for (const json &a : r["advice"])
    if (a["kind"] == "serialization") serial = &a;
  ASSERT_NE(serial, nullptr) << r["advice"].dump(2);
  EXPECT_TRUE((*serial)["site_id"].is_null());
  EXPECT_EQ((*serial)["stack"], json::array());
  EXPECT_GT((*serial)["evidence"]["sync_share"].get<double>(), 0.4);
}

TEST(TextAdvice, OneLinePerFindingWithItsSite) {
  json r = report_of(churning_loop().capture);
  std::string s = text_summary(r, "r.json");
  EXPECT_NE(s.find("  advice (churn) at train.cu:41 in scratch</script><b>\"x\": 1 buffer of 4.0 MiB allocated and "
                   "freed here every iteration (50.0 us per iteration in "),
            std::string::npos)
      << s;
  EXPECT_LT(s.find("advice (churn)"), s.find("  report: r.json"));
}

TEST(TextAdvice, CapsTheLinesAndSurvivesOddShapes) {
  auto r = json::parse(R"({"advice": [{"kind": "late_release", "message": "m1", "stack": []},
    {"kind": "serialization", "message": "m2", "stack": null}, 3, {"kind": null},
    {"kind": "churn", "message": "m3"}]})");
  std::string s = advice_summary(r, 2);
  EXPECT_EQ(s,
            "  advice (late release): m1\n"
            "  advice (serialization): m2\n"
            "  advice: 3 more in the report\n");
  EXPECT_EQ(advice_summary(json::parse(R"({"advice": "x"})")), "");
  EXPECT_EQ(advice_summary(json::object()), "");
}

}  // namespace
}  // namespace gpuleak::output
