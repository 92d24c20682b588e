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

TEST(Nvml, ProcessUsageAndTheUntrackedDifferenceReachTheReport) {
  Outcome o = leaky_under_nvml("nvml-ok", {});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  EXPECT_EQ(o.capture.header.minor, 1u);
  ASSERT_EQ(o.capture.device_usage.size(), 1u) << o.log;
  const auto &u = o.capture.device_usage[0];
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
  ASSERT_EQ(o.capture.device_usage.size(), 1u);
  EXPECT_EQ(o.capture.device_usage[0].flags, 2u);
  ASSERT_TRUE(o.report.is_object());
  EXPECT_TRUE(o.report["devices"][0]["nvml_used_bytes"].is_null());
  EXPECT_EQ(o.report["devices"][0]["nvml_device_used_bytes"], 623 * kMiB);
}

TEST(Nvml, TurnedOffWithGpuleakNvml0) {
  Outcome o = leaky_under_nvml("nvml-off", {{"GPULEAK_NVML", "0"}});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  EXPECT_TRUE(o.capture.device_usage.empty());
  EXPECT_TRUE(o.log.empty()) << o.log;
}

}  // namespace
}  // namespace gpuleak::test
