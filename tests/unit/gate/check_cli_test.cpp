// `gpuleak check` and `gpuleak diff` as CI runs them: exit codes 0/1/2, the exact one-line errors
// for files the gate cannot use, and the JUnit, GitHub and summary outputs.
#include <sys/stat.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "cli_runner.h"
#include "report_fixture.h"

namespace gpuleak::gate {
namespace {

using namespace testing;

json leaky_report() {
  json doc = report("leak");
  doc["leaks"] = json::array({leak("00000000000000aa", "cache_activation", "/ws/src/leaky.cpp", 14, 1048576)});
  return doc;
}

TEST(GateCheckCli, ExitCodes) {
  ScratchDir dir;
  std::string clean = dir.write("clean.report.json", report("clean").dump());
  std::string leaky = dir.write("leaky.report.json", leaky_report().dump());
  EXPECT_EQ(gpuleak(dir, {"check", clean}).code, 0);
  Result r = gpuleak(dir, {"check", clean, leaky});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("FAIL train (pid 42): verdict leak"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("leaks 1 MiB/iteration on device 0 (budget 0 B/iteration"), std::string::npos) << r.out;
  // A leak within budget passes, and the pass names it (issue #17: "ok ... verdict leak" alone).
  r = gpuleak(dir, {"check", "--max-leak-per-iteration", "2 MiB", leaky});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("ok   train (pid 42): verdict leak"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  within budget leak: cache_activation (/ws/src/leaky.cpp:14) leaks 1 MiB/iteration on device "
                       "0 (budget 2 MiB/iteration"),
            std::string::npos)
      << r.out;
  r = gpuleak(dir, {"check", "--format", "markdown", "--max-leak-per-iteration", "2 MiB", leaky});
  EXPECT_NE(r.out.find("**leak** (within budget): cache\\_activation"), std::string::npos) << r.out;
  EXPECT_EQ(gpuleak(dir, {"check", "--max-leak-per-iteration", "512KiB", leaky}).code, 1);
  EXPECT_EQ(gpuleak(dir, {"check", "--max-peak", "50 MiB", clean}).code, 1);
  EXPECT_EQ(gpuleak(dir, {"check", "--max-peak", "0=2GB", clean}).code, 0);
}

// Issue #28: "leak: 18.0 MiB per iteration at train.py:52" made of three library sites fails a
// 10 MiB budget with one failure naming the line (it printed three "within budget" lines, exit 0).
TEST(GateCheckCli, TheUsersLineIsTheUnitOfJudgement) {
  ScratchDir dir;
  const std::string fixture = GPULEAK_SOURCE_DIR "/tests/fixtures/issue28/torch_three_sites.report.json";
  Result r = gpuleak(dir, {"check", "--max-leak-per-iteration", "10MiB", fixture});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("  FAIL leak: train.py:52 in train_step leaks 18 MiB/iteration on device 0 (budget 10 "
                       "MiB/iteration"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\n      8 MiB/iteration via GELU.forward (torch/nn/modules/activation.py:734)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("within budget"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(1 failure, 0 warnings, 0 suppressed)"), std::string::npos) << r.out;
  r = gpuleak(dir, {"check", fixture});
  EXPECT_NE(r.out.find("(1 failure, 0 warnings, 0 suppressed)"), std::string::npos) << r.out;
}

// Real reports from the GPU machine (run 17, an H100; tests/fixtures/h100, trimmed by
// trim_report.py): a pytest run with one leaking test among clean ones is one failure, in the
// test's own JUnit case; a clean serving program whose model was built in a comprehension before
// its request loop passes (its setup loop is not a leak).
TEST(GateCheckCli, RealPytestRunFailsOnceInItsTestsCase) {
  ScratchDir dir;
  const std::string fixture = GPULEAK_SOURCE_DIR "/tests/fixtures/h100/pytest_suite.report.json";
  const std::string junit = dir.file("junit.xml");
  Result r = gpuleak(dir, {"check", "--junit", junit, fixture});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("test_gpu_suite.py:38 in test_leaky_step"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("in test_gpu_suite.py::test_leaky_step"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(1 failure, 0 warnings, 0 suppressed)"), std::string::npos) << r.out;
  const std::string xml = slurp(junit);
  EXPECT_NE(xml.find("tests=\"4\" failures=\"1\""), std::string::npos) << xml;
  const size_t leaky = xml.find("name=\"test_gpu_suite.py::test_leaky_step\"");
  ASSERT_NE(leaky, std::string::npos) << xml;
  EXPECT_NE(xml.substr(leaky, xml.find("</testcase>", leaky) - leaky).find("<failure"), std::string::npos) << xml;
}

TEST(GateCheckCli, RealServingRunWithItsModelBuiltFirstPasses) {
  ScratchDir dir;
  const std::string fixture = GPULEAK_SOURCE_DIR "/tests/fixtures/h100/torch_serve_clean.report.json";
  Result r = gpuleak(dir, {"check", fixture});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("(0 failures"), std::string::npos) << r.out;
}

// Issue #28's budget on a real report (H100, torch_leak_shapes.py graph under the default caching
// allocator, seen per tensor): the user's line keeps 6 MiB + 4 B per iteration through three
// library sites (4 MiB, 2 MiB, 4 B). A budget that every site meets alone fails the line once;
// one above the line's rate passes.
TEST(GateCheckCli, RealGraphRunFailsOnceOnItsUserLine) {
  ScratchDir dir;
  const std::string fixture = GPULEAK_SOURCE_DIR "/tests/fixtures/h100/torch_graph_default.report.json";
  Result r = gpuleak(dir, {"check", fixture, "--max-leak-per-iteration", "5MiB"});
  EXPECT_EQ(r.code, 1) << r.out;
  size_t failures = 0;
  for (size_t at = r.out.find("  FAIL leak: "); at != std::string::npos; at = r.out.find("  FAIL leak: ", at + 1))
    ++failures;
  EXPECT_EQ(failures, 1u) << r.out;
  EXPECT_NE(
      r.out.find("  FAIL leak: torch_leak_shapes.py:29 in keep_graph, called from torch_leak_shapes.py:61 in main "
                 "leaks 6 MiB/iteration"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("[3 sites]"), std::string::npos) << r.out;
  r = gpuleak(dir, {"check", "--max-leak-per-iteration", "7MiB", fixture});
  EXPECT_EQ(r.code, 0) << r.out;
}

// Issue #28: CLI misuse is one clear line and exit 2.
TEST(GateCheckCli, MisuseIsOneClearLineAndExitTwo) {
  ScratchDir dir;
  Result r = gpuleak(dir, {"runn"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "gpuleak: unknown subcommand 'runn'; did you mean run? (see gpuleak --help)\n");
  r = gpuleak(dir, {"chek", "x.report.json"});
  EXPECT_EQ(r.err, "gpuleak: unknown subcommand 'chek'; did you mean check? (see gpuleak --help)\n");
  r = gpuleak(dir, {"help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("Usage: gpuleak"), std::string::npos) << r.out;
  r = gpuleak(dir, {"help", "check"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("--max-leak-per-iteration"), std::string::npos) << r.out;
  std::string clean = dir.write("clean.report.json", report("clean").dump());
  r = gpuleak(dir, {"check", "--min-oom-horizon", "-3", clean});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "gpuleak: --min-oom-horizon: -3 is not a whole number of 0 or more (see gpuleak check --help)\n");
  r = gpuleak(dir, {"check", "--max-peak", "5=1GiB", clean});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "gpuleak: max peak for device 5: no report has device 5 (devices: 0)\n");
  EXPECT_EQ(r.out, "");
}

// Issue #28: a CI artifact (.report.json) is printed as text or Markdown.
TEST(GateCheckCli, ReportPrintsAReportFile) {
  ScratchDir dir;
  const std::string fixture = GPULEAK_SOURCE_DIR "/tests/fixtures/issue28/torch_three_sites.report.json";
  Result r = gpuleak(dir, {"report", fixture});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("train.py:52 in train_step"), std::string::npos) << r.out;
  r = gpuleak(dir, {"report", "--format", "markdown", fixture});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("train.py:52"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("#"), std::string::npos) << r.out;
  EXPECT_EQ(gpuleak(dir, {"report", "--fail-on-leak", fixture}).code, 1);
  r = gpuleak(dir, {"report", dir.write("bad.report.json", "{\"schema\": \"other/1\"}")});
  EXPECT_EQ(r.code, 2);
}

// Issue #28: run takes --warmup, --iteration-range and --user-code, meaning what they mean on
// report (they were "unknown option").
TEST(GateCheckCli, RunTakesTheSharedReadFlags) {
  ScratchDir dir;
  Result r = gpuleak(dir,
                     {"run", "--out", dir.path(), "--quiet", "--warmup", "3", "--user-code", dir.path(),
                      "--iteration-range", "step", GPULEAK_LEAKY_STATIC, "12"},
                     "LD_LIBRARY_PATH=" GPULEAK_FAKE_CUDA_DIR);
  ASSERT_EQ(r.code, 0) << r.err;
  std::string cmd = "ls " + quote(dir.path()) + "/*.report.json > " + quote(dir.file("list"));
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::string list = slurp(dir.file("list"));
  json doc = json::parse(slurp(list.substr(0, list.find('\n'))));
  EXPECT_EQ(doc["analysis"]["warmup_iterations"], 3);
}

TEST(GateCheckCli, OneLineErrorsAndExitTwo) {
  ScratchDir dir;
  std::string missing = dir.file("missing.report.json");
  Result r = gpuleak(dir, {"check", missing});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "gpuleak: cannot read " + missing + ": No such file or directory\n");
  EXPECT_EQ(r.out, "");

  std::string text = leaky_report().dump(2);
  std::string cut = dir.write("cut.report.json", text.substr(0, 200));
  r = gpuleak(dir, {"check", cut});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "gpuleak: " + cut + ": truncated JSON (the document ends early, at byte 200)\n");

  std::string foreign = dir.write("package.json", R"({"name": "left-pad", "version": "1.3.0"})");
  r = gpuleak(dir, {"check", foreign});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "gpuleak: " + foreign + ": not a gpuleak report (no \"schema\": \"gpuleak.report/1\")\n");

  json v2 = report();
  v2["schema"] = "gpuleak.report/2";
  std::string newer = dir.write("v2.report.json", v2.dump());
  r = gpuleak(dir, {"check", newer});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "gpuleak: " + newer +
                       ": report schema gpuleak.report/2 is newer than this gpuleak reads (gpuleak.report/1); upgrade "
                       "gpuleak\n");

  // A bad file among good ones: no partial verdict, exit 2.
  std::string clean = dir.write("clean.report.json", report().dump());
  r = gpuleak(dir, {"check", clean, foreign});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");

  r = gpuleak(dir, {"check", "--max-growth", "lots", clean});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(
      r.err,
      "gpuleak: --max-growth: bad size \"lots\" (units: B; KiB, MiB, GiB, TiB (or K, M, G, T) are 1024-based; KB, "
      "MB, GB, TB are 1000-based; e.g. 512KiB, \"1 MiB\", 2GB, unlimited)\n");

  std::string supp = dir.write("bad.supp", "leak:cache_activation\n");
  r = gpuleak(dir, {"check", "--suppressions", supp, clean});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "gpuleak: " + supp + ":1: suppression \"leak:cache_activation\" has no reason (add \"# why\" after it)\n");

  EXPECT_EQ(gpuleak(dir, {"check"}).code, 2);
  EXPECT_EQ(gpuleak(dir, {"check", "--format", "xml", clean}).code, 2);
  for (const Result &each : {gpuleak(dir, {"check", missing}), gpuleak(dir, {"check", cut})})
    EXPECT_EQ(std::count(each.err.begin(), each.err.end(), '\n'), 1) << each.err;
}

TEST(GateCheckCli, InconclusivePassesWithAWarningUnlessAsked) {
  ScratchDir dir;
  json doc = report("inconclusive");
  doc["iteration_source"] = "none";
  std::string path = dir.write("i.report.json", doc.dump());
  Result r = gpuleak(dir, {"check", path});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("warning inconclusive: no iterations found"), std::string::npos) << r.out;
  EXPECT_EQ(gpuleak(dir, {"check", "--fail-on-inconclusive", path}).code, 1);
}

