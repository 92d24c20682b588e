// The splice of data into the page: program strings must never end the data element early.
#include "output/view/html_document.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace gpuleak::output::view {
namespace {

using nlohmann::json;

const std::string kTemplate =
    "<!doctype html><html><head><script type=\"application/json\" id=\"gpuleak-data\">\"__GPULEAK_DATA__\"</script>"
    "<script type=\"module\">app()</script></head><body></body></html>";

// A report whose program strings try every way out of a <script> element.
json hostile_report() {
  const std::string evil[] = {"</script><script>alert(1)</script>",
                              "<!--<script>",
                              "</SCRIPT >",
                              "a\u2028b\u2029c",
                              "quote\" backslash\\ tab\t nul",
                              std::string("bad utf8 \xff\xfe end"),
                              "<\\/script>"};
  json stack = json::array();
  for (const std::string &s : evil)
    stack.push_back({{"kind", "native"}, {"function", s}, {"file", s}, {"line", 1}, {"module", s}});
  return {{"schema", "gpuleak.report/1"},
          {"verdict", "leak"},
          {"run", {{"command", json::array({evil[0], evil[1]})}, {"host", evil[2]}}},
          {"leaks", json::array({{{"site_id", "0123456789abcdef"}, {"stack", stack}}})}};
}

std::string data_between(const std::string &html) {
  const std::string open = "id=\"gpuleak-data\">";
  size_t a = html.find(open);
  EXPECT_NE(a, std::string::npos);
  a += open.size();
  size_t b = html.find("</script>", a);
  EXPECT_NE(b, std::string::npos);
  return html.substr(a, b - a);
}

size_t count(const std::string &haystack, const std::string &needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

TEST(HtmlDocument, EscapesWhatCouldCloseOrConfuseAScriptElement) {
  std::string in = json{{"s", "</script><!--\u2028\u2029"}}.dump();
  std::string out = escape_json_for_script(in);
  EXPECT_EQ(out.find('<'), std::string::npos);
  EXPECT_EQ(out.find("\u2028"), std::string::npos);
  EXPECT_EQ(out.find("\u2029"), std::string::npos);
  EXPECT_EQ(json::parse(out), json::parse(in));
  EXPECT_EQ(out, R"({"s":"\u003c/script>\u003c!--\u2028\u2029"})");
}

TEST(HtmlDocument, HostileReportStaysInsideTheDataElement) {
  json report = hostile_report();
  std::string html = splice_into_template(kTemplate, embedded_data(report, nullptr));
  // The template's own two </script> and nothing more, in any letter case.
  std::string lower = html;
  for (char &c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  EXPECT_EQ(count(lower, "</script"), 2u);
  EXPECT_EQ(count(html, "<!--"), 0u);
  json doc = json::parse(data_between(html));  // the page's JSON.parse sees the same thing
  EXPECT_EQ(doc["schema"], "gpuleak.html/1");
  EXPECT_TRUE(doc["view"].is_null());
  EXPECT_EQ(doc["report"]["run"]["command"][0], "</script><script>alert(1)</script>");
  EXPECT_EQ(doc["report"]["leaks"][0]["stack"][3]["function"], "a\u2028b\u2029c");
  EXPECT_EQ(doc["report"]["leaks"][0]["stack"][5]["function"], "bad utf8 \xEF\xBF\xBD\xEF\xBF\xBD end");
  EXPECT_TRUE(html.rfind("<script type=\"module\">app()</script></head><body></body></html>") != std::string::npos);
}

TEST(HtmlDocument, TheCommittedTemplateTakesTheData) {
  std::ifstream in(GPULEAK_VIEWER_PREBUILT, std::ios::binary);
  ASSERT_TRUE(in) << GPULEAK_VIEWER_PREBUILT;
  std::stringstream s;
  s << in.rdbuf();
  const std::string tmpl = s.str();
  const size_t scripts_before = count(tmpl, "</script");
  std::string html = splice_into_template(tmpl, embedded_data(hostile_report(), nullptr));
  EXPECT_EQ(count(html, "</script"), scripts_before);
  EXPECT_EQ(json::parse(data_between(html))["report"]["run"]["host"], "</SCRIPT >");
  EXPECT_EQ(html.find("\"__GPULEAK_DATA__\""), std::string::npos);
  // Self-contained: nothing loaded from elsewhere.
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);
  EXPECT_EQ(html.find("href=\"http"), std::string::npos);
}

TEST(HtmlDocument, IterationsTravelAsColumns) {
  json report = {{"schema", "gpuleak.report/1"},
                 {"iterations", json::array({{{"index", 0},
                                              {"loop", "step"},
                                              {"primary", true},
                                              {"start_ns", 10},
                                              {"end_ns", 20},
                                              {"devices", json::array({{{"index", 0},
                                                                        {"live_end_bytes", 100},
                                                                        {"peak_bytes", 150},
                                                                        {"allocated_bytes", 200},
                                                                        {"freed_bytes", 100},
                                                                        {"alloc_count", 2},
                                                                        {"free_count", 1}}})}},
                                             {{"index", 0},
                                              {"loop", "eval"},
                                              {"primary", false},
                                              {"start_ns", 30},
                                              {"end_ns", 40},
                                              {"devices", json::array({{{"index", 0},
                                                                        {"live_end_bytes", 5},
                                                                        {"peak_bytes", 6},
                                                                        {"allocated_bytes", 7},
                                                                        {"freed_bytes", 8},
                                                                        {"alloc_count", 9},
                                                                        {"free_count", 10}}})}}})}};
  json doc = json::parse(data_between(splice_into_template(kTemplate, embedded_data(report, nullptr))));
  EXPECT_FALSE(doc["report"].contains("iterations"));
  const json &it = doc["iterations"];
  EXPECT_EQ(it["loops"], json({"step", "eval"}));
  EXPECT_EQ(it["loop"], json({0, 1}));
  EXPECT_EQ(it["primary"], json({1, 0}));
  EXPECT_EQ(it["start_ns"], json({10, 30}));
  EXPECT_EQ(it["end_ns"], json({20, 40}));
  ASSERT_EQ(it["devices"].size(), 1u);
  EXPECT_EQ(it["devices"][0]["index"], 0);
  EXPECT_EQ(it["devices"][0]["live_end_bytes"], json({100, 5}));
  EXPECT_EQ(it["devices"][0]["free_count"], json({1, 10}));
  EXPECT_EQ(iteration_columns(json::array())["start_ns"], json::array());
}

TEST(HtmlDocument, RefusesATemplateWithoutExactlyOnePlaceholder) {
  EXPECT_THROW(splice_into_template("<html></html>", "{}"), std::runtime_error);
  EXPECT_THROW(splice_into_template(kTemplate + kTemplate, "{}"), std::runtime_error);
}

TEST(HtmlDocument, DataWithDollarsAndPlaceholderTextIsCopiedVerbatim) {
  std::string data = escape_json_for_script(json{{"s", "$& $1 \"__GPULEAK_DATA__\""}}.dump());
  std::string html = splice_into_template(kTemplate, data);
  EXPECT_EQ(json::parse(data_between(html))["s"], "$& $1 \"__GPULEAK_DATA__\"");
}

TEST(HtmlDocument, TemplateSearchOrder) {
  EXPECT_EQ(template_candidates("/x/t.html", "/opt/gpuleak/bin", "/src"), std::vector<std::string>{"/x/t.html"});
  EXPECT_EQ(template_candidates("", "/opt/gpuleak/bin", "/src"),
            (std::vector<std::string>{"/opt/gpuleak/bin/../share/gpuleak/viewer.html", "/src/viewer/dist/index.html",
                                      "/src/viewer/prebuilt/viewer.html"}));
  EXPECT_EQ(template_candidates("", "/b", ""), std::vector<std::string>{"/b/../share/gpuleak/viewer.html"});
}

}  // namespace
}  // namespace gpuleak::output::view
