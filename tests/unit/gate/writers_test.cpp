// The gate's writers and their escaping, fed hostile strings: quotes, markup, control bytes,
// invalid UTF-8, and the characters GitHub's workflow commands reserve.
#include <gtest/gtest.h>

#include <optional>

#include "gate/evaluate.h"
#include "gate/writers.h"
#include "report_fixture.h"
#include "text/escape.h"

namespace gpuleak::gate {
namespace {

using namespace testing;
using namespace gpuleak::text;

const std::string kHostile = "f<T>(\"a\" & 'b')\x01\n%0A:,|*_`</script>\xff";

std::vector<ReportOutcome> hostile_outcomes() {
  json doc = report("leak");
  doc["run"]["program"] = "tr<ain>";
  doc["leaks"] = json::array({leak("aa", kHostile, "/ws/src/a,b:c.cpp", 9, 1048576)});
  Suppressions none;
  std::vector<ReportOutcome> out;
  out.push_back(evaluate(parse(doc, "out/t.report.json"), Budgets{}, none, nullptr));
  return out;
}

TEST(GateEscape, Xml) {
  EXPECT_EQ(xml_escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
  EXPECT_EQ(xml_escape("x\x01y\x7f"), "x\xEF\xBF\xBDy\xEF\xBF\xBD");
  EXPECT_EQ(xml_escape("l1\nl2\t\r"), "l1\nl2\t&#13;");
  EXPECT_EQ(xml_escape("l1\nl2\t", true), "l1&#10;l2&#9;");
  EXPECT_EQ(xml_escape("bad\xff\xc3("), "bad\xEF\xBF\xBD\xEF\xBF\xBD(");
  EXPECT_EQ(xml_escape("caf\xC3\xA9 \xF0\x9F\x98\x80"), "caf\xC3\xA9 \xF0\x9F\x98\x80");  // valid UTF-8 kept
  EXPECT_EQ(valid_utf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");          // a surrogate
}

TEST(GateEscape, PrintableForTerminals) {
  EXPECT_EQ(printable("ok\x1b[2Jx\ny\xff"), "ok\xEF\xBF\xBD[2Jx\xEF\xBF\xBDy\xEF\xBF\xBD");
}

TEST(GateEscape, GithubWorkflowCommands) {
  EXPECT_EQ(github_escape_data("50% of\r\nit: a,b"), "50%25 of%0D%0Ait: a,b");
  EXPECT_EQ(github_escape_data("esc\x1b[31m"), "esc\xEF\xBF\xBD[31m");
  EXPECT_EQ(github_escape_property("C:\\a,b%\n"), "C%3A\\a%2Cb%25%0A");
}

TEST(GateEscape, Markdown) {
  EXPECT_EQ(markdown_escape("a|b <img src=x> *x* _y_ `z` [l](u) #h\nnext"),
            "a\\|b &lt;img src=x&gt; \\*x\\* \\_y\\_ \\`z\\` \\[l\\](u) \\#h next");
}

TEST(GateWriters, JunitHasOneTestcasePerReportAndEscapesEverything) {
  std::vector<ReportOutcome> outcomes = hostile_outcomes();
  json clean = report("clean");
  Suppressions none;
  outcomes.push_back(evaluate(parse(clean, "out/ok.report.json"), Budgets{}, none, nullptr));
  std::string x = write_junit(outcomes);
  EXPECT_NE(x.find("<testsuite name=\"gpuleak check\" tests=\"2\" failures=\"1\" errors=\"0\" skipped=\"0\">"),
            std::string::npos)
      << x;
  EXPECT_NE(x.find("<testcase classname=\"gpuleak.check\" name=\"tr&lt;ain&gt;\" file=\"out/t.report.json\">"),
            std::string::npos)
      << x;
  EXPECT_NE(x.find("<failure type=\"leak\" message=\"leak: f&lt;T&gt;(&quot;a&quot; &amp; &apos;b&apos;)"),
            std::string::npos)
      << x;
  EXPECT_EQ(x.find("</script>"), std::string::npos);
  EXPECT_EQ(x.find('\x01'), std::string::npos);
  EXPECT_EQ(x.find('\xff'), std::string::npos);
  // Exactly one <failure>, for the failing report.
  EXPECT_EQ(x.find("<failure"), x.rfind("<failure"));
}

// Issue #17: the pid in a JUnit name made every CI run a new test. Names are the program (and
// rank); reports that share one are told apart by their file name without the pid, then by order.
TEST(GateWriters, JunitNamesAreStableAcrossRuns) {
  Suppressions none;
  auto outcome = [&](const std::string &program, int64_t pid, std::optional<int64_t> rank, const std::string &path) {
    json doc = report("clean");
    doc["run"]["program"] = program;
    doc["run"]["pid"] = pid;
    doc["run"]["rank"] = rank ? json(*rank) : json(nullptr);
    return evaluate(parse(doc, path), Budgets{}, none, nullptr);
  };
  for (int64_t pid : {12702, 31337}) {
    std::string p = std::to_string(pid);
    std::vector<ReportOutcome> outcomes;
    outcomes.push_back(outcome("prog_leaky_static", pid, std::nullopt, "out/prog_leaky_static." + p + ".report.json"));
    outcomes.push_back(outcome("train", pid, 0, "out/train." + p + ".rank0.report.json"));
    outcomes.push_back(outcome("train", pid + 1, 1, "out/train." + std::to_string(pid + 1) + ".rank1.report.json"));
    outcomes.push_back(outcome("eval", pid, std::nullopt, "a/eval." + p + ".report.json"));
    outcomes.push_back(
        outcome("eval", pid + 1, std::nullopt, "b/eval_small." + std::to_string(pid + 1) + ".report.json"));
    outcomes.push_back(
        outcome("eval", pid + 2, std::nullopt, "c/eval_small." + std::to_string(pid + 2) + ".report.json"));
    EXPECT_EQ(junit_test_names(outcomes),
              std::vector<std::string>({"prog_leaky_static", "train (rank 0)", "train (rank 1)",
                                        "eval [eval.report.json]", "eval #2", "eval #3"}))
        << "pid " << pid;
    std::string x = write_junit(outcomes);
    EXPECT_NE(x.find("name=\"prog_leaky_static\""), std::string::npos) << x;
    EXPECT_EQ(x.find("name=\"prog_leaky_static (pid"), std::string::npos) << x;
  }
}

TEST(GateWriters, GithubAnnotationsCarryFileLineAndEscapedMessage) {
  WriteOptions o;
  o.workspace = "/ws";
  std::string a = write_github_annotations(hostile_outcomes(), o);
  EXPECT_EQ(a.rfind("::error file=src/a%2Cb%3Ac.cpp,line=9,title=gpuleak leak in tr<ain> (pid 42)::", 0), 0u) << a;
  EXPECT_NE(a.find("%250A"), std::string::npos) << a;  // the literal "%0A" in the name stays literal
  EXPECT_NE(a.find("%0A"), std::string::npos) << a;    // the newline in the name is escaped
  EXPECT_EQ(a.find('\n'), a.size() - 1) << a;          // one command, one line
}

TEST(GateWriters, PlainTextStaysWithinAScreenful) {
  json doc = report("leak");
  for (int i = 0; i < 30; ++i)
    doc["leaks"].push_back(leak("s" + std::to_string(i), "f" + std::to_string(i), "/src/f.cpp", i + 1, 100));
  Suppressions s;
  s.parse_text("leak:nothing_like_it  # stale\n", "ci.supp");
  std::vector<ReportOutcome> outs;
  outs.push_back(evaluate(parse(doc), Budgets{}, s, nullptr));
  std::string text = write_plain(outs, s, WriteOptions{});
  EXPECT_LT(std::count(text.begin(), text.end(), '\n'), 15) << text;
  EXPECT_NE(text.find("FAIL train (pid 42): verdict leak (r.json)"), std::string::npos) << text;
  EXPECT_NE(text.find("... and 22 more (write them all with --junit FILE)"), std::string::npos) << text;
  EXPECT_NE(text.find("note: suppression leak:nothing_like_it (ci.supp:1) matched nothing"), std::string::npos);
  EXPECT_NE(text.find("gpuleak check: 1 of 1 report failed (30 failures, 0 warnings, 0 suppressed)"), std::string::npos)
      << text;
}

TEST(GateWriters, MarkdownSummary) {
  std::string md = write_markdown(hostile_outcomes());
  EXPECT_EQ(md.rfind("## gpuleak check: \xE2\x9D\x8C 1 of 1 report failed", 0), 0u) << md;
  EXPECT_NE(md.find("| tr&lt;ain&gt; (pid 42) | leak |"), std::string::npos) << md;
  EXPECT_EQ(md.find("</script>"), std::string::npos);
  EXPECT_EQ(md.find("<ain>"), std::string::npos);
}

}  // namespace
}  // namespace gpuleak::gate
