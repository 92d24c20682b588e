// CuPy's pool and JAX's arena seen per object (issue #27; format 1.6), against recorded event
// sequences as gpuleak._cupy and gpuleak._jax write them: the arrays joined to the chunk or the
// arena that holds them by address, frees paired by address whatever the thread, JAX's arrays
// sampled at the boundaries (allocation = first seen live, free = first seen gone), and an OOM of
// the arena itself (no CUDA call failed) carrying what was live.
#include <gtest/gtest.h>

#include "analysis/analysis.h"
#include "analysis/capture_builder.h"

namespace gpuleak::analysis {
namespace {

using format::Kind;
using format::PoolFramework;
using testing::CaptureBuilder;
using testing::kMiB;

constexpr uint32_t kArenaSite = 1, kChunkSite = 2;

void tracker(CaptureBuilder &b, PoolFramework framework, const std::string &description) {
  format::PoolTracker t;
  t.framework = static_cast<int32_t>(framework);
  t.description = description;
  b.capture.pool_trackers.push_back(t);
}

format::MemoryRecord &object(CaptureBuilder &b, uint64_t address, uint64_t size, uint32_t py_stack, format::Api api,
                             uint32_t tid) {
  b.alloc(size, 0, Kind::kPoolBlock, 0, address, py_stack);
  format::MemoryRecord &r = b.capture.memory.back();
  r.api = static_cast<uint16_t>(api);
  r.tid = tid;
  return r;
}

format::MemoryRecord &gone(CaptureBuilder &b, uint64_t address, format::Api api, uint32_t tid) {
  format::MemoryRecord &r = b.free(address, Kind::kPoolBlock);
  r.api = static_cast<uint16_t>(api);
  r.tid = tid;
  return r;
}

// JAX: one arena, the arrays sampled at each end boundary: a 4 MiB loss kept per step, a batch
// replaced each step (seen gone at the next sample), the weights live throughout.
CaptureBuilder jax_loop(bool leak) {
  CaptureBuilder b;
  b.device(0, "GPU", 140ull << 30);
  tracker(b, PoolFramework::kJax, "jax 0.11.2 live arrays at each iteration boundary");
  const uint64_t arena = b.alloc(100ull << 30, kArenaSite, Kind::kDevice, 0, 0x7f0000000000);
  const uint32_t weights_site = b.py_stack({{"train.py", "<module>", 30}, {"train.py", "init", 8}});
  const uint32_t batch_site = b.py_stack({{"train.py", "<module>", 31}, {"train.py", "step", 12}});
  const uint32_t loss_site = b.py_stack({{"train.py", "<module>", 31}, {"train.py", "step", 14}});
  const auto api = format::Api::jaxLiveArrays;
  object(b, arena, 64 * kMiB, weights_site, api, 1);
  uint64_t top = arena + 64 * kMiB;
  uint64_t batch = 0, loss = 0;
  for (int i = 0; i < 30; ++i) {
    b.begin("train");
    b.advance(1000000);
    // The sample at the end boundary: the new batch and loss, the last batch (and loss) gone.
    if (batch) gone(b, batch, api, 1);
    if (loss && !leak) gone(b, loss, api, 1);
    batch = top;
    object(b, batch, 2 * kMiB, batch_site, api, 1);
    loss = top + 2 * kMiB;
    object(b, loss, 4 * kMiB, loss_site, api, 1);
    top += leak ? 6 * kMiB : 0;
    b.end();
  }
  return b;
}

TEST(FrameworkPools, JaxLeakIsTheArraysThatSurviveBoundaries) {
  Analysis a = analyze(jax_loop(true).capture);
  EXPECT_EQ(a.verdict, Verdict::kLeak);
  ASSERT_EQ(a.leaks.size(), 1u);
  EXPECT_DOUBLE_EQ(a.leaks[0].bytes_per_iteration, static_cast<double>(4 * kMiB));
  EXPECT_EQ(a.devices[0].peak_live_bytes, 100ull << 30);  // the arena is the device's bytes
  ASSERT_EQ(a.segments.size(), 1u);                       // ...and the segment holding the arrays
  EXPECT_EQ(a.segments[0].site.stack_id, kArenaSite);
  ASSERT_EQ(a.segments[0].blocks.size(), 3u);
  EXPECT_EQ(a.segments[0].blocks[0].live_at_exit_bytes, 30 * 4 * kMiB);  // the losses, largest first
  EXPECT_EQ(a.segments[0].blocks[1].live_at_exit_bytes, 64 * kMiB);      // the weights
  EXPECT_EQ(a.allocator_mode.text(), "per-array (JAX's arena, live arrays sampled)");
  EXPECT_NE(a.allocator_note.find("live arrays at each iteration boundary"), std::string::npos) << a.allocator_note;
  EXPECT_EQ(a.allocator_note.find("--jax per-buffer"), std::string::npos) << a.allocator_note;
}

// The forecast under JAX's arena is for the arena filling: its arrays get it and no more.
TEST(FrameworkPools, JaxForecastIsTheArenaFilling) {
  Analysis a = analyze(jax_loop(true).capture);
  ASSERT_TRUE(a.devices[0].forecast.has_value());
  const Forecast &f = *a.devices[0].forecast;
  EXPECT_TRUE(f.within_arena);
  // The arena (100 GiB) less the arrays at the last iteration's end: the weights, 30 losses and its batch.
  const uint64_t free_bytes = (100ull << 30) - 64 * kMiB - 30 * 4 * kMiB - 2 * kMiB;
  EXPECT_EQ(f.pool_free_bytes, free_bytes);
  EXPECT_EQ(f.iterations_left, free_bytes / (4 * kMiB));  // not the device's 40 GiB outside the arena
  EXPECT_EQ(f.held_elsewhere_bytes, 0u);
}

TEST(FrameworkPools, JaxCleanLoopIsClean) {
  Analysis a = analyze(jax_loop(false).capture);
  EXPECT_EQ(a.verdict, Verdict::kClean);
  EXPECT_TRUE(a.leaks.empty());
}

// JAX's idiom, one jitted call per step: `params, loss, h = step(params, x)`. The three outputs
// share a site (the call's line, their traceback); the new parameters and the loss are replaced in
// the next step, and the leak keeps each step's h. Sampled at each end boundary.
CaptureBuilder jax_jitted_step(bool leak, bool per_buffer) {
  CaptureBuilder b;
  b.device(0, "GPU", 140ull << 30);
  tracker(b, PoolFramework::kJax, "jax 0.11.2 live arrays at each iteration boundary");
  if (per_buffer) {
    b.capture.run.emplace();
    b.capture.run->allocator =
        format::AllocatorSettings::parse("XLA_PYTHON_CLIENT_ALLOCATOR=platform;XLA_PYTHON_CLIENT_PREALLOCATE=false");
  }
  // Per buffer, XLA makes each output on a thread of its own: no Python frame of the user's.
  const uint32_t xla_thread = b.py_stack({{"/usr/lib/python3/site-packages/jax/_src/dispatch.py", "run", 90}});
  const uint64_t arena = per_buffer ? 0 : b.alloc(100ull << 30, kArenaSite, Kind::kDevice, 0, 0x7f0000000000);
  const uint32_t call = b.py_stack({{"train.py", "<module>", 56}});
  const auto api = format::Api::jaxLiveArrays;
  uint64_t top = per_buffer ? 0x7e0000000000 : arena;
  auto buffer = [&](uint64_t size) {  // per buffer: its own cudaMalloc, made by XLA
    const uint64_t at = top;
    top += size;
    if (per_buffer) b.alloc(size, 50, Kind::kDevice, 0, at, xla_thread);
    return at;
  };
  uint64_t params = buffer(4 * kMiB);
  object(b, params, 4 * kMiB, call, api, 1);
  uint64_t loss = 0, h = 0;
  for (int i = 0; i < 40; ++i) {
    b.begin("train");
    const uint64_t new_params = buffer(4 * kMiB), new_loss = buffer(4), new_h = buffer(4 * kMiB);
    const uint64_t temp = buffer(8 * kMiB);  // inside the step: never an array
    if (per_buffer) b.free(temp);
    b.advance(1000000);
    // The old parameters and loss dropped by the program (and, per buffer, freed), then sampled.
    if (per_buffer) b.free(params);
    if (per_buffer && loss) b.free(loss);
    if (per_buffer && h && !leak) b.free(h);
    gone(b, params, api, 1);
    if (loss) gone(b, loss, api, 1);
    if (h && !leak) gone(b, h, api, 1);
    params = new_params, loss = new_loss, h = new_h;
    object(b, params, 4 * kMiB, call, api, 1);
    object(b, loss, 4, call, api, 1);
    object(b, h, 4 * kMiB, call, api, 1);
    b.end();
  }
  return b;
}

TEST(FrameworkPools, JittedStepKeepingOneOfItsOutputsLeaksAtTheCall) {
  for (bool per_buffer : {false, true}) {
    SCOPED_TRACE(per_buffer ? "per buffer" : "arena");
    const CaptureBuilder b = jax_jitted_step(true, per_buffer);
    Analysis a = analyze(b.capture);
    EXPECT_EQ(a.verdict, Verdict::kLeak);
    ASSERT_EQ(a.leaks.size(), 1u);
    EXPECT_NEAR(a.leaks[0].bytes_per_iteration, static_cast<double>(4 * kMiB), 0.1 * 4 * kMiB);
    EXPECT_EQ(a.primary_iterations, 40u);
    ASSERT_EQ(b.capture.stacks.count(a.leaks[0].site.py_stack_id), 1u);
    const format::Stack &py = b.capture.stacks.at(a.leaks[0].site.py_stack_id);
    ASSERT_EQ(py.frames.size(), 2u);
    EXPECT_EQ(py.frames[1], 56u);  // the call's line, not XLA's thread
    Analysis clean = analyze(jax_jitted_step(false, per_buffer).capture);
    EXPECT_EQ(clean.verdict, Verdict::kClean);
    EXPECT_TRUE(clean.leaks.empty());
    if (per_buffer) {
      EXPECT_EQ(a.allocator_mode.text(), "per-buffer (JAX's platform allocator, live arrays sampled)");
      EXPECT_EQ(a.devices[0].live_at_exit_bytes, 41 * 4 * kMiB + 4);  // the buffers are the bytes
      ASSERT_FALSE(a.segments.empty());                               // the buffers that held arrays
      EXPECT_EQ(a.segments[0].site.stack_id, 50u);
    }
  }
}

// An array placed outside every allocation gpuleak saw (an arena made before it started) is still
// the program's object, but in no segment.
TEST(FrameworkPools, AnArrayOutsideEveryArenaJoinsNoSegment) {
  CaptureBuilder b;
  tracker(b, PoolFramework::kJax, "jax");
  const uint64_t arena = b.alloc(1ull << 30, kArenaSite);
  const uint32_t site = b.py_stack({{"train.py", "<module>", 3}});
  object(b, arena + 4 * kMiB, kMiB, site, format::Api::jaxLiveArrays, 1);
  object(b, 0x10000000, kMiB, site, format::Api::jaxLiveArrays, 1);
  Analysis a = analyze(b.capture);
  ASSERT_EQ(a.segments.size(), 1u);
  ASSERT_EQ(a.segments[0].blocks.size(), 1u);
  EXPECT_EQ(a.segments[0].blocks[0].live_at_exit_count, 1u);
  ASSERT_EQ(a.live_at_exit.size(), 1u);
  EXPECT_EQ(a.live_at_exit[0].live_count, 2u);
}

// CuPy: a worker thread (tid 2) takes every array out of the pool, the main thread (tid 1) drops
// them; the chunk is a cudaMalloc of the pool. Paired by address, the clean loop is clean and the
// kept loss leaks at its own line.
CaptureBuilder cupy_two_threads(bool leak) {
  CaptureBuilder b;
  b.device(0, "GPU", 140ull << 30);
  tracker(b, PoolFramework::kCuPy, "cupy 14.2.0 default MemoryPool");
  const auto api = format::Api::cupyMemoryPool;
  const uint32_t batch_site = b.py_stack({{"train.py", "work", 20}});
  const uint32_t loss_site = b.py_stack({{"train.py", "work", 22}});
  uint64_t chunk = 0, top = 0;
  for (int i = 0; i < 30; ++i) {
    b.begin("train");
    if (!chunk || top + 2 * kMiB > chunk + 16 * kMiB) {
      chunk = b.alloc(16 * kMiB, kChunkSite, Kind::kDevice, 0, 0x7e0000000000 + static_cast<uint64_t>(i) * 32 * kMiB);
      b.capture.memory.back().tid = 2;
      top = chunk;
    }
    const uint64_t batch = leak ? top : chunk;  // a clean loop reuses the same blocks
    object(b, batch, kMiB / 2, batch_site, api, 2);
    object(b, batch + kMiB / 2, kMiB, loss_site, api, 2);
    gone(b, batch, api, 1);
    if (!leak) gone(b, batch + kMiB / 2, api, 1);
    top += leak ? 2 * kMiB : 0;
    b.end();
  }
  return b;
}

TEST(FrameworkPools, CupyFreesOnAnotherThreadPairByAddress) {
  Analysis clean = analyze(cupy_two_threads(false).capture);
  EXPECT_EQ(clean.verdict, Verdict::kClean);
  EXPECT_EQ(clean.accounting.unmatched_frees, 0u);
  Analysis leak = analyze(cupy_two_threads(true).capture);
  EXPECT_EQ(leak.verdict, Verdict::kLeak);
  EXPECT_EQ(leak.accounting.unmatched_frees, 0u);
  ASSERT_EQ(leak.leaks.size(), 1u);
  EXPECT_DOUBLE_EQ(leak.leaks[0].bytes_per_iteration, static_cast<double>(kMiB));
  EXPECT_EQ(leak.allocator_mode.text(), "per-array (CuPy's memory pool, through its allocator)");
  ASSERT_EQ(leak.segments.size(), 1u);
  EXPECT_EQ(leak.segments[0].site.stack_id, kChunkSite);
  EXPECT_EQ(leak.segments[0].blocks[0].live_at_exit_bytes, 30 * kMiB);
}

// XLA's RESOURCE_EXHAUSTED: no CUDA call failed; the record carries the arena's figures and the
// live arrays (sampled just before) are listed by line.
TEST(FrameworkPools, JaxOutOfMemoryListsTheLiveArrays) {
  CaptureBuilder b = jax_loop(true);
  format::OomRecord &o = b.oom(4 * kMiB, 0, 0, 0);
  o.result = 0;
  o.api = static_cast<uint16_t>(format::Api::jaxRuntimeError);
  o.pool_framework = static_cast<int32_t>(PoolFramework::kJax);
  o.pool_in_use_bytes = 184 * kMiB;
  o.pool_largest_free_bytes = 3 * kMiB;
  o.pool_limit_bytes = 100ull << 30;
  Analysis a = analyze(b.capture);
  ASSERT_EQ(a.ooms.size(), 1u);
  EXPECT_EQ(a.ooms[0].pool_framework, 3);
  EXPECT_EQ(a.ooms[0].pool_largest_free_bytes, 3 * kMiB);
  EXPECT_EQ(a.ooms[0].pool_in_use_bytes, 184 * kMiB);
  ASSERT_GE(a.ooms[0].live_by_site.size(), 2u);
  EXPECT_EQ(a.ooms[0].live_by_site[0].bytes, 30 * 4 * kMiB);  // the kept losses first
}

}  // namespace
}  // namespace gpuleak::analysis
