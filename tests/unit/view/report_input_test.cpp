// `gpuleak view REPORT` accepts exactly the report versions the gate reads (output/report_schema.h):
// a minor version within the major one (fields only added) is read by both, a newer major by
// neither, each with a one-line reason.
#include <gtest/gtest.h>

#include <string>

#include "gate/report_view.h"
#include "output/view/report_input.h"

namespace gpuleak::output::view {
namespace {

bool gate_reads(const std::string &text) {
  try {
    gate::parse_report(nlohmann::json::parse(text), "r.json");
    return true;
  } catch (const gate::GateError &) {
    return false;
  }
}

TEST(ReportInput, AcceptsTheVersionsTheGateReads) {
  const struct {
    const char *schema;
    bool readable;
  } cases[] = {{"gpuleak.report/1", true},  {"gpuleak.report/1.4", true}, {"gpuleak.report/2", false},
               {"gpuleak.report/0", false}, {"gpuleak.report/x", false},  {"gpuleak.ranks/1", false},
               {"gpuleak.report/", false}};
  for (const auto &c : cases) {
    const std::string text = std::string(R"({"schema": ")") + c.schema + R"(", "verdict": "clean", "devices": []})";
    nlohmann::json report;
    std::string error;
    EXPECT_EQ(parse_report_text(text, &report, &error), c.readable) << c.schema << ": " << error;
    EXPECT_EQ(gate_reads(text), c.readable) << c.schema;
    EXPECT_EQ(error.find('\n'), std::string::npos);
  }
}

TEST(ReportInput, SaysWhyInOneLine) {
  nlohmann::json report;
  std::string error;
  EXPECT_FALSE(parse_report_text(R"({"schema": "gpuleak.report/2"})", &report, &error));
  EXPECT_EQ(error,
            "cannot be read: report schema gpuleak.report/2 is newer than this gpuleak reads (gpuleak.report/1); "
            "upgrade gpuleak");
  EXPECT_FALSE(parse_report_text(R"({"name": "x"})", &report, &error));
  EXPECT_EQ(error, "is not a gpuleak report (no \"schema\": \"gpuleak.report/1\")");
}

}  // namespace
}  // namespace gpuleak::output::view
