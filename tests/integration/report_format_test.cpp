// `gpuleak report --format text|json|markdown` on a real capture of the leaky program.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "process.h"

namespace gpuleak::test {
namespace {

std::map<std::string, std::string> cli_env() {
  return {{"LD_LIBRARY_PATH", GPULEAK_FAKE_CUDA_DIR}, {"GPULEAK_LIB", GPULEAK_SHIM_PATH}};
}

// One capture of prog_leaky_static (30 iterations of a 1 MiB leak), made once for every test.
const std::string &leaky_capture() {
  static const std::string path = [] {
    std::string out = make_temp_dir("report-format");
    Result r = run({GPULEAK_CLI_PATH, "run", "--no-report", "--out", out, "--", program("prog_leaky_static"), "30"},
                   cli_env());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto captures = files_with_suffix(out, ".gpuleak");
    return captures.size() == 1 ? captures[0] : std::string();
  }();
  return path;
}

TEST(ReportFormat, JsonIsTheSameAsTheJsonFlag) {
  ASSERT_FALSE(leaky_capture().empty());
  Result a = run({GPULEAK_CLI_PATH, "report", "--format", "json", leaky_capture()}, {});
  Result b = run({GPULEAK_CLI_PATH, "report", "--json", leaky_capture()}, {});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  nlohmann::json ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  ja["run"]["duration_ns"] = jb["run"]["duration_ns"];
  EXPECT_EQ(ja, jb);
  EXPECT_EQ(ja["verdict"], "leak");
}

TEST(ReportFormat, MarkdownHasTheLeakRowWithItsSourceLine) {
  ASSERT_FALSE(leaky_capture().empty());
  Result r = run({GPULEAK_CLI_PATH, "report", "--format", "markdown", leaky_capture()}, {});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("# gpuleak report: prog\\_leaky\\_static (pid ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("**Verdict: leak**"), std::string::npos) << r.out;
  // The leaks table: header, separator, then the leak at its headline, leaky_loop.cpp:N in cache_activation,
  // with the line of main() that called it.
  std::istringstream in(r.out);
  std::string line, row;
  bool in_leaks = false;
  while (std::getline(in, line)) {
    if (line == "## Leaks") in_leaks = true;
    if (in_leaks && line.find("| leaky\\_loop.cpp:") != std::string::npos &&
        line.find(" in cache\\_activation, called from leaky\\_loop.cpp:28 in main |") != std::string::npos)
      row = line;
  }
  ASSERT_FALSE(row.empty()) << r.out;
  EXPECT_NE(row.find("| 1.0 MiB/iteration | 30.0 MiB in 30 |"), std::string::npos) << row;
  EXPECT_NE(r.out.find("## Out of memory\n\nNo allocation failed."), std::string::npos) << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST(ReportFormat, TextIsTheSummaryOnStdoutAndMarkdownGoesToOutput) {
  ASSERT_FALSE(leaky_capture().empty());
  Result text = run({GPULEAK_CLI_PATH, "report", "--format", "text", leaky_capture()}, {});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("verdict leak"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("leak: 1.0 MiB per iteration at leaky_loop.cpp:"), std::string::npos) << text.out;
  std::string dir = make_temp_dir("report-format-o");
  Result md = run({GPULEAK_CLI_PATH, "report", "--format", "markdown", "-o", dir + "/r.md", leaky_capture()}, {});
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_TRUE(md.out.empty());
  std::ifstream f(dir + "/r.md");
  std::stringstream body;
  body << f.rdbuf();
  EXPECT_EQ(body.str().rfind("# gpuleak report: ", 0), 0u) << body.str();
}

TEST(ReportFormat, BadFormatIsOneLineAndExitTwo) {
  ASSERT_FALSE(leaky_capture().empty());
  Result bad = run({GPULEAK_CLI_PATH, "report", "--format", "yaml", leaky_capture()}, {});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
  Result clash = run({GPULEAK_CLI_PATH, "report", "--json", "--format", "markdown", leaky_capture()}, {});
  EXPECT_EQ(clash.exit_code, 2);
  EXPECT_EQ(clash.err, "gpuleak: report: --json and --format markdown disagree\n");
}

}  // namespace
}  // namespace gpuleak::test
