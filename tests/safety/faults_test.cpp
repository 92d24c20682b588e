// Fault injection: the same program with and without the shim, killed (SIGKILL, SIGSEGV, SIGTERM,
// abort) at random iterations. The program's output, exit status and files must be the same,
// and whatever capture it left must be readable (`gpuleak report` exits 0 or 1, never 2).
#include <random>

#include <fstream>
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

}  // namespace
}  // namespace gpuleak::test
