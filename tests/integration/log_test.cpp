// GPULEAK_LOG and GPULEAK_LOG_FILE (src/log/log.h) in the profiled process and in the CLI: the
// default says nothing new, debug says how each hook was bound and what the writer did, trace adds
// each writer flush, a file takes the lines instead of stderr, and a bad level is one warning.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "process.h"

namespace gpuleak::test {
namespace {

std::string read_text(const std::string &path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool has(const std::string &text, const std::string &what) { return text.find(what) != std::string::npos; }

TEST(Log, DefaultLevelAddsNoLines) {
  std::string out = make_temp_dir("log-default");
  Result r = run({program("prog_leaky_static"), "5"}, shim_env(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(has(r.err, "[debug]")) << r.err;
  EXPECT_FALSE(has(r.err, "hook ")) << r.err;
}

TEST(Log, DebugToAFileShowsHooksAndTheCaptureAndLeavesStderrAlone) {
  std::string out = make_temp_dir("log-debug");
  std::string file = out + "/gpuleak.log";
  auto env = shim_env(out);
  env["GPULEAK_LOG"] = "debug";
  env["GPULEAK_LOG_FILE"] = file;
  Result r = run({program("prog_leaky_static"), "5"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string log = read_text(file);
  EXPECT_TRUE(has(log, "debug: preload: pid ")) << log;
  EXPECT_TRUE(has(log, "hook cuMemAlloc_v2 via cuGetProcAddress")) << log;
  EXPECT_TRUE(has(log, "started by the first allocation; writer thread running")) << log;
  EXPECT_TRUE(has(log, " closed: ")) << log;
  EXPECT_FALSE(has(log, "writer: flushed")) << "per-flush lines are trace only:\n" << log;
  EXPECT_FALSE(has(r.err, "[debug]")) << r.err;
}

TEST(Log, TraceAddsEachWriterFlushOnStderr) {
  std::string out = make_temp_dir("log-trace");
  auto env = shim_env(out);
  env["GPULEAK_LOG"] = "trace";
  Result r = run({program("prog_leaky_static"), "5"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.err, "gpuleak: [debug] hook cuMemAlloc_v2")) << r.err;
  EXPECT_TRUE(has(r.err, "gpuleak: [trace] writer: flushed ")) << r.err;
}

TEST(Log, OffAndABadLevel) {
  std::string out = make_temp_dir("log-off");
  auto env = shim_env(out);
  env["GPULEAK_LOG"] = "off";
  env["GPULEAK_QUIET"] = "1";
  Result quiet = run({program("prog_leaky_static"), "5"}, env);
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_FALSE(has(quiet.err, "[debug]")) << quiet.err;
  env["GPULEAK_LOG"] = "loud";
  Result bad = run({GPULEAK_CLI_PATH, "run", "--quiet", "--out", out, "--", "/bin/true"}, env);
  EXPECT_EQ(bad.exit_code, 0) << bad.err;
  EXPECT_TRUE(has(bad.err, "gpuleak: warning: GPULEAK_LOG=loud is not one of off, error, warn, info, debug, trace"))
      << bad.err;
}

TEST(Log, CliDebugNamesTheShimAndTheCommand) {
  std::string out = make_temp_dir("log-cli");
  Result r =
      run({GPULEAK_CLI_PATH, "run", "--quiet", "--out", out, program("prog_leaky_static"), "3"},
          {{"LD_LIBRARY_PATH", GPULEAK_FAKE_CUDA_DIR}, {"GPULEAK_LIB", GPULEAK_SHIM_PATH}, {"GPULEAK_LOG", "debug"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.err, std::string("gpuleak: [debug] run: LD_PRELOAD=") + GPULEAK_SHIM_PATH)) << r.err;
  EXPECT_TRUE(has(r.err, "exited with status 0; 1 new captures")) << r.err;
}

}  // namespace
}  // namespace gpuleak::test
