// A framework allocator's blocks end to end (capture format 1.3): tests/programs/pool_blocks.cpp
// reports its blocks through gpuleak_pool_block, as the PyTorch adapter does, under `gpuleak run`
// on the fake CUDA. The leak is the kept tensors' site, the segments are containers, and the device
// bytes are the segments' alone.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "format/capture_format.h"
#include "process.h"

namespace gpuleak::test {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

struct PoolRun {
  nlohmann::json report;
  std::string err;
  format::Capture capture;
  std::string capture_path;
};

PoolRun run_pool(const std::string &mode) {
  std::string out = make_temp_dir("pool-blocks-" + mode);
  std::map<std::string, std::string> env{{"LD_LIBRARY_PATH", GPULEAK_FAKE_CUDA_DIR},
                                         {"GPULEAK_LIB", GPULEAK_SHIM_PATH}};
  Result r = run({GPULEAK_CLI_PATH, "run", "--out", out, "--", program("prog_pool_blocks"), mode, "40"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto reports = files_with_suffix(out, ".report.json");
  if (reports.size() != 1u) {
    ADD_FAILURE() << "no report: " << r.err;
    return {};
  }
  auto captures = files_with_suffix(out, ".gpuleak");
  return PoolRun{nlohmann::json::parse(std::ifstream(reports[0])), r.err, read_only_capture(out),
                 captures.empty() ? std::string() : captures[0]};
}

std::string innermost(const nlohmann::json &entry) {
  const auto &stack = entry["stack"];
  return stack.is_array() && !stack.empty() && stack[0]["function"].is_string()
             ? stack[0]["function"].get<std::string>()
             : std::string();
}

TEST(PoolBlocks, CaptureHoldsBlocksAndTheTracker) {
  PoolRun r = run_pool("leak");
  EXPECT_GE(r.capture.header.minor, 3);  // kind pool_block came with 1.3
  int blocks = 0, block_frees = 0;
  for (const auto &m : r.capture.memory) {
    if (m.kind != static_cast<uint8_t>(format::Kind::kPoolBlock)) continue;
    EXPECT_EQ(m.api, static_cast<uint16_t>(format::Api::torchCachingAllocator));
    EXPECT_TRUE(m.flags & format::kFlagUntimed);
    EXPECT_EQ(m.device, 0);
    if (m.op == static_cast<uint8_t>(format::Op::kAlloc)) {
      ++blocks;
      EXPECT_NE(m.stack_id, 0u);
    } else {
      ++block_frees;
      EXPECT_FALSE(m.flags & format::kFlagUnknownPointer);
      EXPECT_EQ(m.size, 2 * kMiB);  // from the live table
    }
  }
  EXPECT_EQ(blocks, 40 + 40 * 3);
  EXPECT_EQ(block_frees, 40 * 3);
  ASSERT_EQ(r.capture.pool_trackers.size(), 1u);
  EXPECT_EQ(r.capture.pool_trackers[0].framework, 1);
  EXPECT_EQ(r.capture.pool_trackers[0].description, "test allocator (pool_blocks.cpp)");
}

TEST(PoolBlocks, LeakIsTheKeptTensorsNotTheSegments) {
  PoolRun r = run_pool("leak");
  const auto &rep = r.report;
  EXPECT_EQ(rep["verdict"], "leak");
  EXPECT_EQ(rep["iteration_source"], "api");
  ASSERT_EQ(rep["leaks"].size(), 1u) << rep["leaks"].dump(2);
  const auto &leak = rep["leaks"][0];
  EXPECT_EQ(innermost(leak), "keep_tensor") << leak["stack"].dump();
  EXPECT_NEAR(leak["bytes_per_iteration"].get<double>(), static_cast<double>(kMiB), 0.01 * kMiB);
  EXPECT_EQ(leak["live_at_exit_count"], 40);
  EXPECT_NE(rep["leak_groups"][0]["headline"]["text"].get<std::string>().find("keep_tensor"), std::string::npos);
  // The device holds the segments, not the segments and the tensors in them.
  ASSERT_EQ(rep["devices"].size(), 1u);
  EXPECT_EQ(rep["devices"][0]["peak_live_bytes"], 8 * 20 * kMiB);
  EXPECT_EQ(rep["devices"][0]["live_at_exit_bytes"], 8 * 20 * kMiB);
  // Live at exit: the tensors by site, not the segments holding them.
  for (const auto &site : rep["live_at_exit"]) EXPECT_NE(innermost(site), "grow_segment") << site.dump();
  EXPECT_EQ(rep["analysis"]["pool_blocks"], 160);
  // Seen through the allocator: no suggestion to rerun in another allocator mode.
  EXPECT_EQ(rep["run"]["pool_tracker"], "test allocator (pool_blocks.cpp)");
  EXPECT_EQ(rep["run"]["allocator_mode"].get<std::string>().rfind("per-tensor", 0), 0u) << rep["run"].dump(2);
  const std::string note = rep["run"]["allocator_note"].get<std::string>();
  EXPECT_NE(note.find("tensors were seen through test allocator"), std::string::npos) << note;
  EXPECT_EQ(r.err.find("--torch per-tensor"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("leak: 1.0 MiB per iteration at pool_blocks.cpp:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" in keep_tensor"), std::string::npos) << r.err;
}

TEST(PoolBlocks, SegmentsListTheTensorsInThem) {
  PoolRun r = run_pool("leak");
  const auto &segments = r.report["segments"];
  ASSERT_EQ(segments.size(), 1u) << segments.dump(2);
  const auto &s = segments[0];
  EXPECT_EQ(innermost(s), "grow_segment") << s["stack"].dump();
  EXPECT_EQ(s["device"], 0);
  EXPECT_EQ(s["count"], 8);
  EXPECT_EQ(s["live_at_exit_count"], 8);
  EXPECT_EQ(s["live_at_exit_bytes"], 8 * 20 * kMiB);
  EXPECT_EQ(s["peak_bytes"], 8 * 20 * kMiB);
  ASSERT_EQ(s["blocks"].size(), 2u) << s["blocks"].dump(2);
  EXPECT_EQ(innermost(s["blocks"][0]), "keep_tensor");
  EXPECT_EQ(s["blocks"][0]["live_at_exit_bytes"], 40 * kMiB);
  EXPECT_EQ(s["blocks"][0]["live_at_exit_count"], 40);
  EXPECT_EQ(innermost(s["blocks"][1]), "scratch_tensor");
  EXPECT_EQ(s["blocks"][1]["live_at_exit_bytes"], 0);
  EXPECT_EQ(s["blocks"][1]["peak_bytes"], 6 * kMiB);
  EXPECT_NE(r.err.find("segments: 160.0 MiB reserved by PyTorch's caching allocator at exit (8 segments), 40.0 MiB of "
                       "it in tensors (25 %)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("in them: 40.0 MiB in 40 tensors at pool_blocks.cpp:"), std::string::npos) << r.err;
  Result md = run({GPULEAK_CLI_PATH, "report", "--format", "markdown", r.capture_path}, {});
  EXPECT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("| 0 | pool\\_blocks.cpp:"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find(" in grow\\_segment, called from pool\\_blocks.cpp:61 in main | 8 | 160.0 MiB | 40.0 MiB at "
                        "pool\\_blocks.cpp:"),
            std::string::npos)
      << md.out;
}

TEST(PoolBlocks, CleanLoopStaysCleanWhileSegmentsGrowEarly) {
  PoolRun r = run_pool("clean");
  const auto &rep = r.report;
  EXPECT_EQ(rep["verdict"], "clean") << rep["leaks"].dump(2);
  EXPECT_TRUE(rep["leaks"].empty());
  EXPECT_EQ(rep["devices"][0]["peak_live_bytes"], 3 * 20 * kMiB);
  ASSERT_EQ(rep["segments"].size(), 1u);
  EXPECT_EQ(rep["segments"][0]["count"], 3);
}

}  // namespace
}  // namespace gpuleak::test
