// GPU activity through the real shim and the fake CUPTI (tests/fake_cuda/cupti_fake.cpp): kernels,
// copies and memsets reach the capture with their launching thread and on the capture's clock,
// `gpuleak trace` draws them with flows, and a program that takes CUPTI for itself (as
// torch.profiler does) gets it, gpuleak's activity stopping there.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "process.h"

namespace gpuleak::test {
namespace {

using format::GpuActivityKind;
using nlohmann::json;

struct Kinds {
  int kernels = 0, copies = 0, memsets = 0;
};
Kinds kinds(const format::Capture &c) {
  Kinds k;
  for (const auto &r : c.gpu_activity) {
    k.kernels += r.kind == static_cast<uint8_t>(GpuActivityKind::kKernel);
    k.copies += r.kind == static_cast<uint8_t>(GpuActivityKind::kMemcpy);
    k.memsets += r.kind == static_cast<uint8_t>(GpuActivityKind::kMemset);
  }
  return k;
}

std::string read_file_text(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::map<std::string, std::string> cupti_env(const std::string &out) {
  auto env = shim_env(out);
  env["GPULEAK_CUPTI"] = "1";
  env["CUDA_INJECTION64_PATH"] = "";           // the preload points it at itself
  env["FAKE_CUPTI_RECORDS_PER_BUFFER"] = "4";  // buffers complete on the fake CUPTI's own thread
  return env;
}

TEST(GpuActivity, KernelsCopiesAndMemsetsReachTheCaptureWithTheirLaunch) {
  std::string out = make_temp_dir("gpu-work");
  Result r = run({program("prog_gpu_work"), "6"}, cupti_env(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("EXPECT kernels=12 copies=12 memsets=6"), std::string::npos) << r.out;
  format::Capture c = read_only_capture(out);
  EXPECT_GE(c.header.minor, 1);  // GPU activity records came with 1.1
  ASSERT_TRUE(c.stats.has_value());
  EXPECT_EQ(c.stats->cupti_state, 1u);
  EXPECT_EQ(count(c).allocs, 6);
  Kinds k = kinds(c);
  EXPECT_EQ(k.kernels, 12);
  EXPECT_EQ(k.copies, 12);
  EXPECT_EQ(k.memsets, 6);
  std::set<std::string> names;
  for (const auto &a : c.gpu_activity) {
    EXPECT_EQ(a.host_tid, c.header.pid) << "launched by the main thread";
    EXPECT_GT(a.host_ts_ns, c.header.monotonic_ns);
    EXPECT_LE(a.host_ts_ns, a.start_ns) << "launched before it ran";
    // On the capture's clock: the fake CUPTI's own clock is 1000 s ahead.
    EXPECT_LT(a.start_ns - c.header.monotonic_ns, 60'000'000'000ull);
    EXPECT_GE(a.end_ns, a.start_ns);
    EXPECT_EQ(a.stream, 7u);
    if (a.kind == static_cast<uint8_t>(GpuActivityKind::kKernel)) {
      names.insert(c.string(a.name_id));
      EXPECT_EQ(c.string(a.api_name_id), "cuLaunchKernel");
    }
    if (a.kind == static_cast<uint8_t>(GpuActivityKind::kMemset)) {
      EXPECT_EQ(a.bytes, 64u << 10);
    }
  }
  EXPECT_EQ(names.size(), 2u);
  EXPECT_EQ(names.count("void scale<float>(float*, int)"), 1u);
  EXPECT_EQ(names.count("evil\"kernel\\\x01\x1f\xff\xfe</script>"), 1u);

  // The timeline: kernel slices on the stream's row, one flow per launch, matched.
  std::string trace = out + "/gpu.trace.json";
  Result t = run({GPULEAK_CLI_PATH, "trace", files_with_suffix(out, ".gpuleak")[0], "-o", trace}, {});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  json events = json::parse(read_file_text(trace));
  std::map<int64_t, std::string> rows;
  int kernels = 0, starts = 0;
  std::multiset<uint64_t> s_ids, f_ids;
  for (const json &e : events) {
    if (e["ph"] == "M" && e["name"] == "thread_name") rows[e["tid"].get<int64_t>()] = e["args"]["name"];
    if (e["ph"] == "X" && e["cat"] == "gpu.kernel") ++kernels;
    if (e["ph"] == "s") s_ids.insert(e["id"].get<uint64_t>()), ++starts;
    if (e["ph"] == "f") f_ids.insert(e["id"].get<uint64_t>());
  }
  EXPECT_EQ(kernels, 12);
  EXPECT_EQ(starts, 30);
  EXPECT_EQ(s_ids, f_ids);
  bool stream_row = false;
  for (const auto &[tid, name] : rows) stream_row = stream_row || name == "GPU 0 / stream 7";
  EXPECT_TRUE(stream_row);
}

TEST(GpuActivity, TheProgramsOwnProfilerGetsCuptiAndGpuleaksActivityStops) {
  std::string out = make_temp_dir("gpu-yield");
  Result r = run({program("prog_gpu_work"), "6", "--profile", "3"}, cupti_env(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("profiler callbacks: ([0-9]+)"))) << r.out;
  EXPECT_EQ(std::stoi(m[1]), 12) << "3 iterations x 2 launches x (enter, exit)";
  format::Capture c = read_only_capture(out);
  ASSERT_TRUE(c.stats.has_value());
  EXPECT_EQ(c.stats->cupti_state, 4u);
  EXPECT_EQ(count(c).allocs, 6) << "capture goes on through the interposers";
  Kinds k = kinds(c);
  EXPECT_EQ(k.kernels, 6) << "activity of the first 3 iterations, flushed when the slot was given back";
  EXPECT_EQ(k.copies, 6);
  EXPECT_EQ(k.memsets, 3);
}

TEST(GpuActivity, OffWithGpuleakActivityZero) {
  std::string out = make_temp_dir("gpu-off");
  auto env = cupti_env(out);
  env["GPULEAK_ACTIVITY"] = "0";
  Result r = run({program("prog_gpu_work"), "3"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  format::Capture c = read_only_capture(out);
  ASSERT_TRUE(c.stats.has_value());
  EXPECT_EQ(c.stats->cupti_state, 1u);
  EXPECT_TRUE(c.gpu_activity.empty());
}

// GPULEAK_ACTIVITY_MB bounds the volume; what it leaves out is counted in kDropped records.
TEST(GpuActivity, CappedVolumeIsCountedNotSilent) {
  std::string out = make_temp_dir("gpu-cap");
  auto env = cupti_env(out);
  env["GPULEAK_ACTIVITY_MB"] = "1";
  env["FAKE_CUPTI_RECORDS_PER_BUFFER"] = "256";
  Result r = run({program("prog_gpu_work"), "3000", "--no-leak"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  format::Capture c = read_only_capture(out);
  Kinds k = kinds(c);
  uint64_t dropped = 0;
  for (const auto &a : c.gpu_activity)
    if (a.kind == static_cast<uint8_t>(GpuActivityKind::kDropped)) dropped += a.bytes;
  const uint64_t kept = static_cast<uint64_t>(k.kernels + k.copies + k.memsets);
  EXPECT_LE(kept * (sizeof(format::RecordHeader) + sizeof(format::GpuActivityRecord)), 1u << 20);
  EXPECT_GT(dropped, 0u);
  EXPECT_EQ(kept + dropped, 15000u);
  EXPECT_EQ(count(c).allocs, 3000) << "memory records are never dropped for activity";
}

}  // namespace
}  // namespace gpuleak::test
