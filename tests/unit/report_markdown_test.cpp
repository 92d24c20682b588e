// `gpuleak report --format markdown`: the sections are there, the numbers are the report's, and
// hostile names from the profiled program cannot break a table, inject HTML or open a link.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "output/report_markdown.h"

namespace gpuleak::output {
namespace {

using nlohmann::json;

// The cells of a Markdown table row, split on pipes that are not backslash-escaped.
std::vector<std::string> cells(const std::string &row) {
  std::vector<std::string> out;
  std::string cell;
  for (size_t i = 0; i < row.size(); ++i) {
    if (row[i] == '\\' && i + 1 < row.size()) {
      cell += row.substr(i, 2);
      ++i;
    } else if (row[i] == '|') {
      out.push_back(cell);
      cell.clear();
    } else {
      cell += row[i];
    }
  }
  out.push_back(cell);
  // "| a | b |" -> "", " a ", " b ", "": drop the empty ends.
  if (!out.empty() && out.front().empty()) out.erase(out.begin());
  if (!out.empty() && out.back().empty()) out.pop_back();
  return out;
}

std::vector<std::string> lines(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// Every table: each row has as many cells as its header.
void expect_tables_well_formed(const std::string &md) {
  size_t columns = 0;
  for (const std::string &l : lines(md)) {
    if (l.empty() || l[0] != '|') {
      columns = 0;
      continue;
    }
    size_t n = cells(l).size();
    if (columns == 0) columns = n;
    EXPECT_EQ(n, columns) << "row: " << l;
  }
}

json report_with(const std::string &function, const std::string &file) {
  json frame = {{"kind", "python"}, {"function", function}, {"file", file}, {"line", 42}};
  return json{
      {"schema", "gpuleak.report/1"},
      {"run", {{"program", function}, {"pid", 7}, {"allocator_mode", "per-allocation"}, {"allocator_note", nullptr}}},
      {"verdict", "leak"},
      {"iteration_source", "api"},
      {"analysis", {{"primary_loop", function}, {"primary_iterations", 30}, {"warmup_iterations", 3}}},
      {"devices",
       {{{"index", 0},
         {"name", "Fake GPU"},
         {"verdict", "leak"},
         {"peak_live_bytes", 100 << 20},
         {"live_at_exit_bytes", 0},
         {"nvml_used_bytes", 600 << 20},
         {"untracked_bytes", 500 << 20},
         {"forecast", {{"iterations_left", 4100}, {"seconds_left", 1025.0}, {"bytes_per_iteration", 1 << 20}}}}}},
      {"leaks",
       {{{"site_id", "95dbc60ebc9dfe82"},
         {"device", 0},
         {"bytes_per_iteration", 1 << 20},
         {"live_bytes", 30 << 20},
         {"live_count", 30},
         {"live_at_exit_bytes", 0},
         {"live_at_exit_count", 0},
         {"first_iteration", 2},
         {"confidence", 0.93},
         {"stack", json::array({frame})}}}},
      {"oom",
       {{"events",
         {{{"t_ns", 2500000000ull},
           {"device", 0},
           {"requested_bytes", 1 << 30},
           {"free_bytes", 1 << 20},
           {"total_bytes", 80ull << 30},
           {"live_bytes", 79ull << 30},
           {"recovered", false},
           {"stack", json::array({frame})},
           {"live_by_site",
            {{{"site_id", "95dbc60ebc9dfe82"},
              {"bytes", 30 << 20},
              {"count", 30},
              {"stack", json::array({frame})}}}}}}}}}};
}

TEST(ReportMarkdown, SectionsAndNumbers) {
  std::string md = report_markdown(report_with("keep_batch", "/home/u/train.py"));
  EXPECT_EQ(md.rfind("# gpuleak report: keep\\_batch (pid 7)\n", 0), 0u) << md;
  EXPECT_NE(md.find("**Verdict: leak**, 30 iterations of loop \"keep\\_batch\" (api; 3 warm-up)"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| `95dbc60ebc9dfe82` | keep\\_batch (train.py:42) | 0 | 1.0 MiB/iteration | 30.0 MiB in 30 "
                    "(released at exit) | 2 | ran out of memory | 0.93 |"),
            std::string::npos)
      << md;
  // Issue #17: the run ran out of memory, so the failure leads, before the leak.
  EXPECT_LT(md.find("## Out of memory"), md.find("## Leaks")) << md;
  EXPECT_LT(md.find("Live at the newest failure, by call site"), md.find("## Leaks")) << md;
  EXPECT_NE(md.find("## Devices"), std::string::npos);
  EXPECT_NE(md.find("| 600.0 MiB | 500.0 MiB |"), std::string::npos) << md;
  EXPECT_NE(md.find("## Out of memory"), std::string::npos);
  EXPECT_NE(md.find("| 2.500 s | 0 | 1.0 GiB | 1.0 MiB / 80.0 GiB | 79.0 GiB | **no** | keep\\_batch (train.py:42) |"),
            std::string::npos)
      << md;
  expect_tables_well_formed(md);
}

// Without an out-of-memory the device is forecast, in the words the terminal and the gate use.
TEST(ReportMarkdown, ForecastInTheSharedWords) {
  json r = report_with("keep_batch", "/home/u/train.py");
  r["oom"] = nullptr;
  std::string md = report_markdown(r);
  EXPECT_NE(md.find("| 2 | out of memory in ~4100 iterations (~17 min) | 0.93 |"), std::string::npos) << md;
  EXPECT_LT(md.find("## Leaks"), md.find("## Out of memory")) << md;
  EXPECT_NE(md.find("No allocation failed."), std::string::npos) << md;
  // The devices table says what the forecast counted beyond the tracked live bytes (report 1.3).
  r["devices"][0]["forecast"]["held_elsewhere_bytes"] = 600 << 20;
  md = report_markdown(r);
  EXPECT_NE(md.find("out of memory in ~4100 iterations (~17 min), with the 600.0 MiB held outside the tracked "
                    "allocations |"),
            std::string::npos)
      << md;
  r["devices"][0]["forecast"]["fills"] = "jax_arena";
  r["devices"][0]["forecast"]["pool_free_bytes"] = 2ull << 30;
  md = report_markdown(r);
  EXPECT_NE(md.find("(~17 min), when JAX's arena is full (2.0 GiB of it free at the last iteration) |"),
            std::string::npos)
      << md;
  r["devices"][0]["forecast"]["iterations_left"] = 0;
  md = report_markdown(r);
  EXPECT_NE(md.find("| out of memory within the next iteration"), std::string::npos) << md;
  EXPECT_EQ(md.find("~0 iterations"), std::string::npos) << md;
  expect_tables_well_formed(md);
}

TEST(ReportMarkdown, HostileNamesAreEscaped) {
  const std::string evil =
      "f|g`x`<script>alert(1)</script>[a](http://e.example)\n# H\r*b* \x1b[31m\x1b]0;title\x07\xC2\x9B"
      "2J";
  std::string md = report_markdown(report_with(evil, "/x/a|b<img src=x>.py"));
  expect_tables_well_formed(md);
  EXPECT_EQ(md.find("<script>"), std::string::npos) << md;
  EXPECT_EQ(md.find("<img"), std::string::npos) << md;
  EXPECT_NE(md.find("\\[a\\](http"), std::string::npos) << md;  // no link: the brackets are escaped
  for (size_t at = md.find("]("); at != std::string::npos; at = md.find("](", at + 1))
    EXPECT_EQ(md[at - 1], '\\') << md;
  EXPECT_EQ(md.find('\x1b'), std::string::npos);
  EXPECT_EQ(md.find('\x07'), std::string::npos);
  EXPECT_EQ(md.find("\xC2\x9B"), std::string::npos) << md;  // 8-bit CSI
  EXPECT_EQ(md.find("\n# H"), std::string::npos) << md;     // no heading injected by a line break
  for (const std::string &l : lines(md)) {
    // No unescaped backtick outside the site-id code spans gpuleak writes itself.
    for (size_t i = 0; i < l.size(); ++i)
      if (l[i] == '`' && (i == 0 || l[i - 1] != '\\')) {
        size_t close = l.find('`', i + 1);
        ASSERT_NE(close, std::string::npos) << l;
        EXPECT_EQ(l.substr(i + 1, close - i - 1).find_first_not_of("0123456789abcdef"), std::string::npos) << l;
        i = close;
      }
  }
  EXPECT_NE(md.find("f\\|g\\`x\\`&lt;script&gt;"), std::string::npos) << md;
}

TEST(ReportMarkdown, CleanReportAndAllocatorNote) {
  json r = report_with("f", "a.py");
  r["verdict"] = "clean";
  r["leaks"] = json::array();
  r["oom"] = nullptr;
  r["run"]["allocator_note"] = "gpuleak saw a caching allocator's segments";
  std::string md = report_markdown(r);
  EXPECT_NE(md.find("No leaking call site."), std::string::npos) << md;
  EXPECT_NE(md.find("No allocation failed."), std::string::npos) << md;
  EXPECT_NE(md.find("## Notes\n\n- gpuleak saw a caching allocator's segments\n"), std::string::npos) << md;
}

TEST(ReportMarkdown, AdviceOneLineEachWithItsSiteWhenItHasOne) {
  json r = report_with("f", "a.py");
  EXPECT_EQ(report_markdown(r).find("## Advice"), std::string::npos);  // no findings, no section
  json frame = {{"kind", "native"}, {"function", "scratch_buffer"}, {"file", "/src/train.cu"}, {"line", 41}};
  r["advice"] = json::array(
      {{{"kind", "churn"}, {"device", 0}, {"stack", json::array({frame})}, {"message", "1 buffer of 4.0 MiB ..."}},
       {{"kind", "fragmentation"},
        {"device", 1},
        {"site_id", nullptr},
        {"stack", json::array()},
        {"message", "a pool keeps 1.9 GiB <b>|</b>"}}});
  std::string md = report_markdown(r);
  EXPECT_NE(md.find("## Advice\n\n- **churn** (device 0) at scratch\\_buffer (train.cu:41): 1 buffer of 4.0 MiB ...\n"
                    "- **fragmentation** (device 1): a pool keeps 1.9 GiB &lt;b&gt;\\|&lt;/b&gt;\n"),
            std::string::npos)
      << md;
}

// Issue #28: a helper's line is named with its caller, and advice that knows the line to change
// (an empty_cache() call) leads with that line instead of the site's.
TEST(ReportMarkdown, HelpersCallerAndTheLineToChange) {
  json r = report_with("alloc", "/p/train.py");
  json headline = {
      {"kind", "python"},
      {"function", "alloc"},
      {"file", "/p/train.py"},
      {"line", 6},
      {"user", true},
      {"text", "train.py:6 in alloc"},
      {"caller", {{"function", "main"}, {"file", "/p/train.py"}, {"line", 40}, {"text", "train.py:40 in main"}}}};
  r["leaks"][0]["headline"] = headline;
  json frame = {{"kind", "python"}, {"function", "step"}, {"file", "/p/train.py"}, {"line", 52}};
  r["advice"] =
      json::array({{{"kind", "cache_thrash"},
                    {"device", 0},
                    {"stack", json::array({frame})},
                    {"change_at", {{"call", "torch.cuda.empty_cache()"}, {"line", 34}, {"text", "train.py:34"}}},
                    {"message", "torch.cuda.empty_cache() at train.py:34 returns ..."}}});
  std::string md = report_markdown(r);
  EXPECT_NE(md.find("train.py:6 in alloc, called from train.py:40 in main"), std::string::npos) << md;
  EXPECT_NE(md.find("- **cache\\_thrash** (device 0) at train.py:34: torch.cuda.empty\\_cache() at train.py:34"),
            std::string::npos)
      << md;
}

TEST(ReportMarkdown, AnyJsonRendersWithoutThrowing) {
  for (const char *text : {"{}", "null", "[]", "5", R"({"run": null, "leaks": [null, 3], "devices": [null, {}]})",
                           R"({"leaks": [{"stack": [null, 3, {"line": "x"}]}], "oom": {"events": [{}]}})"}) {
    EXPECT_NO_THROW(report_markdown(json::parse(text))) << text;
  }
}

}  // namespace
}  // namespace gpuleak::output