TEST(GateCheckCli, SuppressionsConfigAndBaseline) {
  ScratchDir dir;
  std::string leaky = dir.write("leaky.report.json", leaky_report().dump());
  std::string supp = dir.write("ci.supp", "# known\nleak:cache_activation  # freed at shutdown by design\n");
  Result r = gpuleak(dir, {"check", "--suppressions", supp, leaky});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("suppressed leak: cache_activation"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("-- leak:cache_activation (" + supp + ":2): freed at shutdown by design"), std::string::npos);

  std::string cfg = dir.write("gate.json", R"({"max_leak_per_iteration": "2 MiB", "baseline": "base.report.json"})");
  json base = leaky_report();
  base["devices"][0]["peak_live_bytes"] = 50 << 20;
  dir.write("base.report.json", base.dump());
  r = gpuleak(dir, {"check", "--config", cfg, leaky});
  EXPECT_EQ(r.code, 1);  // peak 100 MiB vs 50 MiB
  EXPECT_NE(r.out.find("peak regression: device 0 peak 100 MiB vs 50 MiB in the baseline (+100.0%, tolerance 5.0%)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(gpuleak(dir, {"check", "--config", cfg, "--tolerance", "150%", leaky}).code, 0);
  EXPECT_EQ(
      gpuleak(dir, {"check", "--config", cfg, "--max-leak-per-iteration", "0", "--tolerance", "150%", leaky}).code,
      1);  // flags win over the file
}

TEST(GateCheckCli, JunitGithubAnnotationsAndStepSummary) {
  ScratchDir dir;
  std::string leaky = dir.write("leaky.report.json", leaky_report().dump());
  std::string junit = dir.file("gpuleak.junit.xml");
  std::string summary = dir.write("summary.md", "# earlier step\n");
  Result r = gpuleak(dir, {"check", "--junit", junit, leaky},
                     "GITHUB_ACTIONS=true GITHUB_WORKSPACE=/ws GITHUB_STEP_SUMMARY=" + quote(summary));
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out.rfind("::error file=src/leaky.cpp,line=14,title=gpuleak leak in train (pid 42)::cache_activation", 0),
            0u)
      << r.out;
  std::string md = slurp(summary);
  EXPECT_EQ(md.rfind("# earlier step\n## gpuleak check: ", 0), 0u) << md;  // appended, not replaced
  std::string xml = slurp(junit);
  EXPECT_NE(xml.find("<testcase classname=\"gpuleak.check\" name=\"train\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<failure type=\"leak\""), std::string::npos) << xml;

  r = gpuleak(dir, {"check", "--format", "markdown", leaky});
  EXPECT_EQ(r.out.rfind("## gpuleak check:", 0), 0u) << r.out;
  r = gpuleak(dir, {"check", leaky});  // not under GitHub: no annotations
  EXPECT_EQ(r.out.find("::error"), std::string::npos) << r.out;
}

// Issue #17: a flag that took several values swallowed the report paths after it, so the gate
// judged only some reports and passed a leaking one. Each repeatable flag, before, between and
// after three reports with the leaking one in every position: all three are judged.
TEST(GateCheckCli, EveryReportIsJudgedInAnyFlagOrder) {
  ScratchDir dir;
  std::vector<std::pair<std::string, std::string>> flags = {
      {"--baseline", dir.write("base.report.json", report("clean").dump())},
      {"--max-peak", "1 GiB"},
      {"--suppressions", dir.write("ci.supp", "leak:not_in_any_report  # a rule that matches nothing\n")}};
  for (int leaking = 0; leaking < 3; ++leaking) {
    std::vector<std::string> reports;
    for (int i = 0; i < 3; ++i) {
      json doc = i == leaking ? leaky_report() : report("clean");
      doc["run"]["program"] = "prog" + std::to_string(i);
      reports.push_back(dir.write("r" + std::to_string(i) + ".report.json", doc.dump()));
    }
    for (const auto &[flag, value] : flags) {
      for (size_t at = 0; at <= reports.size(); ++at) {
        std::vector<std::string> args = {"check"};
        for (size_t i = 0; i <= reports.size(); ++i) {
          if (i == at) args.insert(args.end(), {flag, value});
          if (i < reports.size()) args.push_back(reports[i]);
        }
        Result r = gpuleak(dir, args);
        std::string where = flag + " at position " + std::to_string(at) + ", leak in r" + std::to_string(leaking);
        EXPECT_EQ(r.code, 1) << where << "\n" << r.out << r.err;
        EXPECT_NE(r.out.find("gpuleak check: 1 of 3 reports failed"), std::string::npos) << where << "\n" << r.out;
        EXPECT_NE(r.out.find("FAIL prog" + std::to_string(leaking) + " (pid 42)"), std::string::npos) << where << "\n"
                                                                                                      << r.out;
      }
    }
  }
}

// A repeatable flag is repeated, and its occurrences may stand between the reports.
TEST(GateCheckCli, RepeatedFlagsBetweenReports) {
  ScratchDir dir;
  std::vector<std::string> reports, baselines;
  for (int i = 0; i < 2; ++i) {
    json doc = report("clean");
    doc["run"]["program"] = "prog" + std::to_string(i);
    reports.push_back(dir.write("r" + std::to_string(i) + ".report.json", doc.dump()));
    baselines.push_back(dir.write("b" + std::to_string(i) + ".report.json", doc.dump()));
  }
  Result r = gpuleak(dir, {"check", "--baseline", baselines[0], reports[0], "--baseline", baselines[1], reports[1],
                           "--max-peak", "0=1GiB", "--max-peak", "0=2GiB"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("gpuleak check: 0 of 2 reports failed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("baseline " + baselines[1]), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("no baseline report"), std::string::npos) << r.out;
  // The value of a flag is one word: a size with a space is quoted, or written without one.
  r = gpuleak(dir, {"check", "--max-peak", "1", "GiB", reports[0]});
  EXPECT_EQ(r.code, 2) << r.out;
}

TEST(GateDiffCli, SideBySideAndBadInput) {
  ScratchDir dir;
  std::string a = dir.write("a.report.json", report("clean").dump());
  std::string b = dir.write("b.report.json", leaky_report().dump());
  Result r = gpuleak(dir, {"diff", a, b});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("leaking lines: 1 new, 0 gone, 0 regressed, 0 improved, 0 moved, 0 the same"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("+ cache_activation (/ws/src/leaky.cpp:14): 1 MiB/iteration"), std::string::npos) << r.out;
  r = gpuleak(dir, {"diff", a, dir.file("nope.json")});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "gpuleak: cannot read " + dir.file("nope.json") + ": No such file or directory\n");
}

// #25: a report that contradicts itself was judged by its devices and leaks alone, so a "growth"
// verdict with no growing device passed, and so did a file that says "verdict" twice (nlohmann
// keeps the last). Both are bad input now: exit 2, one line naming what is wrong, never a pass.
TEST(GateCheckCli, ContradictoryReportsFailClosed) {
  ScratchDir dir;
  json growth = report("growth");
  growth["devices"] = json::array({device(0, "clean")});
  std::string path = dir.write("growth.report.json", growth.dump());
  Result r = gpuleak(dir, {"check", path});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(r.err, "gpuleak: " + path +
                       ": malformed report: verdict \"growth\" but the worst of devices[] is \"clean\" (device 0)\n");
  EXPECT_EQ(r.out, "");

  json quiet_leak = leaky_report();
  quiet_leak["verdict"] = "clean";
  quiet_leak["devices"] = json::array({device(0, "clean")});
  path = dir.write("quiet.report.json", quiet_leak.dump());
  r = gpuleak(dir, {"check", path});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(r.err,
            "gpuleak: " + path + ": malformed report: leaks[] names a leak on device 0, whose verdict is \"clean\"\n");

  json no_devices = report("growth");
  no_devices["devices"] = json::array();
  path = dir.write("nodev.report.json", no_devices.dump());
  r = gpuleak(dir, {"check", path});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(r.err, "gpuleak: " + path + ": malformed report: verdict \"growth\" but devices[] lists no device\n");

  // The same key twice, whichever comes last: the file says two things.
  std::string text = leaky_report().dump();
  const std::string key = "\"verdict\":\"leak\"";
  ASSERT_NE(text.find(key), std::string::npos);
  text.replace(text.find(key), key.size(), key + ",\"verdict\":\"clean\"");
  path = dir.write("twice.report.json", text);
  r = gpuleak(dir, {"check", path});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(r.err,
            "gpuleak: " + path + ": JSON object has the key \"verdict\" twice (which one counts is ambiguous)\n");
  r = gpuleak(dir, {"diff", path, path});
  EXPECT_EQ(r.code, 2) << r.out << r.err;

  // A consistent report still passes or fails on its merits.
  EXPECT_EQ(gpuleak(dir, {"check", dir.write("ok.report.json", report("clean").dump())}).code, 0);
  EXPECT_EQ(gpuleak(dir, {"check", dir.write("leak.report.json", leaky_report().dump())}).code, 1);
}

// #25: a FIFO with no writer blocked every reader in open() forever. Each input the gate reads is
// refused at once (the `timeout` would turn a hang into exit 124).
TEST(GateCheckCli, FifoInputsAreRefusedAtOnce) {
  ScratchDir dir;
  std::string fifo = dir.file("pipe.report.json");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::string clean = dir.write("clean.report.json", report().dump());
  const std::string said = "gpuleak: cannot read " + fifo + ": not a regular file (a FIFO (named pipe) or pipe)\n";
  for (const std::vector<std::string> &args : {std::vector<std::string>{"check", fifo},
                                               {"check", "--baseline", fifo, clean},
                                               {"check", "--suppressions", fifo, clean},
                                               {"check", "--config", fifo, clean},
                                               {"diff", clean, fifo}}) {
    Result r = gpuleak(dir, args, "timeout 20");
    EXPECT_EQ(r.code, 2) << args[1] << ": " << r.err;
    EXPECT_EQ(r.err, said) << args[1];
  }
}

// #25: `gpuleak diff` printed a report's names as they were: a program named with an escape
// sequence recoloured the terminal or set its title.
TEST(GateDiffCli, NamesFromReportsAreInert) {
  ScratchDir dir;
  json a = report("clean"), b = leaky_report();
  const std::string evil =
      "tr\x1b]0;pwned\x07ain\x1b[2J\xC2\x9B"
      "31m";
  a["run"]["program"] = evil;
  b["run"]["program"] = evil;
  b["leaks"][0]["stack"][0]["function"] = "cache\x1b[31m_activation";
  b["leaks"][0]["site_id"] = "aa\x1b[0m";
  Result r = gpuleak(dir, {"diff", dir.write("a.report.json", a.dump()), dir.write("b.report.json", b.dump())});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\x07'), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\xC2\x9B"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tr\xEF\xBF\xBD]0;pwned"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cache\xEF\xBF\xBD[31m_activation"), std::string::npos) << r.out;
}

// Issue #33: a test suite's report (loops[] with tests): the leak of one test's loop fails the
// gate naming the test and the loop, its JUnit case fails, a per-test budget passes it, and a bad
// --loop-budget is one line with exit 2.
json suite_report() {
  json doc = report("leak");
  json l = leak("00000000000000bb", "test_leaky_step", "/ws/test_suite.py", 27, 1048576);
  l["loop"] = "test_leaky_step (test_suite.py:26-27)";
  doc["leaks"] = json::array({l});
  auto loop = [](const std::string &test, int line, const std::string &verdict, bool primary) {
    return json{{"name", test + " (test_suite.py:" + std::to_string(line) + "-" + std::to_string(line + 1) + ")"},
                {"kind", "loop"},
                {"file", "/ws/test_suite.py"},
                {"function", test},
                {"first_line", line},
                {"last_line", line + 1},
                {"test", "test_suite.py::" + test},
                {"primary", primary},
                {"passes", 40},
                {"verdict", verdict},
                {"leak_groups", json::array()}};
  };
  doc["loops"] = json::array({loop("test_clean", 12, "clean", true), loop("test_leaky_step", 26, "leak", false)});
  return doc;
}

TEST(GateCheckCli, LoopsNameTheTest) {
  ScratchDir dir;
  std::string suite = dir.write("suite.report.json", suite_report().dump());
  std::string junit = dir.file("junit.xml");
  Result r = gpuleak(dir, {"check", "--junit", junit, suite});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("leaks 1 MiB/iteration on device 0 in test_suite.py::test_leaky_step, the loop at "
                       "test_suite.py:26 in test_leaky_step (budget 0 B/iteration"),
            std::string::npos)
      << r.out;
  const std::string xml = slurp(junit);
  // One leak, one failing case: the test's; the report's case passes and points there.
  EXPECT_NE(xml.find("tests=\"3\" failures=\"1\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("1 failing finding(s) in the test cases below"), std::string::npos) << xml;
  EXPECT_NE(xml.find("name=\"test_suite.py::test_leaky_step\""), std::string::npos) << xml;
  // The clean test's case passes: no <failure> between its name and the next testcase.
  const size_t clean = xml.find("name=\"test_suite.py::test_clean\"");
  ASSERT_NE(clean, std::string::npos) << xml;
  EXPECT_EQ(xml.substr(clean, xml.find("</testcase>", clean) - clean).find("<failure"), std::string::npos) << xml;
  // Per test, per function, per location; the first match wins.
  EXPECT_EQ(gpuleak(dir, {"check", "--loop-budget", "test_suite.py::test_leaky*=2 MiB", suite}).code, 0);
  EXPECT_EQ(gpuleak(dir, {"check", "--loop-budget", "test_suite.py:26=2MiB", suite}).code, 0);
  EXPECT_EQ(gpuleak(dir, {"check", "--loop-budget", "test_clean=2MiB", suite}).code, 1);
  r = gpuleak(dir, {"check", "--loop-budget", "test_suite.py::*=512KiB", "--loop-budget", "*=2MiB", suite});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("from loop rule test_suite.py::*"), std::string::npos) << r.out;
  std::string config =
      dir.write("gate.json", R"({"loops": [{"match": "test_leaky_step", "max_leak_per_iteration": "1 MiB"}]})");
  EXPECT_EQ(gpuleak(dir, {"check", "--config", config, suite}).code, 0);
  for (const char *bad : {"test_suite.py::*", "=1MiB", "x=lots"}) {
    r = gpuleak(dir, {"check", "--loop-budget", bad, suite});
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find("--loop-budget"), std::string::npos) << r.err;
  }
  config = dir.write("bad.json", R"({"loops": [{"max_leak_per_iteration": "1 MiB"}]})");
  r = gpuleak(dir, {"check", "--config", config, suite});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("needs \"match\""), std::string::npos) << r.err;
}

// Baselines pair loops by what they are (issue #28): a loop whose lines moved (lines added above
// it) is the same loop; the same line leaking in another loop is a new finding.
TEST(GateCheckCli, BaselineMatchesLoopsByLocation) {
  ScratchDir dir;
  json base = suite_report();
  std::string same = dir.write("base.report.json", base.dump());
  base["loops"][1]["first_line"] = 30;
  base["loops"][1]["name"] = "test_leaky_step (test_suite.py:30-31)";
  base["leaks"][0]["loop"] = "test_leaky_step (test_suite.py:30-31)";
  base["leaks"][0]["stack"][0]["line"] = 31;
  std::string moved = dir.write("moved.report.json", base.dump());
  base = suite_report();
  base["leaks"][0]["loop"] = base["loops"][0]["name"];  // the line, leaking in test_clean's loop
  std::string elsewhere = dir.write("elsewhere.report.json", base.dump());
  std::string now = dir.write("now.report.json", suite_report().dump());
  Result r = gpuleak(dir, {"check", "--loop-budget", "*=2MiB", "--baseline", same, now});
  EXPECT_EQ(r.code, 0) << r.out;
  r = gpuleak(dir, {"check", "--loop-budget", "*=2MiB", "--baseline", moved, now});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("was 1 MiB/iteration at test_leaky_step (/ws/test_suite.py:31) in the baseline"),
            std::string::npos)
      << r.out;
  r = gpuleak(dir, {"check", "--loop-budget", "*=2MiB", "--baseline", elsewhere, now});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("new since the baseline"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ok leak gone: test_leaky_step (/ws/test_suite.py:27) leaked 1 MiB/iteration on device 0 in "
                       "test_suite.py::test_clean"),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace gpuleak::gate
