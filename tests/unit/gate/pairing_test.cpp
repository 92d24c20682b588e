// Issue #28: which finding of a baseline is which finding of a newer report (src/gate/pairing.h).
// The unit is the user's line; each case is one way the same line looks different in CI: lines
// added above it, another torch under it, another checkout path, two lines of one function, a
// helper called from two places, the same line in another loop.
#include <gtest/gtest.h>

#include "gate/diff.h"
#include "gate/evaluate.h"
#include "gate/pairing.h"
#include "gate/writers.h"
#include "report_fixture.h"

namespace gpuleak::gate {
namespace {

using namespace testing;

// A PyTorch-shaped leak: a native frame of libtorch (the library part, which a torch upgrade
// changes), under the user's Python line, which is the headline.
struct Line {
  Line(std::string site_, std::string file_, std::string function_, int line_, double rate_ = 1.0 * kMiB)
      : site(std::move(site_)), file(std::move(file_)), function(std::move(function_)), line(line_), rate(rate_) {}
  std::string site, file, function;
  int line = 0;
  double rate = 1.0 * kMiB;
  int device = 0;
  std::string loop;                          // leaks[].loop ("" none)
  std::string caller_file, caller_function;  // headline.caller ("" none)
  int caller_line = 0;
  std::string native = "at::detail::empty_generic";  // the library frame under it
};

json headline_of(const Line &l) {
  const std::string base = l.file.substr(l.file.rfind('/') + 1);
  json h = {{"kind", "python"},
            {"function", l.function},
            {"file", l.file},
            {"line", l.line},
            {"module", nullptr},
            {"user", true},
            {"via", nullptr},
            {"caller", nullptr},
            {"text", base + ":" + std::to_string(l.line) + " in " + l.function}};
  if (!l.caller_function.empty())
    h["caller"] = {{"function", l.caller_function},
                   {"file", l.caller_file},
                   {"line", l.caller_line},
                   {"module", nullptr},
                   {"text", "train.py:" + std::to_string(l.caller_line) + " in " + l.caller_function}};
  return h;
}

json with_lines(const std::vector<Line> &lines, json doc = report("leak")) {
  doc["leaks"] = json::array();
  doc["leak_groups"] = json::array();
  for (const Line &l : lines) {
    json leak_doc = leak(l.site, l.native, "", 0, l.rate, l.device);
    leak_doc["stack"] = json::array({{{"kind", "native"},
                                      {"function", l.native},
                                      {"file", nullptr},
                                      {"line", nullptr},
                                      {"module", "libtorch_cpu.so"}},
                                     frame(l.function, l.file, l.line, "python")});
    leak_doc["headline"] = headline_of(l);
    if (!l.loop.empty()) leak_doc["loop"] = l.loop;
    doc["leaks"].push_back(leak_doc);
    doc["leak_groups"].push_back({{"device", l.device},
                                  {"bytes_per_iteration", l.rate},
                                  {"live_bytes", static_cast<uint64_t>(l.rate * 10)},
                                  {"live_count", 10},
                                  {"first_iteration", 0},
                                  {"headline", headline_of(l)},
                                  {"loop", l.loop.empty() ? json(nullptr) : json(l.loop)},
                                  {"site_ids", {l.site}}});
  }
  if (doc["devices"].size() < 2)
    for (const Line &l : lines)
      if (l.device == 1) doc["devices"].push_back(device(1, "leak"));
  return doc;
}

// "before index -> after index (by)" for each pair, then the new and the gone.
std::string describe(const LinePairing &p) {
  std::string s;
  for (const LinePair &x : p.pairs)
    s += std::to_string(x.before) + "->" + std::to_string(x.after) + " " + paired_by_name(x.by) + "; ";
  s += "new";
  for (size_t j : p.only_after) s += " " + std::to_string(j);
  s += "; gone";
  for (size_t i : p.only_before) s += " " + std::to_string(i);
  return s;
}

std::string pair_of(const std::vector<Line> &before, const std::vector<Line> &after, json base_doc = report("leak"),
                    json now_doc = report("leak")) {
  Report a = parse(with_lines(before, base_doc), "base.json"), b = parse(with_lines(after, now_doc), "now.json");
  return describe(pair_lines(a, b));
}

const std::string kTrain = "/home/a/repo/train.py";

TEST(GatePairing, TheSameLineIsExact) {
  EXPECT_EQ(pair_of({{"aa", kTrain, "train_step", 52}}, {{"aa", kTrain, "train_step", 52}}), "0->0 exact; new; gone");
}

TEST(GatePairing, LibraryFramesThatChangedUnderTheLineKeepItExact) {
  // A torch upgrade: another native frame under train.py:52, so another site_id.
  Line after{"ff", kTrain, "train_step", 52};
  after.native = "at::native::empty_cuda";
  EXPECT_EQ(pair_of({{"aa", kTrain, "train_step", 52}}, {after}), "0->0 exact; new; gone");
}

TEST(GatePairing, LinesAddedAboveMoveTheLine) {
  EXPECT_EQ(pair_of({{"aa", kTrain, "train_step", 52}}, {{"bb", kTrain, "train_step", 55}}), "0->0 moved; new; gone");
  EXPECT_EQ(pair_of({{"aa", kTrain, "train_step", 52}}, {{"bb", kTrain, "train_step", 49}}), "0->0 moved; new; gone");
  // Another function, or another file, is another line.
  EXPECT_EQ(pair_of({{"aa", kTrain, "train_step", 52}}, {{"bb", kTrain, "evaluate", 52}}), "new 0; gone 0");
  EXPECT_EQ(pair_of({{"aa", kTrain, "train_step", 52}}, {{"bb", "/home/a/repo/eval.py", "train_step", 52}}),
            "new 0; gone 0");
}

TEST(GatePairing, AnotherCheckoutPairsByPathSuffix) {
  EXPECT_EQ(pair_of({{"aa", kTrain, "train_step", 52}}, {{"bb", "/builds/x/repo/train.py", "train_step", 52}}),
            "0->0 path_suffix; new; gone");
  // Both at once: another checkout, and lines added above.
  EXPECT_EQ(pair_of({{"aa", kTrain, "train_step", 52}}, {{"bb", "/builds/x/repo/train.py", "train_step", 58}}),
            "0->0 moved; new; gone");
  // Two files of one name: the longest common suffix pairs, whatever the order.
  EXPECT_EQ(
      pair_of({{"aa", "/home/a/repo/pkg/a/utils.py", "load", 5}, {"bb", "/home/a/repo/pkg/b/utils.py", "load", 5}},
              {{"cc", "/ci/repo/pkg/b/utils.py", "load", 5}, {"dd", "/ci/repo/pkg/a/utils.py", "load", 5}}),
      "1->0 path_suffix; 0->1 path_suffix; new; gone");
  EXPECT_EQ(common_path_suffix("/home/a/repo/train.py", "/builds/x/repo/train.py"), 2u);
  EXPECT_EQ(common_path_suffix("train.py", "/builds/x/repo/train.py"), 1u);
  EXPECT_EQ(common_path_suffix("/a/train.py", "/a/xtrain.py"), 0u);
  EXPECT_EQ(common_path_suffix("/a/b.py", "/a/b.py"), 2u);
}

TEST(GatePairing, TwoLinesOfOneFunctionPairOneToOne) {
  // One baseline line, two lines of its function now: the nearer pairs, the other is new.
  EXPECT_EQ(
      pair_of({{"aa", kTrain, "train_step", 52}}, {{"bb", kTrain, "train_step", 70}, {"cc", kTrain, "train_step", 53}}),
      "0->1 moved; new 0; gone");
  // An exact match is taken before any nearer-looking move: 52 stays 52, 53 is new.
  EXPECT_EQ(
      pair_of({{"aa", kTrain, "train_step", 52}}, {{"bb", kTrain, "train_step", 53}, {"cc", kTrain, "train_step", 52}}),
      "0->1 exact; new 0; gone");
  // Both lines moved by 3 (three lines added above both): each pairs with its own.
  EXPECT_EQ(pair_of({{"aa", kTrain, "train_step", 52}, {"bb", kTrain, "train_step", 60}},
                    {{"cc", kTrain, "train_step", 63}, {"dd", kTrain, "train_step", 55}}),
            "1->0 moved; 0->1 moved; new; gone");
}

// Two baseline lines, 50 and 52, and one line now at 51, one line from each: one pairs (on a tie
// the earlier baseline line), the other is gone; never both on one. With 47 beside it, order is
// kept (lines added or removed above both shift both): 50 -> 47 and 52 -> 51.
TEST(GatePairing, OneToOneConflict) {
  const std::string got =
      pair_of({{"aa", kTrain, "f", 50, 2.0 * kMiB}, {"bb", kTrain, "f", 52, 1.0 * kMiB}}, {{"cc", kTrain, "f", 51}});
  EXPECT_EQ(got, "0->0 moved; new; gone 1");
  const std::string two = pair_of({{"aa", kTrain, "f", 50, 2.0 * kMiB}, {"bb", kTrain, "f", 52, 1.0 * kMiB}},
                                  {{"cc", kTrain, "f", 51}, {"dd", kTrain, "f", 47}});
  EXPECT_EQ(two, "1->0 moved; 0->1 moved; new; gone");
}

TEST(GatePairing, AHelperPairsByItsCaller) {
  // train.py:6 in alloc, called from main at 40 and at 44; three lines added above main's calls.
  Line a1{"aa", kTrain, "alloc", 6}, a2{"bb", kTrain, "alloc", 6};
  a1.caller_file = a2.caller_file = kTrain, a1.caller_function = a2.caller_function = "main";
  a1.caller_line = 40, a2.caller_line = 44;
  Line b1 = a1, b2 = a2;
  b1.site = "cc", b2.site = "dd", b1.caller_line = 43, b2.caller_line = 47;
  // Nearest first would pair 44 with 43; the order of the calls is kept.
  EXPECT_EQ(pair_of({a1, a2}, {b2, b1}), "1->0 moved; 0->1 moved; new; gone");
  // The caller exact on one and not the other: the exact pairs first.
  b1.caller_line = 40;
  EXPECT_EQ(pair_of({a1, a2}, {b1, b2}), "0->0 exact; 1->1 moved; new; gone");
}

TEST(GatePairing, AnotherDeviceIsAnotherFinding) {
  Line now{"aa", kTrain, "train_step", 52};
  now.device = 1;
  json base = report("leak"), doc = report("leak");
  doc["devices"] = json::array({device(0, "clean"), device(1, "leak")});
  EXPECT_EQ(pair_of({{"aa", kTrain, "train_step", 52}}, {now}, base, doc), "new 0; gone 0");
}

TEST(GatePairing, ASharedSiteIsTheLastResort) {
  // The headline named differently (say, --user-code moved it) but the call path is the same.
  EXPECT_EQ(pair_of({{"aa", kTrain, "train_step", 52}}, {{"aa", "/venv/lib/mylib/core.py", "alloc", 9}}),
            "0->0 site; new; gone");
}

// Loops: the loop is part of the finding. The same line leaking in another loop (a helper the
// evaluation loop now calls as well) is a new finding; a loop whose lines moved is the same loop.
json two_loops(int train_line, int eval_line) {
  json doc = report("leak");
  auto loop = [](const std::string &function, int line, bool primary) {
    return json{{"name", function + " (train.py:" + std::to_string(line) + ")"},
                {"kind", "loop"},
                {"file", "/home/a/repo/train.py"},
                {"function", function},
                {"first_line", line},
                {"primary", primary},
                {"passes", 40},
                {"verdict", "leak"}};
  };
  doc["loops"] = json::array({loop("train", train_line, true), loop("evaluate", eval_line, false)});
  return doc;
}

TEST(GatePairing, TheSameLineInAnotherLoopIsAnotherFinding) {
  Line in_train{"aa", kTrain, "step", 12}, in_eval{"bb", kTrain, "step", 12};
  in_train.loop = "train (train.py:30)";
  in_eval.loop = "evaluate (train.py:60)";
  EXPECT_EQ(pair_of({in_train}, {in_eval}, two_loops(30, 60), two_loops(30, 60)), "new 0; gone 0");
  // Lines added above both loops: their names (which hold their lines) changed, they did not.
  Line moved = in_train;
  moved.loop = "train (train.py:33)";
  moved.line = 15;
  EXPECT_EQ(pair_of({in_train}, {moved}, two_loops(30, 60), two_loops(33, 63)), "0->0 moved; new; gone");
  // A report from before loops[] (1.1) matches any loop.
  EXPECT_EQ(pair_of({in_train}, {in_eval}, report("leak"), two_loops(30, 60)), "0->0 exact; new; gone");
}

TEST(GatePairing, OnlyLoopOfEachReportIsTheSameLoop) {
  // Marks added to a loop that was observed: the only loop on each side.
  json observed = report("leak"), marked = report("leak");
  observed["loops"] = json::array({{{"name", "train (train.py:30)"},
                                    {"kind", "loop"},
                                    {"file", kTrain},
                                    {"function", "train"},
                                    {"first_line", 30},
                                    {"primary", true}}});
  marked["loops"] = json::array({{{"name", "step"}, {"kind", "marked"}, {"primary", true}}});
  Line a{"aa", kTrain, "step", 12}, b{"bb", kTrain, "step", 12};
  a.loop = "train (train.py:30)";
  b.loop = "step";
  EXPECT_EQ(pair_of({a}, {b}, observed, marked), "0->0 exact; new; gone");
}

TEST(GatePairing, ReportsWithoutLeakGroupsPairByTheUserFrame) {
  json a = report("leak"), b = report("leak");
  a["leaks"] = json::array({leak("aa", "cache_activation", "/home/a/src/leaky.cpp", 14, kMiB)});
  b["leaks"] = json::array({leak("bb", "cache_activation", "/ci/src/leaky.cpp", 17, kMiB)});
  EXPECT_EQ(describe(pair_lines(parse(a), parse(b))), "0->0 moved; new; gone");
}

// check --baseline and diff read the same pairs: new fails, a regression beyond the tolerance
// fails, a moved line within it passes, a gone line is listed.
TEST(GatePairing, CheckAndDiffShareThePairs) {
  std::vector<Line> base = {{"aa", kTrain, "train_step", 52, 1.0 * kMiB}, {"bb", kTrain, "evaluate", 90, 1.0 * kMiB}};
  std::vector<Line> now = {{"cc", "/builds/x/repo/train.py", "train_step", 55, 1.5 * kMiB},
                           {"dd", "/builds/x/repo/train.py", "load", 20, 0.5 * kMiB}};
  Report a = parse(with_lines(base), "base.json"), b = parse(with_lines(now), "now.json");
  Budgets budgets;
  budgets.max_leak_per_iteration = 2 * kMiB;
  Suppressions none;
  ReportOutcome o = evaluate(b, budgets, none, &a);
  const std::string plain = write_plain({o}, none, WriteOptions{});
  ASSERT_EQ(o.count(Status::kFail), 2u) << plain;
  const Finding &regressed = o.findings[0], &fresh = o.findings[1];
  EXPECT_EQ(regressed.baseline, "regressed");
  EXPECT_EQ(regressed.paired_by, "moved");
  EXPECT_EQ(regressed.baseline_line, "train.py:52 in train_step");
  EXPECT_NE(regressed.message.find("; was 1 MiB/iteration at train.py:52 in train_step in the baseline (+50.0%, "
                                   "tolerance 5.0%)"),
            std::string::npos)
      << regressed.message;
  EXPECT_EQ(regressed.note, "within its budget, but it leaks more than the baseline's line beyond the tolerance");
  EXPECT_EQ(fresh.baseline, "new");
  EXPECT_EQ(fresh.site_id, "dd");
  auto gone =
      std::find_if(o.findings.begin(), o.findings.end(), [](const Finding &f) { return f.kind == Kind::kGone; });
  ASSERT_NE(gone, o.findings.end()) << plain;
  EXPECT_EQ(gone->status, Status::kPass);
  EXPECT_EQ(gone->baseline_line, "train.py:90 in evaluate");
  EXPECT_NE(plain.find("  ok leak gone: train.py:90 in evaluate leaked 1 MiB/iteration on device 0 in the baseline"),
            std::string::npos)
      << plain;
  // Within the tolerance the moved line passes.
  budgets.tolerance = 0.6;
  EXPECT_EQ(evaluate(b, budgets, none, &a).count(Status::kFail), 1u);

  std::vector<LeakChange> d = diff_leaks(a, b, 0.05);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].what, LeakChange::What::kAdded);
  EXPECT_EQ(d[0].after->site_id, "dd");
  EXPECT_EQ(d[1].what, LeakChange::What::kRemoved);
  EXPECT_EQ(d[1].before->site_id, "bb");
  EXPECT_EQ(d[2].what, LeakChange::What::kRegressed);
  EXPECT_EQ(*d[2].paired_by, PairedBy::kMoved);
  const json j = diff_json(a, b, 0.05);
  EXPECT_EQ(j["schema"], "gpuleak.diff/1");
  EXPECT_EQ(j["counts"]["new"], 1);
  EXPECT_EQ(j["counts"]["gone"], 1);
  EXPECT_EQ(j["counts"]["regressed"], 1);
  EXPECT_EQ(j["lines"][2]["paired_by"], "moved");
  EXPECT_EQ(j["lines"][2]["a"]["line"], 52);
  EXPECT_EQ(j["lines"][2]["b"]["line"], 55);
  EXPECT_TRUE(j["lines"][0]["a"].is_null());
}

}  // namespace
}  // namespace gpuleak::gate
