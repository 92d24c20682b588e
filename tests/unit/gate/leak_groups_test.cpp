// Issue #28: the gate judges the user's line (a leak_groups entry), with its library sites listed
// under it, not each library site on its own. The fixture is tests/fixtures/issue28: a PyTorch
// per-tensor leak of 18 MiB/iteration at train.py:52 made of three sites (9 MiB via
// Linear.forward, 8 via GELU.forward, 1 via mse_loss).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "gate/diff.h"
#include "gate/evaluate.h"
#include "gate/writers.h"
#include "report_fixture.h"

namespace gpuleak::gate {
namespace {

using namespace testing;

const std::string kFixtures = GPULEAK_SOURCE_DIR "/tests/fixtures/issue28/";

ReportOutcome judge(const Report &r, const Budgets &b, Suppressions *supp = nullptr) {
  Suppressions none;
  return evaluate(r, b, supp ? *supp : none, nullptr);
}

std::vector<const Finding *> of(const ReportOutcome &o, Kind kind, Status status) {
  std::vector<const Finding *> out;
  for (const Finding &f : o.findings)
    if (f.kind == kind && f.status == status) out.push_back(&f);
  return out;
}

TEST(GateLeakGroups, ReadsTheGroupsAndTheirSites) {
  Report r = load_report(kFixtures + "torch_three_sites.report.json");
  ASSERT_EQ(r.leak_groups.size(), 1u);
  const LeakGroup &g = r.leak_groups[0];
  EXPECT_DOUBLE_EQ(g.bytes_per_iteration, 18.0 * kMiB);
  EXPECT_EQ(g.describe(), "train.py:52 in train_step");
  ASSERT_EQ(g.sites.size(), 3u);
  EXPECT_EQ(r.leaks[g.sites[0]].site_id, "1a2b3c4d5e6f7081");
  EXPECT_EQ(r.leaks[g.sites[0]].stack.via_text(), "Linear.forward (torch/nn/modules/linear.py:125)");
}

TEST(GateLeakGroups, TheUsersLineFailsItsBudgetOnceNamingItsSites) {
  Budgets b;
  b.max_leak_per_iteration = 10 * kMiB;
  ReportOutcome o = judge(load_report(kFixtures + "torch_three_sites.report.json"), b);
  ASSERT_TRUE(o.failed());
  auto fails = of(o, Kind::kLeak, Status::kFail);
  ASSERT_EQ(fails.size(), 1u);
  EXPECT_EQ(o.count(Status::kPass), 0u);
  const Finding &f = *fails[0];
  EXPECT_EQ(f.message.rfind("train.py:52 in train_step leaks 18 MiB/iteration on device 0 (budget 10 MiB/iteration", 0),
            0u)
      << f.message;
  EXPECT_EQ(*f.file, "/home/me/project/train.py");
  EXPECT_EQ(*f.line, 52);
  ASSERT_EQ(f.details.size(), 3u);
  EXPECT_EQ(f.details[0],
            "9 MiB/iteration via Linear.forward (torch/nn/modules/linear.py:125) [site 1a2b3c4d5e6f7081]");
  EXPECT_EQ(f.details[2], "1 MiB/iteration via mse_loss (torch/nn/functional.py:3884) [site 3c4d5e6f708192a3]");
  EXPECT_EQ(f.site_ids.size(), 3u);
  // Without a budget: still one failure for one bug.
  ReportOutcome strict = judge(load_report(kFixtures + "torch_three_sites.report.json"), Budgets{});
  EXPECT_EQ(strict.count(Status::kFail), 1u);
}

TEST(GateLeakGroups, ASuppressionNamingOneSiteStillWorksPerSite) {
  Budgets b;
  b.max_leak_per_iteration = 10 * kMiB;
  Suppressions supp;
  supp.parse_text("leak:GELU.forward  # activation cache, freed by design\n", "t.supp");
  ReportOutcome o = judge(load_report(kFixtures + "torch_three_sites.report.json"), b, &supp);
  // 9 + 1 MiB left at the line: within 10 MiB; the GELU site is listed as suppressed on its own.
  EXPECT_FALSE(o.failed());
  auto sup = of(o, Kind::kLeak, Status::kSuppressed);
  ASSERT_EQ(sup.size(), 1u);
  EXPECT_EQ(sup[0]->site_id, "2b3c4d5e6f708192");
  auto pass = of(o, Kind::kLeak, Status::kPass);
  ASSERT_EQ(pass.size(), 1u);
  EXPECT_NE(pass[0]->message.find("train.py:52 in train_step leaks 10 MiB/iteration"), std::string::npos)
      << pass[0]->message;
  EXPECT_EQ(pass[0]->details.size(), 2u);
}

TEST(GateLeakGroups, APerSiteBudgetJudgesTheSitesItNames) {
  Budgets b;
  b.max_leak_per_iteration = 10 * kMiB;
  SiteBudget rule;
  rule.match = parse_rule("leak:Linear.forward", "test");
  rule.max_leak_per_iteration = 20 * kMiB;
  b.sites.push_back(rule);
  ReportOutcome o = judge(load_report(kFixtures + "torch_three_sites.report.json"), b);
  // Linear.forward's 9 MiB under its own 20 MiB rule; the other 9 MiB at the line within 10 MiB.
  EXPECT_FALSE(o.failed()) << write_plain({o}, Suppressions{}, WriteOptions{});
  EXPECT_EQ(of(o, Kind::kLeak, Status::kPass).size(), 2u);
}

// A helper's line is named with the user's line that called it (headline.caller), as the summary
// names it: "train.py:6 in alloc" alone does not say which call leaks.
TEST(GateLeakGroups, AHelpersLineIsNamedWithItsCaller) {
  std::ifstream in(kFixtures + "torch_three_sites.report.json");
  json doc = json::parse(in);
  for (json &l : doc["leaks"]) l["headline"]["caller"] = {{"text", "train.py:80 in main"}};
  doc["leak_groups"][0]["headline"]["caller"] = {{"text", "train.py:80 in main"}};
  Report r = parse(doc);
  EXPECT_EQ(r.leak_groups[0].describe(), "train.py:52 in train_step, called from train.py:80 in main");
  doc["leak_groups"][0]["headline"]["caller"] = nullptr;  // none: as before
  EXPECT_EQ(parse(doc).leak_groups[0].describe(), "train.py:52 in train_step");
}

TEST(GateLeakGroups, AReportWithoutLeakGroupsJudgesEachSite) {
  json doc = report("leak");
  doc["leaks"] = json::array({leak("00000000000000aa", "a", "/src/a.cpp", 1, 3 * kMiB),
                              leak("00000000000000bb", "b", "/src/b.cpp", 2, 2 * kMiB)});
  Report r = parse(doc);
  ASSERT_EQ(r.leak_groups.size(), 2u);
  Budgets b;
  b.max_leak_per_iteration = 2 * kMiB + 1;
  ReportOutcome o = judge(r, b);
  EXPECT_EQ(o.count(Status::kFail), 1u);
  EXPECT_EQ(o.count(Status::kPass), 1u);
  EXPECT_TRUE(of(o, Kind::kLeak, Status::kFail)[0]->details.empty());
}

TEST(GateLeakGroups, AGroupNamingAnUnknownSiteIsMalformed) {
  json doc = report("leak");
  doc["leaks"] = json::array({leak("00000000000000aa", "a", "/src/a.cpp", 1, 3 * kMiB)});
  doc["leak_groups"] = json::array({{{"device", 0}, {"bytes_per_iteration", 3 * kMiB}, {"site_ids", {"ffff"}}}});
  EXPECT_THROW(parse(doc), GateError);
}

TEST(GateLeakGroups, AnIdenticalOutOfMemoryIsOneFinding) {
  ReportOutcome o = judge(load_report(kFixtures + "torch_oom.report.json"), Budgets{});
  auto ooms = of(o, Kind::kOom, Status::kFail);
  ASSERT_EQ(ooms.size(), 1u);
  EXPECT_NE(ooms[0]->message.find("cudaMalloc of 2 GiB failed 2 times at infer.py:20 in infer"), std::string::npos)
      << ooms[0]->message;
}

// The same user line with different library sites below it is the same leak, not three removed
// and one added; a baseline that has the line makes it not new, and so does one where it sat a
// line higher.
TEST(GateLeakGroups, DiffAndBaselineCompareUserLines) {
  Report a = load_report(kFixtures + "torch_three_sites.report.json");
  json doc = parse_json_text(read_text_file(kFixtures + "torch_three_sites.report.json"), "b.json");
  json one = doc["leaks"][0];
  one["site_id"] = "99999999999999aa";
  one["bytes_per_iteration"] = 18 * kMiB;
  doc["leaks"] = json::array({one});
  doc["leak_groups"][0]["site_ids"] = json::array({"99999999999999aa"});
  Report b = parse(doc, "b.json");
  std::vector<LeakChange> same = diff_leaks(a, b, 0.05);
  ASSERT_EQ(same.size(), 1u);
  EXPECT_EQ(same[0].what, LeakChange::What::kSame);
  EXPECT_EQ(*same[0].paired_by, PairedBy::kExact);
  EXPECT_NE(write_diff(a, b, 0.05).find("leaking lines: 0 new, 0 gone, 0 regressed, 0 improved, 0 moved, 1 the same"),
            std::string::npos);
  Budgets budgets;
  budgets.max_leak_per_iteration = 20 * kMiB;
  Suppressions none;
  ReportOutcome o = evaluate(b, budgets, none, &a);
  EXPECT_FALSE(o.failed()) << write_plain({o}, none, WriteOptions{});
  // A line added above it (issue #28): the same line, moved; the baseline's 3 sites are its own.
  doc["leak_groups"][0]["headline"]["line"] = 53;
  Report moved = parse(doc, "b.json");
  std::vector<LeakChange> d = diff_leaks(a, moved, 0.05);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].what, LeakChange::What::kMoved);
  EXPECT_EQ(*d[0].paired_by, PairedBy::kMoved);
  EXPECT_EQ(d[0].before_line->sites.size(), 3u);
  EXPECT_FALSE(evaluate(moved, budgets, none, &a).failed());
}

TEST(GateLeakGroups, JunitNamesDoNotDependOnTheOrderOfTheReports) {
  json a = report("clean"), b = report("clean");
  a["run"]["pid"] = 100;
  b["run"]["pid"] = 200;
  Suppressions none;
  ReportOutcome oa = evaluate(parse(a, "x/train.100.report.json"), {}, none, nullptr);
  ReportOutcome ob = evaluate(parse(b, "y/train.200.report.json"), {}, none, nullptr);
  oa.report.path = "one/train.report.json";
  ob.report.path = "two/train.report.json";
  std::vector<std::string> ab = junit_test_names({oa, ob}), ba = junit_test_names({ob, oa});
  EXPECT_EQ(ab[0], ba[1]);
  EXPECT_EQ(ab[1], ba[0]);
  EXPECT_NE(ab[0], ab[1]);
}

}  // namespace
}  // namespace gpuleak::gate
