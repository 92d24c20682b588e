// Reading reports: the typed view, and the one-line errors for files the gate cannot use.
#include <unistd.h>

#include <gtest/gtest.h>

#include "gate/report_view.h"
#include "report_fixture.h"

namespace gpuleak::gate {
namespace {

using namespace testing;

std::string load_error(const std::string &path) {
  try {
    load_report(path);
  } catch (const GateError &e) {
    return e.what();
  }
  return "(no error)";
}

TEST(GateReportView, ReadsTheFieldsTheGateUses) {
  json doc = report("leak");
  doc["leaks"] = json::array({leak("00000000000000aa", "cache_activation", "/src/leaky.cpp", 14, 1048576.0)});
  doc["devices"][0]["forecast"] = {{"iterations_left", 900}, {"seconds_left", 12.5}, {"bytes_per_iteration", 1048576}};
  doc["oom"] = {{"events", json::array({{{"device", 0},
                                         {"requested_bytes", 4096},
                                         {"recovered", false},
                                         {"api", "cuMemAlloc_v2"},
                                         {"site_id", "bb"},
                                         {"stack", json::array()}}})}};
  Report r = parse(doc);
  EXPECT_EQ(r.program, "train");
  EXPECT_EQ(r.pid, 42);
  EXPECT_FALSE(r.rank);
  EXPECT_EQ(r.verdict, "leak");
  ASSERT_EQ(r.leaks.size(), 1u);
  EXPECT_EQ(r.leaks[0].stack.describe(), "cache_activation (/src/leaky.cpp:14)");
  ASSERT_TRUE(r.devices[0].forecast);
  EXPECT_EQ(r.devices[0].forecast->iterations_left, 900u);
  ASSERT_EQ(r.ooms.size(), 1u);
  EXPECT_EQ(r.ooms[0].stack.describe(), "unknown site");
  EXPECT_EQ(r.steady_live(0, 1).size(), 3u);
  EXPECT_EQ(r.display_name(), "train (pid 42)");
}

TEST(GateReportView, PrefersThePythonFrameForFileAndLine) {
  Stack s;
  s.frames.push_back(
      {"native", std::string("at::empty_cuda"), std::string("aten/Empty.cpp"), std::string("libtorch.so"), 51});
  s.frames.push_back({"python", std::string("train_step"), std::string("/p/train.py"), std::nullopt, 42});
  EXPECT_EQ(s.describe(), "train_step (/p/train.py:42)");
}

TEST(GateReportView, IgnoresUnknownFieldsAndToleratesAbsentOptionalOnes) {
  json doc = {{"schema", "gpuleak.report/1"}, {"verdict", "clean"}, {"devices", json::array()}, {"future", {1, 2}}};
  Report r = parse(doc, "dir/min.report.json");
  EXPECT_EQ(r.program, "min.report.json");
  EXPECT_TRUE(r.leaks.empty());
}

TEST(GateReportView, OneLineErrorsForUnusableFiles) {
  ScratchDir dir;
  EXPECT_EQ(load_error(dir.file("missing.json")),
            "cannot read " + dir.file("missing.json") + ": No such file or directory");
  std::string full = report().dump();
  std::string cut = dir.write("cut.json", full.substr(0, full.size() / 2));
  EXPECT_EQ(load_error(cut),
            cut + ": truncated JSON (the document ends early, at byte " + std::to_string(full.size() / 2) + ")");
  std::string foreign = dir.write("foreign.json", R"({"name": "package.json", "version": "1.0"})");
  EXPECT_EQ(load_error(foreign), foreign + ": not a gpuleak report (no \"schema\": \"gpuleak.report/1\")");
  std::string array = dir.write("array.json", "[1, 2]");
  EXPECT_EQ(load_error(array), array + ": not a gpuleak report (no \"schema\": \"gpuleak.report/1\")");
  json v2 = report();
  v2["schema"] = "gpuleak.report/2";
  std::string newer = dir.write("newer.json", v2.dump());
  EXPECT_EQ(
      load_error(newer),
      newer + ": report schema gpuleak.report/2 is newer than this gpuleak reads (gpuleak.report/1); upgrade gpuleak");
  std::string cut_number = dir.write("cut2.json", "{\"schema\": \"gpuleak.report/1\", \"verdict\": tr");
  EXPECT_EQ(load_error(cut_number), cut_number + ": truncated JSON (the document ends early, at byte 44)");
  std::string wrong_close = dir.write("wrong.json", "{\"a\": 1]");
  EXPECT_EQ(load_error(wrong_close), wrong_close + ": not valid JSON (syntax error at byte 8)");
  std::string empty = dir.write("empty.json", "  \n");
  EXPECT_EQ(load_error(empty), empty + ": empty file, not JSON");
  std::string garbage = dir.write("garbage.json", "{\"schema\": nope}");
  EXPECT_EQ(load_error(garbage), garbage + ": not valid JSON (syntax error at byte 13)");
  std::string huge = dir.write("huge.json", "{\"schema\": 1E8884888888}");  // found by the fuzzer
  EXPECT_EQ(load_error(huge), huge + ": not valid JSON (a number out of range)");
  EXPECT_EQ(load_error(dir.path()).rfind("cannot read " + dir.path() + ": Is a directory", 0), 0u);
}

std::string parse_error(const json &doc) {
  try {
    parse(doc);
  } catch (const GateError &e) {
    return e.what();
  }
  return "(no error)";
}

// #18: a "leak" verdict must come with the leaks it is made of, each with its rate: a gate that
// read a missing rate as 0, or no leaks as none over budget, passed any leak.
TEST(GateReportView, LeakVerdictWithoutJudgeableLeaksIsMalformed) {
  for (const json &leaks : {json(nullptr), json::array()}) {
    json doc = report("leak");
    doc["leaks"] = leaks;
    EXPECT_EQ(parse_error(doc), "r.json: malformed report: verdict \"leak\" but leaks[] names no leak");
  }
  json missing = report("leak");
  missing.erase("leaks");
  EXPECT_EQ(parse_error(missing), "r.json: malformed report: verdict \"leak\" but leaks[] names no leak");
  for (const json &rate : {json(nullptr), json(-1), json(-0.5), json("1 MiB"), json("absent")}) {
    json doc = report("leak");
    doc["leaks"] = json::array({leak("aa", "f", "f.cpp", 1, 10)});
    if (rate == "absent")
      doc["leaks"][0].erase("bytes_per_iteration");
    else
      doc["leaks"][0]["bytes_per_iteration"] = rate;
    EXPECT_EQ(parse_error(doc),
              "r.json: malformed report: leaks[0].bytes_per_iteration is not a byte count (a number, 0 or more)")
        << rate;
  }
  json fine = report("leak");
  fine["leaks"] = json::array({leak("aa", "f", "f.cpp", 1, 10.5)});
  EXPECT_EQ(parse_error(fine), "(no error)");
  EXPECT_EQ(parse_error(report("clean")), "(no error)");  // no leaks, no leak verdict: fine
}

// #18 and #17: JSON nested past the bound, a file larger than the limit, an endless file, and a
// capture given where a report belongs: one line each, before the memory is spent.
TEST(GateReportView, HostileAndMistakenFilesGetOneLine) {
  ScratchDir dir;
  std::string deep = dir.write("deep.json", std::string(100000, '[') + std::string(100000, ']'));
  EXPECT_EQ(load_error(deep), deep + ": JSON nested deeper than 512 levels");
  std::string big = dir.write("big.json", "");
  ASSERT_EQ(truncate(big.c_str(), (128 << 20) + 1), 0);
  EXPECT_EQ(load_error(big), big +
                                 ": larger than 128 MiB, the limit for a report, baseline, budgets or suppressions "
                                 "file (docs/limits.md)");
  EXPECT_EQ(load_error("/dev/zero"), "cannot read /dev/zero: not a regular file (a character device)");
  std::string capture = dir.write("train.123.gpuleak", std::string("GPULEAK\0\x01\0\x01\0", 12));
  EXPECT_EQ(load_error(capture), capture + " is a capture, not a report: run `gpuleak report " + capture + "` first");
}

TEST(GateReportView, MalformedFieldsNameTheirPath) {
  json doc = report();
  doc["devices"][0]["peak_live_bytes"] = "lots";
  EXPECT_THROW(
      try { parse(doc); } catch (const GateError &e) {
        EXPECT_STREQ(e.what(), "r.json: malformed report: devices[0].peak_live_bytes is not a byte count");
        throw;
      },
      GateError);
  json bad_verdict = report();
  bad_verdict["verdict"] = "catastrophe";
  EXPECT_THROW(parse(bad_verdict), GateError);
  json no_devices = report();
  no_devices.erase("devices");
  EXPECT_THROW(parse(no_devices), GateError);
  json neg = report();
  neg["leaks"] = json::array({leak("aa", "f", "f.cpp", 1, 10)});
  neg["leaks"][0]["live_bytes"] = -5;
  EXPECT_THROW(parse(neg), GateError);
}

TEST(GateReportView, UnknownOrOlderSchemasAreRefused) {
  for (const char *schema : {"gpuleak.report/0", "gpuleak.report/x", "gpuleak.report/"}) {
    json doc = report();
    doc["schema"] = schema;
    EXPECT_THROW(parse(doc), GateError) << schema;
  }
  json minor = report();
  minor["schema"] = "gpuleak.report/1.3";  // a minor suffix is still major 1
  EXPECT_NO_THROW(parse(minor));
}

}  // namespace
}  // namespace gpuleak::gate
