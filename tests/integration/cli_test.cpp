// The gpuleak command line on the integration programs: run, report, and bad input.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "process.h"

namespace gpuleak::test {
namespace {

std::map<std::string, std::string> cli_env() {
  return {{"LD_LIBRARY_PATH", GPULEAK_FAKE_CUDA_DIR}, {"GPULEAK_LIB", GPULEAK_SHIM_PATH}};
}

TEST(Cli, RunKeepsTheExitStatusAndWritesAReport) {
  std::string out = make_temp_dir("cli-run");
  Result r = run({GPULEAK_CLI_PATH, "run", "--out", out, "--", program("prog_exit_status")}, cli_env());
  EXPECT_EQ(r.exit_code, 7) << r.err;
  EXPECT_EQ(files_with_suffix(out, ".gpuleak").size(), 1u);
  EXPECT_EQ(files_with_suffix(out, ".report.json").size(), 1u) << r.err;
}

TEST(Cli, LeakyStaticProgramGetsALeakVerdictAtTheLeakingFunction) {
  std::string out = make_temp_dir("cli-leak");
  Result r = run({GPULEAK_CLI_PATH, "run", "--out", out, "--", program("prog_leaky_static"), "30"}, cli_env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto reports = files_with_suffix(out, ".report.json");
  ASSERT_EQ(reports.size(), 1u) << r.err;
  std::ifstream in(reports[0]);
  nlohmann::json report = nlohmann::json::parse(in);
  EXPECT_EQ(report["schema"], "gpuleak.report/1.3");
  EXPECT_EQ(report["verdict"], "leak") << r.err;
  ASSERT_FALSE(report["leaks"].empty());
  const auto &leak = report["leaks"][0];
  EXPECT_NEAR(leak["bytes_per_iteration"].get<double>(), 1 << 20, 1);
  EXPECT_EQ(leak["stack"][0]["function"], "cache_activation") << leak["stack"].dump();
  // The headline: the program's own line, file first (docs/report-format.md "headline").
  EXPECT_NE(r.err.find("leak: 1.0 MiB per iteration at leaky_loop.cpp:"), std::string::npos) << r.err;
  // ... with the program's line that called it (issue #28: a helper's caller).
  EXPECT_NE(r.err.find(" in cache_activation, called from leaky_loop.cpp:28 in main, 30 allocations"),
            std::string::npos)
      << r.err;
}

nlohmann::json run_and_load_report(const std::string &name, const std::vector<std::string> &args) {
  std::string out = make_temp_dir(name);
  std::vector<std::string> argv = {GPULEAK_CLI_PATH, "run", "--out", out, "--"};
  argv.insert(argv.end(), args.begin(), args.end());
  Result r = run(argv, cli_env());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto reports = files_with_suffix(out, ".report.json");
  if (reports.size() != 1u) {
    ADD_FAILURE() << "no report: " << r.err;
    return {};
  }
  std::ifstream in(reports[0]);
  return nlohmann::json::parse(in);
}

// Iterations from NVTX ranges: "step <i>" matches the default pattern, the nested "forward" does
// not, and the irregular temporaries leave no period for the automatic source to find.
TEST(Cli, NvtxRangesAreIterations) {
  nlohmann::json report = run_and_load_report("cli-nvtx", {program("prog_marked_loop"), "nvtx", "20"});
  EXPECT_EQ(report["iteration_source"], "nvtx");
  EXPECT_EQ(report["iterations"].size(), 20u);
  EXPECT_EQ(report["verdict"], "leak");
  ASSERT_FALSE(report["leaks"].empty());
  EXPECT_EQ(report["leaks"][0]["stack"][0]["function"], "cache_activation");
  EXPECT_NEAR(report["leaks"][0]["bytes_per_iteration"].get<double>(), 1 << 20, 1);
}

// Iterations from the C API, header-only: the program has no link-time dependency on gpuleak.
TEST(Cli, CApiMarksAreIterations) {
  nlohmann::json report = run_and_load_report("cli-api", {program("prog_marked_loop"), "api", "20"});
  EXPECT_EQ(report["iteration_source"], "api");
  EXPECT_EQ(report["iterations"].size(), 20u);
  EXPECT_EQ(report["iterations"][0]["loop"], "train");
  EXPECT_EQ(report["verdict"], "leak");
  Result plain = run({program("prog_marked_loop"), "api", "3"}, {{"LD_LIBRARY_PATH", GPULEAK_FAKE_CUDA_DIR}});
  EXPECT_EQ(plain.exit_code, 0) << "runs unchanged without the shim: " << plain.err;
}

// --torch per-tensor sets PyTorch's allocator for the program (seen here through the environment).
TEST(Cli, TorchPerTensorSetsTheAllocator) {
  std::string out = make_temp_dir("cli-torch");
  Result r = run({GPULEAK_CLI_PATH, "run", "--torch", "per-tensor", "--out", out, "--", "/bin/sh", "-c",
                  "echo $PYTORCH_CUDA_ALLOC_CONF"},
                 cli_env());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "backend:cudaMallocAsync\n");
  Result bad = run({GPULEAK_CLI_PATH, "run", "--torch", "fast", "--", "/bin/true"}, cli_env());
  EXPECT_EQ(bad.exit_code, 2);
}

// `gpuleak run python train.py --lr 0.1`: no `--` needed; from the first word that is not one of
// run's options on, every word is the command's, options that run also has included.
TEST(Cli, RunWithoutDashDashLeavesTheCommandItsOptions) {
  std::string out = make_temp_dir("cli-nodash");
  Result r = run({GPULEAK_CLI_PATH, "run", "--quiet", "--out", out, "/bin/sh", "-c", "echo \"$@\"", "sh", "--quiet",
                  "--out", "elsewhere", "--", "x"},
                 cli_env());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "--quiet --out elsewhere -- x\n");
  Result dashed =
      run({GPULEAK_CLI_PATH, "run", "--quiet", "--out", out, "--", "/bin/sh", "-c", "echo \"$@\"", "sh", "--quiet"},
          cli_env());
  EXPECT_EQ(dashed.exit_code, 0) << dashed.err;
  EXPECT_EQ(dashed.out, "--quiet\n");
  Result unknown = run({GPULEAK_CLI_PATH, "run", "--bogus", "/bin/true"}, cli_env());
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_EQ(unknown.err, "gpuleak: run: unknown option --bogus (see gpuleak run --help)\n");
  Result none = run({GPULEAK_CLI_PATH, "run", "--quiet"}, cli_env());
  EXPECT_EQ(none.exit_code, 2);
}

// `gpuleak run` analyzes the program's capture as soon as gpuleak's exit handler has closed it
// complete, while the process still ends (early_analysis.h): the report is the one `gpuleak report`
// makes of the same capture afterwards, byte for byte.
TEST(Cli, RunAnalyzesTheCaptureWhileTheProgramEndsAndReportsTheSame) {
  std::string out = make_temp_dir("cli-early");
  auto env = cli_env();
  env["GPULEAK_LOG"] = "debug";
  Result r = run({GPULEAK_CLI_PATH, "run", "--quiet", "--out", out, "--", program("prog_leaky_static"), "30"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("is complete; analyzing it while the program ends"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("was analyzed while its process ended"), std::string::npos) << r.err;
  auto captures = files_with_suffix(out, ".gpuleak");
  auto reports = files_with_suffix(out, ".report.json");
  ASSERT_EQ(captures.size(), 1u);
  ASSERT_EQ(reports.size(), 1u);
  std::ifstream in(reports[0]);
  std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Result again = run({GPULEAK_CLI_PATH, "report", "--format", "json", captures[0]}, {});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(written, again.out);
  EXPECT_EQ(nlohmann::json::parse(written)["verdict"], "leak");

  // GPULEAK_EARLY_ANALYSIS=0: after the program, as before; a bad value is a usage error.
  env["GPULEAK_EARLY_ANALYSIS"] = "0";
  Result late = run({GPULEAK_CLI_PATH, "run", "--quiet", "--out", out, "--", program("prog_leaky_static"), "30"}, env);
  EXPECT_EQ(late.exit_code, 0) << late.err;
  EXPECT_EQ(late.err.find("analyzing it while the program ends"), std::string::npos) << late.err;
  EXPECT_EQ(files_with_suffix(out, ".report.json").size(), 2u);
  env["GPULEAK_EARLY_ANALYSIS"] = "soon";
  env.erase("GPULEAK_LOG");
  Result bad = run({GPULEAK_CLI_PATH, "run", "--quiet", "--out", out, "--", program("prog_leaky_static"), "30"}, env);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err, "gpuleak: bad value GPULEAK_EARLY_ANALYSIS=\"soon\" (0 or 1)\n");
}

// A capture closed by exec (the next image goes on running) is not analyzed while the program
// runs: it has no final record; the report after the program still covers it.
TEST(Cli, RunLeavesAnExecsCaptureForAfterTheProgram) {
  std::string out = make_temp_dir("cli-early-exec");
  auto env = cli_env();
  env["GPULEAK_LOG"] = "debug";
  Result r =
      run({GPULEAK_CLI_PATH, "run", "--quiet", "--out", out, "--", program("prog_hostile"), "exec", "execv"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("analyzing it while the program ends"), std::string::npos) << r.err;
  EXPECT_EQ(files_with_suffix(out, ".report.json").size(), 1u) << r.err;
}

TEST(Cli, CorruptOrMissingCaptureIsOneLineAndExitTwo) {
  std::string dir = make_temp_dir("cli-bad");
  std::string garbage = dir + "/garbage.gpuleak";
  std::ofstream(garbage) << "this is not a capture";
  Result r = run({GPULEAK_CLI_PATH, "report", garbage}, {});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "gpuleak: " + garbage + ": not a gpuleak capture (bad magic)\n");
  Result missing = run({GPULEAK_CLI_PATH, "report", dir + "/nope.gpuleak"}, {});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(std::count(missing.err.begin(), missing.err.end(), '\n'), 1);
  Result flag = run({GPULEAK_CLI_PATH, "run", "--no-such-flag"}, {});
  EXPECT_EQ(flag.exit_code, 2);
}

}  // namespace
}  // namespace gpuleak::test
