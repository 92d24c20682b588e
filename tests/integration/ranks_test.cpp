// Two ranks of one job on the fake CUDA, only rank 1 leaking: `gpuleak report` over both flags
// rank 1 (text and --ranks-json), and `gpuleak merge` names rank 1's process track as leaking.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "process.h"

namespace gpuleak::test {
namespace {

using nlohmann::json;

std::string slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(Ranks, TheRankThatGrowsWhileTheOthersStayFlatIsFlagged) {
  std::string out = make_temp_dir("ranks");
  auto env = shim_env(out);
  env["RANK"] = "0";
  ASSERT_EQ(run({program("prog_gpu_work"), "20", "--no-leak"}, env).exit_code, 0);
  env["RANK"] = "1";
  ASSERT_EQ(run({program("prog_gpu_work"), "20"}, env).exit_code, 0);
  auto captures = files_with_suffix(out, ".gpuleak");
  ASSERT_EQ(captures.size(), 2u);
  for (const std::string &c : captures) EXPECT_NE(c.find(".rank"), std::string::npos) << c;

  const std::string ranks = out + "/ranks.json";
  Result r = run({GPULEAK_CLI_PATH, "report", captures[0], captures[1], "--ranks-json", ranks}, {});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("rank 1 grows 1 MiB/iter while the others stay flat"), std::string::npos) << r.err;
  json j = json::parse(slurp(ranks));
  EXPECT_EQ(j["outliers"], json::array({1}));
  ASSERT_EQ(j["processes"].size(), 2u);
  EXPECT_EQ(j["processes"][0]["rank"], 0);
  EXPECT_EQ(j["processes"][0]["outlier"], false);

  // The same from the reports just written (no capture needed).
  auto reports = files_with_suffix(out, ".report.json");
  ASSERT_EQ(reports.size(), 2u);
  Result again = run({GPULEAK_CLI_PATH, "report", reports[0], reports[1]}, {});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("rank 1 grows 1 MiB/iter"), std::string::npos) << again.err;

  const std::string merged = out + "/merged.trace.json";
  Result m = run({GPULEAK_CLI_PATH, "merge", captures[0], captures[1], "-o", merged}, {});
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_NE(m.err.find("leaking 1.0 MiB/iter while the others stay flat"), std::string::npos) << m.err;
  int leaking_tracks = 0, names = 0;
  for (const json &e : json::parse(slurp(merged))) {
    if (e["ph"] != "M" || e["name"] != "process_name") continue;
    ++names;
    const std::string name = e["args"]["name"];
    if (name.rfind("rank 1 \u2014 leaking 1.0 MiB/iter (", 0) == 0) ++leaking_tracks;
    EXPECT_EQ(name.find("rank 0 \u2014"), std::string::npos) << name;
  }
  EXPECT_EQ(names, 2);
  EXPECT_EQ(leaking_tracks, 1);
}

TEST(Ranks, ReportsThatCannotBeReadAreOneLineErrors) {
  std::string out = make_temp_dir("ranks-bad");
  std::ofstream(out + "/bad.report.json") << "{ not json";
  Result r = run({GPULEAK_CLI_PATH, "report", out + "/bad.report.json", out + "/bad.report.json"}, {});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  Result one = run({GPULEAK_CLI_PATH, "report", out + "/bad.report.json", "--ranks-json", out + "/x.json"}, {});
  EXPECT_EQ(one.exit_code, 2);
}

}  // namespace
}  // namespace gpuleak::test
