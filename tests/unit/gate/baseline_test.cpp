// Baselines: regressions of peak and steady-state live memory beyond the tolerance, new leaking
// sites; and the side-by-side diff.
#include <gtest/gtest.h>

#include "gate/diff.h"
#include "gate/evaluate.h"
#include "report_fixture.h"

namespace gpuleak::gate {
namespace {

using namespace testing;

ReportOutcome against(const json &now, const json &base, double tolerance = 0.05, uint64_t leak_budget = 0) {
  Budgets b;
  b.tolerance = tolerance;
  b.max_leak_per_iteration = leak_budget;
  Suppressions none;
  Report baseline = parse(base, "base.json");
  return evaluate(parse(now), b, none, &baseline);
}

TEST(GateBaseline, PeakRegressionBeyondTheTolerance) {
  json base = report(), now = report();
  now["devices"][0]["peak_live_bytes"] = 104 * kMiB;  // +4%
  EXPECT_FALSE(against(now, base).failed());
  now["devices"][0]["peak_live_bytes"] = 110 * kMiB;  // +10%
  ReportOutcome o = against(now, base);
  ASSERT_TRUE(o.failed());
  EXPECT_EQ(o.findings[0].kind, Kind::kPeakRegression);
  EXPECT_EQ(o.findings[0].message, "device 0 peak 110 MiB vs 100 MiB in the baseline (+10.0%, tolerance 5.0%)");
  EXPECT_FALSE(against(now, base, 0.2).failed());
}

TEST(GateBaseline, SteadyStateLiveIsTheMedianAfterWarmup) {
  json base = report(), now = report();
  base["iterations"] = iterations({1 * kMiB, 10 * kMiB, 10 * kMiB, 10 * kMiB});
  now["iterations"] = iterations({99 * kMiB, 12 * kMiB, 12 * kMiB, 40 * kMiB});  // warm-up 1: median 12
  EXPECT_EQ(steady_state_live(parse(now), 0), 12 * kMiB);
  ReportOutcome o = against(now, base);
  ASSERT_TRUE(o.failed());
  EXPECT_EQ(o.findings[0].kind, Kind::kLiveRegression);
  // Without iterations the live bytes at exit stand in.
  json flat = report();
  flat["iterations"] = json::array();
  flat["devices"][0]["live_at_exit_bytes"] = 7;
  EXPECT_EQ(steady_state_live(parse(flat), 0), 7u);
}

TEST(GateBaseline, NewLeakingSiteFailsEvenWithinBudget) {
  json base = report("leak"), now = report("leak");
  base["leaks"] = json::array({leak("aa", "old_leak", "/src/a.cpp", 1, 100)});
  now["leaks"] =
      json::array({leak("aa", "old_leak", "/src/a.cpp", 1, 100), leak("bb", "new_leak", "/src/b.cpp", 2, 100)});
  ReportOutcome o = against(now, base, 0.05, kMiB);
  ASSERT_TRUE(o.failed());
  ASSERT_EQ(o.count(Status::kFail), 1u);
  EXPECT_EQ(o.findings[0].site_id, "bb");
  EXPECT_NE(o.findings[0].message.find("new since the baseline"), std::string::npos);
  EXPECT_EQ(o.findings[0].note, "within its budget, but the baseline has no leak at this line");
}

TEST(GateBaseline, ImprovementsPass) {
  json base = report(), now = report();
  base["devices"][0]["peak_live_bytes"] = 500 * kMiB;
  EXPECT_FALSE(against(now, base).failed());
}

TEST(GateDiff, LeaksAddedRemovedChanged) {
  json a = report("leak"), b = report("leak");
  a["leaks"] = json::array({leak("aa", "kept", "/s/a.cpp", 1, 1000), leak("cc", "gone", "/s/c.cpp", 3, 50),
                            leak("dd", "steady", "/s/d.cpp", 4, 100)});
  b["leaks"] = json::array({leak("aa", "kept", "/s/a.cpp", 1, 2000), leak("bb", "fresh", "/s/b.cpp", 2, 10),
                            leak("dd", "steady", "/s/d.cpp", 4, 102)});
  Report ra = parse(a), rb = parse(b);
  std::vector<LeakChange> d = diff_leaks(ra, rb, 0.05);  // points into ra and rb
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0].what, LeakChange::What::kAdded);
  EXPECT_EQ(d[0].after->site_id, "bb");
  EXPECT_EQ(d[1].what, LeakChange::What::kRemoved);
  EXPECT_EQ(d[1].before->site_id, "cc");
  EXPECT_EQ(d[2].what, LeakChange::What::kRegressed);
  EXPECT_EQ(d[2].after->site_id, "aa");
  EXPECT_EQ(d[3].what, LeakChange::What::kSame);  // +2%: within the tolerance
  EXPECT_EQ(d[3].after->site_id, "dd");

  b["devices"][0]["peak_live_bytes"] = 150 * kMiB;
  b["verdict"] = "leak";
  std::string text = write_diff(parse(a, "a.json"), parse(b, "b.json"), 0.05);
  EXPECT_NE(text.find("device 0 peak"), std::string::npos) << text;
  EXPECT_NE(text.find("+50.0%"), std::string::npos) << text;
  EXPECT_NE(text.find("leaking lines: 1 new, 1 gone, 1 regressed, 0 improved, 0 moved, 1 the same"), std::string::npos)
      << text;
  EXPECT_NE(text.find("+ fresh (/s/b.cpp:2): 10 B/iteration on device 0 [site bb]"), std::string::npos) << text;
  EXPECT_NE(text.find("- gone (/s/c.cpp:3): was 50 B/iteration"), std::string::npos) << text;
  EXPECT_NE(text.find("~ kept (/s/a.cpp:1): 1000 B/iteration -> 1.95 KiB/iteration (+100.0%, regressed)"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace gpuleak::gate
