// Suppressions: LSan-style rules with required reasons; suppressed findings stay listed.
#include <gtest/gtest.h>

#include "gate/evaluate.h"
#include "gate/suppressions.h"
#include "report_fixture.h"

namespace gpuleak::gate {
namespace {

using namespace testing;

std::string parse_error(const std::string &text) {
  Suppressions s;
  try {
    s.parse_text(text, "ci.supp");
  } catch (const GateError &e) {
    return e.what();
  }
  return "(no error)";
}

Stack stack_of(const json &frames) {
  json doc = report("leak");  // a leak makes its device's verdict, or the report contradicts itself
  doc["leaks"] = json::array({leak("aa", "x", "x.cpp", 1, 1)});
  doc["leaks"][0]["stack"] = frames;
  return parse(doc).leaks[0].stack;
}

TEST(GateSuppressions, TemplatesFollowLeakSanitizer) {
  EXPECT_TRUE(template_match("cache", "cache_activation"));
  EXPECT_TRUE(template_match("activ", "cache_activation"));  // substring unless anchored
  EXPECT_FALSE(template_match("^activ", "cache_activation"));
  EXPECT_TRUE(template_match("^cache_*n$", "cache_activation"));
  EXPECT_FALSE(template_match("cache$", "cache_activation"));
  EXPECT_TRUE(template_match("third_party/*/alloc.cc", "/src/third_party/cub/alloc.cc"));
  EXPECT_TRUE(template_match("*", ""));
  EXPECT_FALSE(template_match(std::string(40, '*') + "b", std::string(200, 'a')));  // no blow-up
}

TEST(GateSuppressions, ParsesRulesAndRequiresReasons) {
  Suppressions s;
  s.parse_text(
      "# known GPU leaks\n\nleak:cache_activation   # freed at shutdown\nfile:third_party/*  # vendored\n"
      "module:libcudnn*.so*  # workspace\nsite:00000000000000aa # one site\n",
      "ci.supp");
  ASSERT_EQ(s.rules().size(), 4u);
  EXPECT_EQ(s.rules()[0].text(), "leak:cache_activation");
  EXPECT_EQ(s.rules()[0].reason, "freed at shutdown");
  EXPECT_EQ(s.rules()[0].origin, "ci.supp:3");
  EXPECT_EQ(parse_error("leak:foo\n"), "ci.supp:1: suppression \"leak:foo\" has no reason (add \"# why\" after it)");
  EXPECT_EQ(parse_error("leak:foo #   \n"),
            "ci.supp:1: suppression \"leak:foo\" has no reason (add \"# why\" after it)");
  EXPECT_EQ(parse_error("\ncalled_from_lib:x # r\n"),
            "ci.supp:2: unknown rule \"called_from_lib:x\" (expected leak:, file:, module: or site:)");
  EXPECT_EQ(parse_error("leak:   # r\n"), "ci.supp:1: empty pattern in \"leak:\"");
}

TEST(GateSuppressions, MatchesFunctionsFilesModulesAndSites) {
  Stack st = stack_of(json::array({frame("cudnnCreate", "/build/cudnn/handle.cpp", 10, "native", "libcudnn.so.9"),
                                   frame("main", "/src/train.cpp", 5)}));
  auto matches = [&](const std::string &rule) { return rule_matches(parse_rule(rule, "t"), st, "aa"); };
  EXPECT_TRUE(matches("leak:cudnnCreate"));
  EXPECT_TRUE(matches("leak:libcudnn"));  // leak: also looks at files and modules, like LSan
  EXPECT_TRUE(matches("file:/src/train.cpp"));
  EXPECT_FALSE(matches("file:cudnnCreate"));
  EXPECT_TRUE(matches("module:^libcudnn*.so*"));
  EXPECT_FALSE(matches("module:train.cpp"));
  EXPECT_TRUE(matches("site:aa"));
  EXPECT_FALSE(matches("site:a"));
}

TEST(GateSuppressions, SuppressedLeaksAreListedWithTheirReasonAndDoNotFail) {
  json doc = report("leak");
  doc["leaks"] = json::array({leak("aa", "cache_activation", "/src/leaky.cpp", 14, 1048576)});
  Suppressions s;
  s.parse_text("leak:cache_*  # freed at shutdown, see #123\nleak:never_matches # stale\n", "ci.supp");
  ReportOutcome o = evaluate(parse(doc), Budgets{}, s, nullptr);
  EXPECT_FALSE(o.failed());
  ASSERT_EQ(o.findings.size(), 1u);
  EXPECT_EQ(o.findings[0].status, Status::kSuppressed);
  EXPECT_EQ(o.findings[0].note, "leak:cache_* (ci.supp:1): freed at shutdown, see #123");
  EXPECT_EQ(s.uses()[0], 1u);
  EXPECT_EQ(s.uses()[1], 0u);
}

TEST(GateSuppressions, JsonRulesNeedAPatternAndAReason) {
  Suppressions s;
  s.parse_json(json::parse(R"([{"leak": "cache_*", "reason": "by design"}, {"site": "aa", "reason": "r"}])"), "cfg");
  EXPECT_EQ(s.rules().size(), 2u);
  EXPECT_THROW(s.parse_json(json::parse(R"([{"leak": "x"}])"), "cfg"), GateError);
  EXPECT_THROW(s.parse_json(json::parse(R"([{"reason": "x"}])"), "cfg"), GateError);
  EXPECT_THROW(s.parse_json(json::parse(R"([{"leak": "x", "file": "y", "reason": "r"}])"), "cfg"), GateError);
  EXPECT_THROW(s.parse_json(json::parse(R"([{"leek": "x", "reason": "r"}])"), "cfg"), GateError);
  EXPECT_THROW(s.parse_json(json::parse(R"({"leak": "x"})"), "cfg"), GateError);
}

}  // namespace
}  // namespace gpuleak::gate
