// NVML reconciliation at exit, on the fake libnvidia-ml.so.1 (tests/fake_cuda/fake_nvml.cpp): the
// DeviceUsage record, the report's nvml_used_bytes / untracked_bytes, and every NVML failure
// leaving the program and its capture untouched.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "process.h"

namespace gpuleak::test {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

struct Outcome {
  Result run;
  format::Capture capture;
  nlohmann::json report;
  std::string log;  // the fake NVML's calls
};

Outcome leaky_under_nvml(const std::string &name, std::map<std::string, std::string> extra) {
  Outcome o;
  std::string out = make_temp_dir(name);
  auto env = shim_env(out);
  env["FAKE_NVML_PROCESS_BYTES"] = std::to_string(500 * kMiB);
  env["FAKE_NVML_LOG"] = out + "/nvml.log";
  for (auto &[k, v] : extra) env[k] = v;
  o.run = run({program("prog_leaky_static"), "10"}, env);
  o.capture = read_only_capture(out);
  auto captures = files_with_suffix(out, ".gpuleak");
  if (captures.size() == 1) {
    Result r = run({GPULEAK_CLI_PATH, "report", "--json", captures[0]}, {});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    o.report = nlohmann::json::parse(r.out, nullptr, false);
  }
  std::ifstream log(out + "/nvml.log");
  std::stringstream s;
  s << log.rdbuf();
  o.log = s.str();
  return o;
}

// The readings taken at exit (the writer thread's periodic samples, if the run lasted long enough
// for one, are not).
std::vector<format::DeviceUsage> at_exit(const format::Capture &c) {
  std::vector<format::DeviceUsage> out;
  for (const auto &u : c.device_usage)
    if (u.flags & format::kUsageAtExit) out.push_back(u);
  return out;
}

TEST(Nvml, ProcessUsageAndTheUntrackedDifferenceReachTheReport) {
  Outcome o = leaky_under_nvml("nvml-ok", {});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  EXPECT_GE(o.capture.header.minor, 1u);  // DeviceUsage records came with 1.1
  ASSERT_EQ(at_exit(o.capture).size(), 1u) << o.log;
  const auto u = at_exit(o.capture)[0];
  EXPECT_EQ(u.device, 0);
  EXPECT_EQ(u.process_used_bytes, 500 * kMiB);
  EXPECT_EQ(u.device_used_bytes, 623 * kMiB);
  EXPECT_EQ(u.device_total_bytes, 1024 * kMiB);
  EXPECT_EQ(u.tracked_live_bytes, 10 * kMiB);  // the program never frees its 10 cached MiB
  EXPECT_EQ(u.flags, 3u);
  EXPECT_NE(o.log.find("nvmlDeviceGetHandleByPciBusId_v2"), std::string::npos) << o.log;
  EXPECT_NE(o.log.find("nvmlDeviceGetComputeRunningProcesses_v3"), std::string::npos) << o.log;
  EXPECT_NE(o.log.find("nvmlShutdown"), std::string::npos) << o.log;
  ASSERT_TRUE(o.report.is_object());
  const auto &d = o.report["devices"][0];
  EXPECT_EQ(d["nvml_used_bytes"], 500 * kMiB);
  EXPECT_EQ(d["untracked_bytes"], 490 * kMiB);
  EXPECT_EQ(d["nvml_device_used_bytes"], 623 * kMiB);
}

TEST(Nvml, InitFailureWritesNoRecordAndChangesNothingElse) {
  Outcome o = leaky_under_nvml("nvml-init", {{"FAKE_NVML_FAIL", "init"}});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  EXPECT_TRUE(o.capture.device_usage.empty());
  EXPECT_NE(o.log.find("nvmlInit_v2"), std::string::npos);
  EXPECT_EQ(o.log.find("nvmlDeviceGetMemoryInfo"), std::string::npos) << o.log;
  ASSERT_TRUE(o.report.is_object());
  EXPECT_TRUE(o.report["devices"][0]["nvml_used_bytes"].is_null());
  EXPECT_TRUE(o.report["devices"][0]["untracked_bytes"].is_null());
  EXPECT_EQ(o.report["verdict"], "leak");
  ASSERT_TRUE(o.capture.stats.has_value());
  EXPECT_EQ(o.capture.stats->final_record, 1u);
}

TEST(Nvml, MemoryQueryFailureWritesNoRecord) {
  Outcome o = leaky_under_nvml("nvml-memory", {{"FAKE_NVML_FAIL", "memory"}});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  EXPECT_TRUE(o.capture.device_usage.empty());
  EXPECT_NE(o.log.find("nvmlShutdown"), std::string::npos) << o.log;
}

TEST(Nvml, ProcessNotListedKeepsTheDeviceViewOnly) {
  Outcome o = leaky_under_nvml("nvml-unlisted", {{"FAKE_NVML_FAIL", "not_listed"}});
  ASSERT_EQ(at_exit(o.capture).size(), 1u);
  EXPECT_EQ(at_exit(o.capture)[0].flags, 2u);
  ASSERT_TRUE(o.report.is_object());
  EXPECT_TRUE(o.report["devices"][0]["nvml_used_bytes"].is_null());
  EXPECT_EQ(o.report["devices"][0]["nvml_device_used_bytes"], 623 * kMiB);
}

// While the capture runs the writer thread samples NVML (GPULEAK_NVML_INTERVAL_MS) through one
// session, each sample next to the live bytes gpuleak counted then; 0 keeps the exit reading only.
TEST(Nvml, PeriodicSamplesWhileTheCaptureRuns) {
  Outcome o = leaky_under_nvml("nvml-samples", {{"GPULEAK_NVML_INTERVAL_MS", "10"}, {"PROG_SLEEP_MS", "300"}});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  size_t samples = 0;
  for (const auto &u : o.capture.device_usage) {
    if (!(u.flags & format::kUsageSample)) continue;
    ++samples;
    EXPECT_EQ(u.flags, format::kUsageSample | format::kUsageProcessKnown);
    EXPECT_EQ(u.process_used_bytes, 500 * kMiB);
    EXPECT_LE(u.tracked_live_bytes, 14 * kMiB);  // at most 10 kept and one 4 MiB temporary
  }
  EXPECT_GE(samples, 5u) << o.log;
  EXPECT_EQ(at_exit(o.capture).size(), 1u);
  // One nvmlInit for all the samples, one for the exit reading.
  size_t inits = 0;
  for (size_t p = o.log.find("nvmlInit_v2"); p != std::string::npos; p = o.log.find("nvmlInit_v2", p + 1)) ++inits;
  EXPECT_EQ(inits, 2u) << o.log;
  EXPECT_EQ(o.report["devices"][0]["nvml_used_bytes"], 500 * kMiB);

  Outcome exit_only = leaky_under_nvml("nvml-exit-only", {{"GPULEAK_NVML_INTERVAL_MS", "0"}, {"PROG_SLEEP_MS", "300"}});
  EXPECT_EQ(exit_only.capture.device_usage.size(), 1u) << exit_only.log;
}

TEST(Nvml, TurnedOffWithGpuleakNvml0) {
  Outcome o = leaky_under_nvml("nvml-off", {{"GPULEAK_NVML", "0"}});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  EXPECT_TRUE(o.capture.device_usage.empty());
  EXPECT_TRUE(o.log.empty()) << o.log;
}

}  // namespace
}  // namespace gpuleak::test
