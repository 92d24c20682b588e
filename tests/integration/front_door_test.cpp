// One front door (src/output/front_door.h): every command that reads a capture names a call site
// with the same id and the same headline, and honours the same options. A native program on the
// fake CUDA, read by report, trace, view, export and check.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "process.h"

namespace gpuleak::test {
namespace {

std::string read_text(const std::string &path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Captured {
  std::string dir, capture;
  nlohmann::json report;
};

Captured capture_of(const std::string &name, const std::vector<std::string> &argv) {
  Captured c;
  c.dir = make_temp_dir(name);
  Result r = run(argv, shim_env(c.dir));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto captures = files_with_suffix(c.dir, ".gpuleak");
  if (captures.size() != 1u) {
    ADD_FAILURE() << "no capture: " << r.err;
    return c;
  }
  c.capture = captures[0];
  Result rep = run({GPULEAK_CLI_PATH, "report", "--json", c.capture}, {});
  EXPECT_EQ(rep.exit_code, 0) << rep.err;
  c.report = nlohmann::json::parse(rep.out, nullptr, false);
  return c;
}

// The data `gpuleak view` spliced into its page.
nlohmann::json embedded_view(const std::string &html) {
  const std::string open = "id=\"gpuleak-data\">";
  size_t start = html.find(open);
  if (start == std::string::npos) return {};
  start += open.size();
  return nlohmann::json::parse(html.substr(start, html.find("</script>", start) - start), nullptr, false);
}

TEST(FrontDoor, ReportTraceViewExportAndCheckNameASiteAlike) {
  Captured c = capture_of("front-door-native", {program("prog_leaky_static"), "30"});
  ASSERT_TRUE(c.report.is_object());
  ASSERT_EQ(c.report["leaks"].size(), 1u) << c.report["leaks"].dump(1);
  const auto &leak = c.report["leaks"][0];
  const std::string id = leak["site_id"];
  const auto &h = leak["headline"];
  EXPECT_EQ(h["function"], "cache_activation") << h.dump();
  EXPECT_EQ(h["user"], true);
  EXPECT_EQ(h["text"].get<std::string>().rfind("leaky_loop.cpp:", 0), 0u) << h.dump();
  ASSERT_EQ(c.report["leak_groups"].size(), 1u);
  EXPECT_EQ(c.report["leak_groups"][0]["site_ids"], nlohmann::json::array({id}));
  // No process start in the stack: main() is the outermost frame.
  EXPECT_EQ(leak["stack"].back()["function"], "main") << leak["stack"].dump(1);

  // trace: the leak markers carry the id and the headline's label
  const std::string trace = c.dir + "/t.json";
  Result t = run({GPULEAK_CLI_PATH, "trace", "--quiet", "-o", trace, c.capture}, {});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  nlohmann::json events = nlohmann::json::parse(read_text(trace), nullptr, false);
  if (events.is_object()) events = events["traceEvents"];
  ASSERT_TRUE(events.is_array());
  std::set<std::string> marker_ids;
  for (const auto &e : events)
    if (e.value("cat", "") == "leak") {
      marker_ids.insert(e["args"]["site_id"].get<std::string>());
      EXPECT_NE(e["name"].get<std::string>().find("cache_activation (leaky_loop.cpp:"), std::string::npos) << e.dump();
    }
  EXPECT_EQ(marker_ids, std::set<std::string>{id});

  // view: the same id among its sites, with the same headline
  const std::string html = c.dir + "/v.html";
  Result v = run({GPULEAK_CLI_PATH, "view", "--quiet", "-o", html, c.capture}, {});
  ASSERT_EQ(v.exit_code, 0) << v.err;
  nlohmann::json doc = embedded_view(read_text(html));
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(doc["report"]["leaks"][0]["site_id"], id);
  const auto &ids = doc["view"]["sites"]["site_id"];
  auto at = std::find(ids.begin(), ids.end(), id);
  ASSERT_NE(at, ids.end());
  EXPECT_EQ(doc["view"]["sites"]["headline_text"][at - ids.begin()], h["text"]);

  // export: the folded stack of the leak ends at its innermost frame, rooted at main
  Result x = run({GPULEAK_CLI_PATH, "export", "--format", "collapsed", c.capture}, {});
  ASSERT_EQ(x.exit_code, 0) << x.err;
  EXPECT_NE(x.out.find("cuda:0;main (leaky_loop.cpp:"), std::string::npos) << x.out;
  EXPECT_EQ(x.out.find("_start"), std::string::npos) << x.out;

  // check: the finding names the headline
  const std::string report_path = c.dir + "/r.json";
  std::ofstream(report_path) << c.report.dump();
  Result k = run({GPULEAK_CLI_PATH, "check", report_path}, {});
  EXPECT_NE((k.out + k.err).find(h["text"].get<std::string>()), std::string::npos) << k.out << k.err;
}

// GPULEAK_ITERATION_RANGE and --user-code reach every reader, not only `report`.
TEST(FrontDoor, OptionsReachEveryReader) {
  // NVTX "step <i>" ranges: GPULEAK_ITERATION_RANGE is read when iterations come from NVTX.
  Captured c = capture_of("front-door-options", {program("prog_marked_loop"), "nvtx", "20"});
  ASSERT_FALSE(c.capture.empty());
  // --user-code (repeatable, one folder each: `--user-code DIR CAPTURE` leaves the capture alone)
  // and GPULEAK_USER_CODE are accepted by every reader.
  for (const char *cmd : {"report", "view", "trace", "export"}) {
    std::vector<std::string> argv = {GPULEAK_CLI_PATH, cmd,  "--user-code",        "/nowhere",
                                     c.capture,        "-o", c.dir + "/out-" + cmd};
    if (std::string(cmd) == "export") argv.insert(argv.begin() + 2, {"--format", "collapsed"});
    Result r = run(argv, {{"GPULEAK_USER_CODE", "/also/nowhere"}});
    EXPECT_EQ(r.exit_code, 0) << cmd << ": " << r.err;
  }
  // An invalid GPULEAK_ITERATION_RANGE is a warning from the analysis, whichever command reads.
  for (const char *cmd : {"report", "view", "trace"}) {
    Result r =
        run({GPULEAK_CLI_PATH, cmd, c.capture, "-o", c.dir + "/bad-" + cmd}, {{"GPULEAK_ITERATION_RANGE", "(("}});
    EXPECT_EQ(r.exit_code, 0) << cmd << ": " << r.err;
    EXPECT_NE(r.err.find("invalid iteration range pattern '(('"), std::string::npos)
        << cmd << " did not honour GPULEAK_ITERATION_RANGE: " << r.err;
  }
}

}  // namespace
}  // namespace gpuleak::test
