// The viewer's data from a capture: its numbers must be the analysis's numbers.
#include "output/view/view_data.h"

#include <gtest/gtest.h>

#include <numeric>

#include "analysis/capture_builder.h"
#include "output/report_json.h"

namespace gpuleak::output::view {
namespace {

using nlohmann::json;
using testing::CaptureBuilder;
using testing::kMiB;

Stack fake_symbolize(uint32_t id) {
  Frame f;
  f.function = "site_" + std::to_string(id);
  f.file = "train.cc";
  f.line = static_cast<int>(id);
  f.module = "/opt/app/libapp.so";
  f.address = 0x1000 + id;
  Frame main_frame;
  main_frame.function = "main";
  main_frame.file = "main.cc";
  main_frame.line = 3;
  main_frame.module = "/opt/app/app";
  return {f, main_frame};
}

// 10 iterations of a loop: a 4 MiB temporary (site 1) freed in its iteration, 1 MiB kept for
// ever (site 2, the leak), and a 2 MiB buffer (site 3) freed one iteration later.
CaptureBuilder leaky_loop() {
  CaptureBuilder b;
  b.device(0, "Fake GPU", 64 * kMiB);
  uint64_t previous = 0;
  for (int i = 0; i < 10; ++i) {
    b.begin("train");
    uint64_t tmp = b.alloc(4 * kMiB, 1);
    b.alloc(kMiB, 2);
    uint64_t buffer = b.alloc(2 * kMiB, 3);
    if (previous) b.free(previous);
    previous = buffer;
    b.free(tmp);
    b.end("train");
  }
  return b;
}

json view_of(const format::Capture &c, const analysis::Analysis &a, ViewOptions o = {}) {
  return make_view_data(c, a, fake_symbolize, o);
}

uint64_t sum(const json &column) {
  uint64_t s = 0;
  for (const auto &v : column) s += v.get<uint64_t>();
  return s;
}

TEST(ViewData, TimelinePeakAndEndAreTheAnalysisNumbers) {
  CaptureBuilder b = leaky_loop();
  analysis::Analysis a = analysis::analyze(b.capture);
  json v = view_of(b.capture, a);
  ASSERT_EQ(v["schema"], kViewSchema);
  ASSERT_EQ(v["timeline"].size(), 1u);
  const json &t = v["timeline"][0];
  EXPECT_EQ(t["device"], 0);
  EXPECT_EQ(t["peak"]["bytes"], a.devices[0].peak_live_bytes);
  EXPECT_EQ(t["live_bytes"].back(), a.devices[0].live_at_exit_bytes);
  EXPECT_EQ(t["t_ns"].back(), a.duration_ns);
  EXPECT_EQ(t["t_ns"].size(), t["live_bytes"].size());
  EXPECT_FALSE(t["decimated"].get<bool>());
  // 10 x 4 (alloc, alloc, alloc, free tmp) + 9 frees of the previous buffer, plus start and end.
  EXPECT_EQ(t["source_points"], 40u + 9u + 2u);
  uint64_t max = 0;
  for (const auto &y : t["live_bytes"]) max = std::max(max, y.get<uint64_t>());
  EXPECT_EQ(max, a.devices[0].peak_live_bytes);
}

TEST(ViewData, DecimatedTimelineStillShowsThePeak) {
  CaptureBuilder b = leaky_loop();
  analysis::Analysis a = analysis::analyze(b.capture);
  ViewOptions o;
  o.max_timeline_points = 8;
  json t = view_of(b.capture, a, o)["timeline"][0];
  EXPECT_TRUE(t["decimated"].get<bool>());
  EXPECT_LE(t["t_ns"].size(), 8u);
  uint64_t max = 0;
  for (const auto &y : t["live_bytes"]) max = std::max(max, y.get<uint64_t>());
  EXPECT_EQ(max, a.devices[0].peak_live_bytes);
}

TEST(ViewData, SnapshotsAtTheEndAndAtThePeak) {
  CaptureBuilder b = leaky_loop();
  analysis::Analysis a = analysis::analyze(b.capture);
  json v = view_of(b.capture, a);
  ASSERT_EQ(v["snapshots"].size(), 3u);  // the end, the peak, the last iteration
  const json &end = v["snapshots"][0];
  EXPECT_EQ(end["kind"], "end");
  EXPECT_EQ(end["live_bytes"], a.devices[0].live_at_exit_bytes);
  EXPECT_EQ(sum(end["bytes"]) + end["other"]["bytes"].get<uint64_t>(), a.devices[0].live_at_exit_bytes);
  // Largest first: the leak's 10 MiB, then the last buffer's 2 MiB.
  ASSERT_EQ(end["site"].size(), 2u);
  EXPECT_EQ(end["bytes"][0], 10 * kMiB);
  EXPECT_EQ(end["count"][0], 10u);
  const json &sites = v["sites"];
  EXPECT_EQ(sites["site_id"][end["site"][0].get<size_t>()], site_id(fake_symbolize(2)));
  const json &peak = v["snapshots"][1];
  EXPECT_EQ(peak["kind"], "peak");
  EXPECT_EQ(peak["live_bytes"], a.devices[0].peak_live_bytes);
  EXPECT_EQ(peak["t_ns"], v["timeline"][0]["peak"]["t_ns"]);
  EXPECT_TRUE(end["pool"].is_null());  // no framework allocator: no cache to draw apart
}

// What the leaks held at the end of the last iteration, where the report counts them: a program
// that frees everything at exit (every PyTorch program) leaves the "end" snapshot without them.
TEST(ViewData, TheLastIterationSnapshotHoldsWhatTheLeaksHeldThere) {
  CaptureBuilder b;
  b.device(0, "Fake GPU", 64 * kMiB);
  std::vector<uint64_t> kept;
  for (int i = 0; i < 10; ++i) {
    b.begin("train");
    uint64_t tmp = b.alloc(4 * kMiB, 1);
    kept.push_back(b.alloc(kMiB, 2));
    b.free(tmp);
    b.end("train");
  }
  for (uint64_t p : kept) b.free(p);  // released at exit
  analysis::Analysis a = analysis::analyze(b.capture);
  ASSERT_EQ(a.leaks.size(), 1u);
  ASSERT_EQ(a.leaks[0].live_at_exit_bytes, 0u);
  json v = view_of(b.capture, a);
  const json *last = nullptr;
  for (const auto &s : v["snapshots"])
    if (s["kind"] == "last_iteration") last = &s;
  ASSERT_NE(last, nullptr);
  EXPECT_EQ((*last)["iteration"], 9);
  EXPECT_EQ(v["snapshots"][0]["live_bytes"], 0u);
  ASSERT_EQ((*last)["site"].size(), 1u);
  EXPECT_EQ(v["sites"]["site_id"][(*last)["site"][0].get<size_t>()], site_id(fake_symbolize(2)));
  EXPECT_EQ((*last)["bytes"][0], a.leaks[0].live_bytes);
  EXPECT_EQ((*last)["count"][0], a.leaks[0].live_count);
  const analysis::Iteration &it = a.iterations.back();
  EXPECT_EQ((*last)["t_ns"], it.end_ns);
  EXPECT_EQ((*last)["live_bytes"], a.iteration_device(a.iterations.size() - 1, 0).live_end_bytes);
}

// A caching allocator's blocks (capture format 1.3): the curve is the segments' (device memory),
// the snapshots and the temporal view name the tensors (the blocks) instead of their segments.
TEST(ViewData, BlocksInSegmentsAreDrawnByTensorSiteWithoutDoubleCounting) {
  CaptureBuilder b;
  b.device(0, "Fake GPU", 512 * kMiB);
  uint64_t segment = 0;
  for (int i = 0; i < 10; ++i) {
    b.begin("train");
    if (i % 5 == 0) segment = b.alloc(20 * kMiB, 1, CaptureBuilder::Kind::kDevice, 0, 0x7e0000000000 + i * 32 * kMiB);
    b.alloc(kMiB, 2, CaptureBuilder::Kind::kPoolBlock, 0, segment + static_cast<uint64_t>(i % 5) * kMiB);
    b.end("train");
  }
  analysis::AnalysisOptions options;
  options.record_lives = true;
  analysis::Analysis a = analysis::analyze(b.capture, options);
  json v = view_of(b.capture, a);
  const json &t = v["timeline"][0];
  EXPECT_EQ(t["peak"]["bytes"], 40 * kMiB);
  EXPECT_EQ(t["live_bytes"].back(), 40 * kMiB);
  const json &end = v["snapshots"][0];
  ASSERT_EQ(end["site"].size(), 1u);
  EXPECT_EQ(v["sites"]["site_id"][end["site"][0].get<size_t>()], site_id(fake_symbolize(2)));
  EXPECT_EQ(end["bytes"][0], 10 * kMiB);
  // The segments and what their blocks fill, so that the page draws the cache (30 MiB) apart.
  EXPECT_EQ(end["pool"]["reserved_bytes"], 40 * kMiB);
  EXPECT_EQ(end["pool"]["in_blocks_bytes"], 10 * kMiB);
}

TEST(ViewData, FramesAreSharedAcrossSites) {
  CaptureBuilder b = leaky_loop();
  analysis::Analysis a = analysis::analyze(b.capture);
  json v = view_of(b.capture, a);
  const json &frames = v["frames"];
  // Sites 1, 2, 3 each have their own frame 0 and share "main".
  EXPECT_EQ(frames["function"].size(), 4u);
  for (const char *column : {"file", "line", "module", "kind", "address"}) EXPECT_EQ(frames[column].size(), 4u);
  EXPECT_EQ(frames["module"][0], "libapp.so");  // basenames, as in the report
  EXPECT_TRUE(frames["address"][0].is_null());  // a known function needs no address
  for (const auto &stack : v["sites"]["frames"]) {
    ASSERT_EQ(stack.size(), 2u);
    EXPECT_EQ(frames["function"][stack[1].get<size_t>()], "main");
  }
}

// Whose code each frame is, by the classifier the headline uses (output/user_code.h): what the
// page's "hide library frames" keeps.
TEST(ViewData, FramesSayWhichAreTheUsers) {
  CaptureBuilder b;
  b.alloc(kMiB, 1);
  analysis::Analysis a = analysis::analyze(b.capture);
  auto symbolize = [](uint32_t) {
    Frame c10;
    c10.function = "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(int, unsigned long)";
    c10.module = "/venv/lib/python3.12/site-packages/torch/lib/libc10_cuda.so";
    Frame mine;
    mine.function = "train_step";
    mine.file = "/opt/app/train.cc";
    mine.line = 7;
    mine.module = "/opt/app/app";
    return Stack{c10, mine};
  };
  json v = make_view_data(b.capture, a, symbolize);
  const json &frames = v["frames"];
  ASSERT_EQ(frames["user"].size(), frames["function"].size());
  const json &stack = v["sites"]["frames"][0];
  ASSERT_EQ(stack.size(), 2u);
  EXPECT_EQ(frames["user"][stack[0].get<size_t>()], 0);
  EXPECT_EQ(frames["user"][stack[1].get<size_t>()], 1);
  EXPECT_EQ(v["sites"]["headline"][0], stack[1]);
}

TEST(ViewData, TemporalKeepsOnlyAllocationsThatOutliveTheirIteration) {
  CaptureBuilder b = leaky_loop();
  analysis::Analysis a = analysis::analyze(b.capture);
  ASSERT_EQ(a.primary_iterations, 10u);
  json t = view_of(b.capture, a)["temporal"];
  EXPECT_EQ(t["loop"], "train");
  EXPECT_EQ(t["iterations"], 10);
  EXPECT_EQ(t["start_ns"].size(), 10u);
  const size_t rows = t["site"].size();
  for (const char *column : {"device", "birth_iteration", "death_iteration", "count", "bytes"})
    EXPECT_EQ(t[column].size(), rows);
  // The leak: one row per iteration, never freed. The buffer: freed in the next iteration, the
  // last one never. The temporary: nothing.
  uint64_t never = 0, next = 0;
  for (size_t i = 0; i < rows; ++i) {
    int64_t born = t["birth_iteration"][i], died = t["death_iteration"][i];
    if (died == -1) {
      ++never;
    } else {
      EXPECT_EQ(died, born + 1);
      ++next;
    }
  }
  EXPECT_EQ(never, 11u);
  EXPECT_EQ(next, 9u);
  EXPECT_EQ(sum(t["bytes"]), 10 * kMiB + 10 * 2 * kMiB);
}

TEST(ViewData, OneSnapshotPerOutOfMemoryFailure) {
  CaptureBuilder b;
  b.device(0, "Fake GPU", 8 * kMiB);
  b.alloc(6 * kMiB, 5);
  b.failed_alloc(4 * kMiB, 6);
  b.oom(4 * kMiB, 2 * kMiB, 8 * kMiB, 6);
  b.alloc(kMiB, 7);
  analysis::Analysis a = analysis::analyze(b.capture);
  ASSERT_EQ(a.ooms.size(), 1u);
  json v = view_of(b.capture, a);
  const json *oom = nullptr;
  for (const auto &s : v["snapshots"])
    if (s["kind"] == "oom") oom = &s;
  ASSERT_NE(oom, nullptr);
  EXPECT_EQ((*oom)["oom_index"], 0);
  EXPECT_EQ((*oom)["live_bytes"], a.ooms[0].live_bytes);
  EXPECT_EQ((*oom)["t_ns"], a.ooms[0].t_ns);
}

TEST(ViewData, SitesBeyondTheCapAreSummedAsOther) {
  CaptureBuilder b;
  for (uint32_t s = 1; s <= 50; ++s) b.alloc(s * kMiB, s);
  analysis::Analysis a = analysis::analyze(b.capture);
  ViewOptions o;
  o.max_snapshot_sites = 10;
  json end = view_of(b.capture, a, o)["snapshots"][0];
  EXPECT_EQ(end["site"].size(), 10u);
  EXPECT_EQ(end["bytes"][0], 50 * kMiB);
  EXPECT_EQ(end["other"]["sites"], 40u);
  EXPECT_EQ(end["other"]["count"], 40u);
  EXPECT_EQ(sum(end["bytes"]) + end["other"]["bytes"].get<uint64_t>(), a.devices[0].live_at_exit_bytes);
}

TEST(ViewData, AnEmptyCaptureGivesEmptyViews) {
  CaptureBuilder b;
  analysis::Analysis a = analysis::analyze(b.capture);
  json v = view_of(b.capture, a);
  EXPECT_TRUE(v["timeline"].empty());
  EXPECT_TRUE(v["snapshots"].empty());
  EXPECT_EQ(v["temporal"]["iterations"], 0);
}

}  // namespace
}  // namespace gpuleak::output::view
