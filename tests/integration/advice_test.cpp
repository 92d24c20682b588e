// Loop advice end to end: tests/programs/advice_loops.cpp under `gpuleak run` on the fake CUDA,
// each loop getting the finding of its kind at its own function, and the clean loop none.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "process.h"

namespace gpuleak::test {
namespace {

struct LoopRun {
  nlohmann::json report;
  std::string err;
};

LoopRun run_loop(const std::string &mode, std::map<std::string, std::string> env = {},
                 const std::vector<std::string> &flags = {}) {
  std::string out = make_temp_dir("advice-" + mode);
  env["LD_LIBRARY_PATH"] = GPULEAK_FAKE_CUDA_DIR;
  env["GPULEAK_LIB"] = GPULEAK_SHIM_PATH;
  // The fake CUDA's calls take microseconds and the loops' sleeps stretch on a loaded machine: the
  // least saving (2 % of the iteration) would make these tests depend on the load. It has unit
  // tests of its own (tests/unit/analysis/advice_test.cpp); here every finding is kept.
  env.emplace("GPULEAK_ADVICE_MIN_SAVING_SHARE", "0");
  Result r = run({GPULEAK_CLI_PATH, "run", "--out", out, "--", program("prog_advice_loops"), mode, "20"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto captures = files_with_suffix(out, ".gpuleak");
  auto reports = files_with_suffix(out, ".report.json");
  if (reports.size() != 1u || captures.size() != 1u) {
    ADD_FAILURE() << "no report: " << r.err;
    return {};
  }
  LoopRun result{nlohmann::json::parse(std::ifstream(reports[0])), r.err};
  if (!flags.empty()) {  // analyze the same capture again with `gpuleak report` flags
    std::vector<std::string> argv = {GPULEAK_CLI_PATH, "report", "--json", captures[0]};
    argv.insert(argv.end(), flags.begin(), flags.end());
    Result again = run(argv, env);
    EXPECT_EQ(again.exit_code, 0) << again.err;
    result.report = nlohmann::json::parse(again.out);
  }
  return result;
}

std::vector<nlohmann::json> of_kind(const nlohmann::json &report, const std::string &kind) {
  std::vector<nlohmann::json> out;
  for (const auto &a : report["advice"])
    if (a["kind"] == kind) out.push_back(a);
  return out;
}

TEST(Advice, CleanLoopGetsNoAdvice) {
  LoopRun r = run_loop("clean");
  EXPECT_EQ(r.report["iteration_source"], "api");
  EXPECT_EQ(r.report["iterations"].size(), 20u);
  EXPECT_EQ(r.report["advice"], nlohmann::json::array()) << r.report["advice"].dump(2);
  EXPECT_EQ(r.err.find("  advice ("), std::string::npos) << r.err;
}

TEST(Advice, ChurnAtTheScratchBuffer) {
  LoopRun r = run_loop("churn");
  auto churn = of_kind(r.report, "churn");
  ASSERT_EQ(churn.size(), 1u) << r.report["advice"].dump(2);
  EXPECT_EQ(churn[0]["stack"][0]["function"], "scratch_buffer") << churn[0]["stack"].dump();
  EXPECT_EQ(churn[0]["evidence"]["allocs_per_iteration"], 1);
  EXPECT_EQ(churn[0]["evidence"]["bytes_per_iteration"], 4 << 20);
  EXPECT_GE(churn[0]["evidence"]["iterations_with_pattern"].get<int>(), 17);
  EXPECT_NE(r.err.find("advice (churn) at advice_loops.cpp:"), std::string::npos) << r.err;
  // the helper with the line of main() that called it (issue #28)
  EXPECT_NE(r.err.find(" in scratch_buffer, called from advice_loops.cpp:"), std::string::npos) << r.err;
  EXPECT_TRUE(of_kind(r.report, "cache_thrash").empty());
  EXPECT_TRUE(of_kind(r.report, "late_release").empty());
}

// With synchronous calls as slow as on a GPU, the time shows: churn's cost, and serialization.
TEST(Advice, SlowSynchronousCallsShowTheirTime) {
  LoopRun r = run_loop("churn", {{"FAKE_CUDA_SYNC_LATENCY_US", "400"}});
  auto churn = of_kind(r.report, "churn");
  ASSERT_EQ(churn.size(), 1u) << r.report["advice"].dump(2);
  EXPECT_GE(churn[0]["evidence"]["alloc_time_ns_per_iteration"].get<double>(), 400'000);
  EXPECT_GE(churn[0]["saving"]["time_ns_per_iteration"].get<double>(), 800'000);
  auto serial = of_kind(r.report, "serialization");
  ASSERT_EQ(serial.size(), 1u) << r.report["advice"].dump(2);
  EXPECT_GE(serial[0]["evidence"]["sync_share"].get<double>(), 0.1);
  // The threshold is the user's: with --advice-serialization-min-share 1 nothing is serialized.
  LoopRun strict = run_loop("churn", {{"FAKE_CUDA_SYNC_LATENCY_US", "400"}}, {"--advice-serialization-min-share", "1"});
  EXPECT_TRUE(of_kind(strict.report, "serialization").empty()) << strict.report["advice"].dump(2);
  EXPECT_EQ(of_kind(strict.report, "churn").size(), 1u);
}

// Under an allocator switch gpuleak made itself (gpuleak run --cupy per-array: every array its own
// cudaMalloc), the calls' count and waiting are gpuleak's doing: no churn or serialization advice
// blames the program for them (issue #27).
TEST(Advice, NoAdviceAboutTheCostOfGpuleaksOwnAllocatorSwitch) {
  for (const auto &[name, value] : std::vector<std::pair<std::string, std::string>>{
           {"GPULEAK_CUPY", "per-array"}, {"GPULEAK_JAX", "per-buffer"}, {"GPULEAK_TORCH", "no-caching"}}) {
    LoopRun r = run_loop("churn", {{"FAKE_CUDA_SYNC_LATENCY_US", "400"}, {name, value}});
    EXPECT_TRUE(of_kind(r.report, "serialization").empty()) << name << "\n" << r.report["advice"].dump(2);
    EXPECT_TRUE(of_kind(r.report, "churn").empty()) << name << "\n" << r.report["advice"].dump(2);
    EXPECT_EQ(r.err.find("Synchronous allocation calls"), std::string::npos) << r.err;
  }
}

// The frees carry no stack: the finding names where the released blocks are allocated again.
TEST(Advice, CacheThrashAtTheRefill) {
  LoopRun r = run_loop("thrash");
  auto thrash = of_kind(r.report, "cache_thrash");
  ASSERT_EQ(thrash.size(), 1u) << r.report["advice"].dump(2);
  bool named = false;  // frame 0, or frame 1 when the helper that calls cudaMalloc is not inlined
  for (size_t f = 0; f < 2 && f < thrash[0]["stack"].size(); ++f)
    named |= thrash[0]["stack"][f]["function"] == "cache_refill";
  EXPECT_TRUE(named) << thrash[0]["stack"].dump();
  EXPECT_EQ(thrash[0]["evidence"]["blocks_freed_per_iteration"], 8);
  EXPECT_EQ(thrash[0]["evidence"]["bytes_freed_per_iteration"], 32 << 20);
  EXPECT_TRUE(of_kind(r.report, "churn").empty()) << r.report["advice"].dump(2);
}

TEST(Advice, LateReleaseAtTheActivation) {
  LoopRun r = run_loop("late");
  auto late = of_kind(r.report, "late_release");
  ASSERT_EQ(late.size(), 1u) << r.report["advice"].dump(2);
  EXPECT_EQ(late[0]["stack"][0]["function"], "activation") << late[0]["stack"].dump();
  EXPECT_EQ(late[0]["evidence"]["max_lag_iterations"], 1);
  EXPECT_EQ(late[0]["saving"]["peak_bytes"], 8 << 20);
  EXPECT_EQ(late[0]["evidence"]["steady_peak_bytes"], 28 << 20);  // weights, input, two activations
  EXPECT_EQ(r.report["verdict"], "clean");
  // A bad variable costs one warning line, not the report.
  LoopRun bad = run_loop("late", {{"GPULEAK_ADVICE_LATE_MAX_LAG", "soon"}});
  EXPECT_EQ(of_kind(bad.report, "late_release").size(), 1u) << bad.err;
  EXPECT_NE(bad.err.find("ignoring GPULEAK_ADVICE_LATE_MAX_LAG='soon'"), std::string::npos) << bad.err;
  // GPULEAK_ADVICE=0 (read by `gpuleak run` too) turns the findings off.
  LoopRun off = run_loop("late", {{"GPULEAK_ADVICE", "0"}});
  EXPECT_EQ(off.report["advice"], nlohmann::json::array());
}

// Reserved far above live: the fake pools keep what they held (FAKE_CUDA_POOL_KEEP=1) and the fake
// NVML reports the fake driver's usage (FAKE_NVML_FOLLOW_DRIVER=1), sampled every 20 ms by the
// shim's sampler thread.
std::map<std::string, std::string> pool_env() {
  return {{"FAKE_CUDA_POOL_KEEP", "1"},
          {"FAKE_NVML_FOLLOW_DRIVER", "1"},
          {"FAKE_NVML_PROCESS_BYTES", std::to_string(300 << 20)},
          {"GPULEAK_NVML_INTERVAL_MS", "20"}};
}

std::vector<nlohmann::json> reserve_findings(const nlohmann::json &report) {
  std::vector<nlohmann::json> out;
  for (const auto &a : of_kind(report, "fragmentation"))
    if (a["site_id"].is_null()) out.push_back(a);
  return out;
}

TEST(Advice, PoolKeepingAOneOffBurstIsReservedFarAboveLive) {
  LoopRun r = run_loop("pool-reserve", pool_env());
  auto found = reserve_findings(r.report);
  ASSERT_EQ(found.size(), 1u) << r.report["advice"].dump(2) << r.err;
  const auto &e = found[0]["evidence"];
  EXPECT_EQ(e["baseline_bytes"], 300 << 20) << e.dump();
  EXPECT_GE(e["reserve_bytes"].get<double>(), 512 << 20) << e.dump();
  EXPECT_LE(e["window_peak_bytes"].get<double>(), 16 << 20) << e.dump();  // weights, input, one step
  EXPECT_GE(e["samples_count"].get<int>(), 3) << e.dump();
  EXPECT_GE(found[0]["saving"]["bytes"].get<double>(), 496 << 20);
  EXPECT_NE(r.err.find("advice (fragmentation): For "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cudaMemPoolTrimTo"), std::string::npos) << r.err;
  // The same capture, with a threshold above the excess: nothing.
  LoopRun strict = run_loop("pool-reserve", pool_env(), {"--advice-reserve-min-mb", "1024"});
  EXPECT_TRUE(reserve_findings(strict.report).empty()) << strict.report["advice"].dump(2);
}

TEST(Advice, PoolTrimmedAfterTheBurstGetsNoReserveFinding) {
  LoopRun r = run_loop("pool-reserve-fixed", pool_env());
  // (Churn of the 4 MiB may be reported or not: the fake's stream-ordered calls cost more than
  // 20 us each on a loaded machine.)
  EXPECT_TRUE(of_kind(r.report, "fragmentation").empty()) << r.report["advice"].dump(2);
  // Without samples (GPULEAK_NVML_INTERVAL_MS=0) the untrimmed pool gets none either: the exit
  // reading alone cannot say what was kept.
  auto env = pool_env();
  env["GPULEAK_NVML_INTERVAL_MS"] = "0";
  LoopRun exit_only = run_loop("pool-reserve", env);
  EXPECT_TRUE(reserve_findings(exit_only.report).empty()) << exit_only.report["advice"].dump(2);
}

}  // namespace
}  // namespace gpuleak::test
