// Several processes compared (`gpuleak report R0 R1 ...`): the rank that grows while the others
// stay flat is flagged, ranks come from the run or the file name, and the JSON says so.
#include <gtest/gtest.h>

#include <algorithm>

#include "analysis/rank_outliers.h"
#include "gate/rank_compare.h"
#include "report_fixture.h"

namespace gpuleak::gate::testing {
namespace {

Report rank_report(int rank, double growth, const std::string &path, bool rank_in_run = true) {
  json doc = report(growth > 0 ? "leak" : "clean");
  doc["run"]["rank"] = rank_in_run ? json(rank) : json(nullptr);
  doc["devices"][0]["growth_bytes_per_iteration"] = growth;
  // A leak verdict comes with its leak (a report without one is malformed).
  if (growth > 0) doc["leaks"] = json::array({leak("00aa", "grow", "/src/train.cpp", 9, growth)});
  return parse(doc, path);
}

TEST(RankOutliers, OnlyTheOneThatGrowsApartIsFlagged) {
  using analysis::rank_outliers;
  EXPECT_EQ(rank_outliers({0, 1048576, 0, 0}), (std::vector<bool>{false, true, false, false}));
  EXPECT_EQ(rank_outliers({1048576, 1048576}), (std::vector<bool>{false, false})) << "all alike: growth";
  EXPECT_EQ(rank_outliers({1048576}), (std::vector<bool>{false})) << "nothing to compare with";
  EXPECT_EQ(rank_outliers({0, 2000}), (std::vector<bool>{false, false})) << "below 4 KiB/iteration";
  EXPECT_EQ(rank_outliers({100000, 1048576, 90000}), (std::vector<bool>{false, true, false}));
  EXPECT_EQ(rank_outliers({300000, 1048576}), (std::vector<bool>{false, false})) << "within 4x";
}

TEST(RankCompare, FlagsTheLeakingRankInTextAndJson) {
  std::vector<Report> reports = {rank_report(1, 1048576, "out/train.11.rank1.report.json"),
                                 rank_report(0, 0, "out/train.10.rank0.report.json")};
  RankComparison c = compare_ranks(reports);
  ASSERT_EQ(c.rows.size(), 2u);
  EXPECT_EQ(*c.rows[0].rank, 0);  // by rank
  EXPECT_FALSE(c.rows[0].outlier);
  EXPECT_TRUE(c.rows[1].outlier);
  std::string text = comparison_text(c);
  EXPECT_NE(text.find("rank 1 grows 1 MiB/iter while the others stay flat"), std::string::npos) << text;
  json j = comparison_json(c);
  EXPECT_EQ(j["schema"], "gpuleak.ranks/1");
  EXPECT_EQ(j["outliers"], json::array({1}));
  EXPECT_EQ(j["processes"][1]["growth_bytes_per_iteration"], 1048576.0);
  EXPECT_EQ(j["processes"][1]["path"], "out/train.11.rank1.report.json");
}

TEST(RankCompare, RankFromTheFileNameWhenTheRunHasNone) {
  EXPECT_EQ(rank_from_file_name("/x/train.py.4242.rank3.report.json"), 3);
  EXPECT_EQ(rank_from_file_name("train.4242.rank12.gpuleak"), 12);
  EXPECT_EQ(rank_from_file_name("train.4242.report.json"), std::nullopt);
  EXPECT_EQ(rank_from_file_name("rank7/train.4242.report.json"), std::nullopt) << "only the file's own name";
  EXPECT_EQ(rank_from_file_name("train.4242.rank3.2.report.json"), 3) << "a counter after the rank";
  EXPECT_EQ(rank_from_file_name("x.rankA.rank5.gpuleak"), 5) << "the first .rank with digits";
  EXPECT_EQ(rank_from_file_name("train.rank1234567890.gpuleak"), std::nullopt) << "ten digits are not a rank";
  EXPECT_EQ(rank_from_file_name("train.rank4"), std::nullopt) << "a rank ends with a dot";
  EXPECT_EQ(rank_from_file_name("train.rank.7.gpuleak"), std::nullopt);
  RankComparison c = compare_ranks(
      {rank_report(0, 0, "a.1.rank5.report.json", false), rank_report(0, 0, "a.2.rank2.report.json", false)});
  EXPECT_EQ(*c.rows[0].rank, 2);
  EXPECT_EQ(*c.rows[1].rank, 5);
  EXPECT_NE(comparison_text(c).find("no process grows apart from the others"), std::string::npos);
}

TEST(RankCompare, ProgramNamesArePrintedInert) {
  json doc = report("clean");
  doc["run"]["program"] = "evil\x1b[2J\nname";
  RankComparison c = compare_ranks({parse(doc, "a.json"), parse(doc, "b.json")});
  std::string text = comparison_text(c);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 5) << text;  // header, columns, 2 rows, verdict
}

// Issue #17: names were cut at 22 characters ("prog_leaky_static (pid") and the rows stood one
// column right of the header. Every cell under its header, every name whole.
TEST(RankCompare, TableKeepsWholeNamesInAlignedColumns) {
  std::vector<Report> reports;
  for (int pid : {12702, 9}) {
    json doc = report(pid == 9 ? "clean" : "leak");
    doc["run"]["program"] = "prog_leaky_static";
    doc["run"]["pid"] = pid;
    doc["devices"][0]["growth_bytes_per_iteration"] = pid == 9 ? 0.0 : 1048576.0;
    if (pid != 9) doc["leaks"] = json::array({leak("00aa", "grow", "/src/train.cpp", 9, 1048576.0)});
    reports.push_back(parse(doc, "r" + std::to_string(pid) + ".json"));
  }
  std::string text = comparison_text(compare_ranks(reports));
  EXPECT_NE(text.find("prog_leaky_static (pid 12702)"), std::string::npos) << text;
  std::vector<std::string> lines;
  for (size_t at = 0, nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1)
    lines.push_back(text.substr(at, nl - at));
  ASSERT_GE(lines.size(), 4u) << text;
  // The header and both rows: each column's last character (right-aligned numbers) and first
  // character (left-aligned names and verdicts) at the same offset on every line.
  const std::string &header = lines[1];
  for (size_t row = 2; row < 4; ++row) {
    EXPECT_EQ(lines[row].size(), header.size()) << text;
    EXPECT_EQ(lines[row].find("prog_leaky_static"), header.find("process")) << text;
    size_t verdict = header.find("verdict");
    EXPECT_NE(lines[row][verdict], ' ') << text;
    EXPECT_EQ(lines[row][verdict - 1], ' ') << text;
  }
  EXPECT_EQ(lines[0], "gpuleak: 2 processes compared") << text;
}

}  // namespace
}  // namespace gpuleak::gate::testing
