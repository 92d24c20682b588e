// Fault injection: the same program with and without the shim, killed (SIGKILL, SIGSEGV, SIGTERM,
// abort) at random iterations. The program's output, exit status and files must be the same,
// and whatever capture it left must be readable (`gpuleak report` exits 0 or 1, never 2).
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include <gtest/gtest.h>

#include "process.h"

namespace gpuleak::test {
namespace {

std::string slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Faults, RandomDeathsChangeNothingTheProgramCanSeeAndLeaveReadableCaptures) {
  unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> iteration(0, 19);
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::map<std::string, std::string> plain_env = {{"LD_PRELOAD", ""}};
  for (const char *kind : {"kill", "segv", "term", "abort", "none"}) {
    for (int round = 0; round < 3; ++round) {
      int at = iteration(rng);
      std::string label = std::string(kind) + " at " + std::to_string(at);
      std::string dir = make_temp_dir("fault");
      Result plain = run({program("prog_hostile"), "fault", kind, std::to_string(at), dir + "/plain.txt"}, plain_env);
      auto env = shim_env(dir + "/out");
      env["GPULEAK_QUIET"] = "1";
      Result shimmed = run({program("prog_hostile"), "fault", kind, std::to_string(at), dir + "/shimmed.txt"}, env);
      EXPECT_EQ(shimmed.exit_code, plain.exit_code) << label;
      EXPECT_EQ(shimmed.signal, plain.signal) << label;
      EXPECT_EQ(shimmed.out, plain.out) << label;
      EXPECT_EQ(shimmed.err, plain.err) << label;
      EXPECT_EQ(slurp(dir + "/shimmed.txt"), slurp(dir + "/plain.txt")) << label;
      for (const std::string &capture : files_with_suffix(dir + "/out", ".gpuleak")) {
        Result report = run({GPULEAK_CLI_PATH, "report", "--quiet", capture}, {});
        EXPECT_TRUE(report.exit_code == 0 || report.exit_code == 1) << label << ": " << report.err;
      }
    }
  }
}

// Killed from outside at a random moment (anywhere: in a hook, in the writer's write, in exit):
// what the program printed and wrote is a prefix of what it prints and writes when left alone,
// and the capture reads, truncated or not.
TEST(Faults, KilledFromOutsideAtRandomMomentsTheCaptureStillReads) {
  unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> delay_ms(2, 70);
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::string full_out, full_file;
  for (int i = 0; i < 20; ++i) {
    full_out += "iteration " + std::to_string(i) + "\n";
    full_file += "line " + std::to_string(i) + "\n";
  }
  for (const char *sig : {"KILL", "TERM"}) {
    for (int round = 0; round < 4; ++round) {
      int ms = delay_ms(rng);
      std::string label = std::string("SIG") + sig + " after " + std::to_string(ms) + " ms";
      std::string dir = make_temp_dir("outside");
      auto env = shim_env(dir + "/out");
      env["GPULEAK_QUIET"] = "1";
      char delay[16];
      std::snprintf(delay, sizeof delay, "0.%03d", ms);
      Result r =
          run({"timeout", "-s", sig, delay, program("prog_hostile"), "fault", "none", "99", dir + "/own.txt"}, env);
      std::string file = slurp(dir + "/own.txt");
      EXPECT_EQ(full_out.compare(0, r.out.size(), r.out), 0) << label << ": " << r.out;
      EXPECT_EQ(full_file.compare(0, file.size(), file), 0) << label << ": " << file;
      if (r.exit_code == 0) {
        EXPECT_EQ(file, full_file) << label;
      }
      for (const std::string &capture : files_with_suffix(dir + "/out", ".gpuleak")) {
        Result report = run({GPULEAK_CLI_PATH, "report", "--quiet", capture}, {});
        EXPECT_TRUE(report.exit_code == 0 || report.exit_code == 1) << label << ": " << report.err;
      }
    }
  }
}

}  // namespace
}  // namespace gpuleak::test
