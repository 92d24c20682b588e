// A framework allocator's blocks inside its segments (format 1.3, kind pool_block; pool_blocks.h):
// the blocks are the leak candidates and the sites of live_at_exit and OOMs, the segments that hold
// them are containers that make the device's bytes alone.
#include <gtest/gtest.h>

#include <random>

#include "analysis/analysis.h"
#include "analysis/capture_builder.h"

namespace gpuleak::analysis {
namespace {

using format::Kind;
using format::Op;
using testing::CaptureBuilder;
using testing::kMiB;

constexpr uint32_t kSegmentSite = 1, kTensorSite = 2, kScratchSite = 3, kMapSite = 4;

TEST(PoolBlocks, BlockAtTheSegmentsStartIsItsOwnAllocation) {
  CaptureBuilder b;
  uint64_t segment = b.alloc(20 * kMiB, kSegmentSite);
  b.alloc(1 * kMiB, kTensorSite, Kind::kPoolBlock, 0, segment);
  b.free(segment, Kind::kPoolBlock);  // the block, not the segment at the same address
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.devices[0].peak_live_bytes, 20 * kMiB);
  EXPECT_EQ(a.devices[0].live_at_exit_bytes, 20 * kMiB);
  EXPECT_EQ(a.accounting.pool_blocks, 1u);
  EXPECT_EQ(a.accounting.unmatched_frees, 0u);
  ASSERT_EQ(a.segments.size(), 1u);
  EXPECT_EQ(a.segments[0].site.stack_id, kSegmentSite);
  EXPECT_EQ(a.segments[0].count, 1u);
  ASSERT_EQ(a.segments[0].blocks.size(), 1u);
  EXPECT_EQ(a.segments[0].blocks[0].peak_bytes, 1 * kMiB);
  EXPECT_EQ(a.segments[0].blocks[0].live_at_exit_bytes, 0u);
}

TEST(PoolBlocks, AFreeOfUnknownKindNeverTakesABlock) {
  CaptureBuilder b;
  uint64_t segment = b.alloc(20 * kMiB, kSegmentSite);
  b.alloc(1 * kMiB, kTensorSite, Kind::kPoolBlock, 0, segment);
  b.free(segment, Kind::kUnknown);  // cudaFree of the segment, recorded without its kind
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.devices[0].live_at_exit_bytes, 0u);
  ASSERT_EQ(a.live_at_exit.size(), 1u);  // the block, still handed out
  EXPECT_EQ(a.live_at_exit[0].site.stack_id, kTensorSite);
}

// Segments every 5 iterations, a tensor kept per iteration, scratch tensors given back: the leak
// is the tensors' site at their rate; the segments grow too, but hold them.
CaptureBuilder leaking_loop(bool expandable) {
  CaptureBuilder b;
  b.device(0, "GPU", 80ull << 30);
  uint64_t base = 0;
  uint64_t next_handle = 0x500;
  for (int i = 0; i < 30; ++i) {
    b.begin("train");
    if (i % 5 == 0) {
      // Expandable segments map each piece right after the last; cudaMalloc'd ones lie apart.
      base = 0x7e0000000000 + static_cast<uint64_t>(i / 5) * (expandable ? 20 : 32) * kMiB;
      if (expandable) {
        uint64_t handle = b.alloc(20 * kMiB, kSegmentSite, Kind::kVmm, 0, next_handle++);
        b.map(base, handle, 20 * kMiB, kMapSite);
      } else {
        b.alloc(20 * kMiB, kSegmentSite, Kind::kDevice, 0, base);
      }
    }
    b.alloc(1 * kMiB, kTensorSite, Kind::kPoolBlock, 0, base + static_cast<uint64_t>(i % 5) * kMiB);
    uint64_t scratch = b.alloc(4 * kMiB, kScratchSite, Kind::kPoolBlock, 0, base + 10 * kMiB);
    b.free(scratch, Kind::kPoolBlock);
    b.end();
  }
  return b;
}

TEST(PoolBlocks, LeakIsPerTensorSiteAndDeviceBytesAreTheSegments) {
  for (bool expandable : {false, true}) {
    SCOPED_TRACE(expandable ? "expandable segments" : "cudaMalloc segments");
    CaptureBuilder b = leaking_loop(expandable);
    Analysis a = analyze(b.capture);
    EXPECT_EQ(a.verdict, Verdict::kLeak);
    ASSERT_EQ(a.leaks.size(), 1u);
    EXPECT_EQ(a.leaks[0].site.stack_id, kTensorSite);
    EXPECT_DOUBLE_EQ(a.leaks[0].bytes_per_iteration, static_cast<double>(kMiB));
    EXPECT_EQ(a.devices[0].peak_live_bytes, 6 * 20 * kMiB);
    EXPECT_EQ(a.devices[0].live_at_exit_bytes, 6 * 20 * kMiB);
    ASSERT_TRUE(a.devices[0].forecast.has_value());
    ASSERT_EQ(a.live_at_exit.size(), 1u);
    EXPECT_EQ(a.live_at_exit[0].site.stack_id, kTensorSite);
    EXPECT_EQ(a.live_at_exit[0].live_bytes, 30 * kMiB);
    ASSERT_EQ(a.segments.size(), 1u);
    EXPECT_EQ(a.segments[0].site.stack_id, expandable ? kMapSite : kSegmentSite);
    EXPECT_EQ(a.segments[0].count, 6u);
    EXPECT_EQ(a.segments[0].live_at_exit_count, 6u);
    EXPECT_EQ(a.segments[0].live_at_exit_bytes, 6 * 20 * kMiB);
    ASSERT_EQ(a.segments[0].blocks.size(), 2u);
    EXPECT_EQ(a.segments[0].blocks[0].site.stack_id, kTensorSite);
    EXPECT_EQ(a.segments[0].blocks[0].live_at_exit_count, 30u);
    EXPECT_EQ(a.segments[0].blocks[1].site.stack_id, kScratchSite);
    EXPECT_EQ(a.segments[0].blocks[1].peak_bytes, 4 * kMiB);
    EXPECT_EQ(a.allocator_mode.text().rfind("per-tensor", 0), 0u) << a.allocator_mode.text();
    EXPECT_EQ(a.allocator_note.find("--torch per-tensor"), std::string::npos) << a.allocator_note;
  }
}

// Expandable segments: the allocator maps physical chunks side by side and carves a large block
// across them; every chunk it covers is a segment, not only the one that holds its start (seen on
// the H200: two 20 MiB chunks under a 32 MiB block were left out of the segments and listed as
// live sites of their own).
TEST(PoolBlocks, ABlockAcrossExpandableChunksMakesEachOfThemASegment) {
  CaptureBuilder b;
  const uint64_t base = 0x7e0000000000;
  uint64_t first = b.alloc(20 * kMiB, kSegmentSite, Kind::kVmm, 0, 0x500);
  b.map(base, first, 20 * kMiB, kMapSite);
  uint64_t second = b.alloc(20 * kMiB, kSegmentSite, Kind::kVmm, 0, 0x501);
  b.map(base + 20 * kMiB, second, 20 * kMiB, kMapSite);
  b.alloc(32 * kMiB, kTensorSite, Kind::kPoolBlock, 0, base + 4 * kMiB);
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.devices[0].live_at_exit_bytes, 40 * kMiB);
  ASSERT_EQ(a.segments.size(), 1u);
  EXPECT_EQ(a.segments[0].count, 2u);
  EXPECT_EQ(a.segments[0].live_at_exit_bytes, 40 * kMiB);
  for (const auto &s : a.live_at_exit) EXPECT_EQ(s.site.stack_id, kTensorSite) << "a chunk listed as a site";
}

TEST(PoolBlocks, WithoutBlocksTheSegmentsAreTheSites) {
  CaptureBuilder b = leaking_loop(false);
  std::vector<format::MemoryRecord> kept;
  for (const auto &r : b.capture.memory)
    if (r.kind != static_cast<uint8_t>(Kind::kPoolBlock)) kept.push_back(r);
  b.capture.memory = kept;
  Analysis a = analyze(b.capture);
  EXPECT_TRUE(a.segments.empty());
  ASSERT_FALSE(a.leaks.empty());
  EXPECT_EQ(a.leaks[0].site.stack_id, kSegmentSite);
}

TEST(PoolBlocks, OutOfMemoryListsTheTensorsLive) {
  CaptureBuilder b;
  uint64_t segment = b.alloc(20 * kMiB, kSegmentSite);
  b.alloc(6 * kMiB, kTensorSite, Kind::kPoolBlock, 0, segment);
  b.alloc(2 * kMiB, kScratchSite, Kind::kPoolBlock, 0, segment + 6 * kMiB);
  b.failed_alloc(40 * kMiB, kSegmentSite);
  b.oom(40 * kMiB, 0, 24 * kMiB, kSegmentSite);
  Analysis a = analyze(b.capture);
  ASSERT_EQ(a.ooms.size(), 1u);
  EXPECT_EQ(a.ooms[0].live_bytes, 20 * kMiB);  // device memory: the segment
  ASSERT_EQ(a.ooms[0].live_by_site.size(), 2u);
  EXPECT_EQ(a.ooms[0].live_by_site[0].site.stack_id, kTensorSite);
  EXPECT_EQ(a.ooms[0].live_by_site[0].bytes, 6 * kMiB);
  EXPECT_EQ(a.ooms[0].live_by_site[1].site.stack_id, kScratchSite);
}

TEST(PoolBlocks, LivesMarkBlocksApartFromDeviceMemory) {
  CaptureBuilder b;
  uint64_t segment = b.alloc(20 * kMiB, kSegmentSite);
  b.alloc(1 * kMiB, kTensorSite, Kind::kPoolBlock, 0, segment);
  AnalysisOptions o;
  o.record_lives = true;
  Analysis a = analyze(b.capture, o);
  ASSERT_EQ(a.lives->lives.size(), 2u);
  EXPECT_FALSE(a.lives->lives[0].pool_block);
  EXPECT_TRUE(a.lives->lives[1].pool_block);
  EXPECT_EQ(a.lives->lives[1].device, 0);
}

// Whatever the blocks do (in segments or in none, freed twice, at reused addresses, across a
// context reset, in VMM ranges mapped and unmapped), the device numbers are those of the capture
// without them.
TEST(PoolBlocks, BlocksNeverChangeTheDeviceNumbers) {
  std::mt19937 rng(14);
  for (int round = 0; round < 20; ++round) {
    CaptureBuilder b;
    std::vector<uint64_t> bases, blocks;
    for (int i = 0; i < 200; ++i) {
      if (i % 20 == 0) b.begin("train");
      switch (rng() % 8) {
        case 0:
          bases.push_back(b.alloc((1 + rng() % 4) * 2 * kMiB, kSegmentSite, Kind::kDevice, rng() % 2));
          break;
        case 1:
          if (!bases.empty()) b.free(bases[rng() % bases.size()], rng() % 2 ? Kind::kDevice : Kind::kUnknown);
          break;
        case 2: {
          uint64_t handle = 0x900 + rng() % 16;
          b.alloc(2 * kMiB, kSegmentSite, Kind::kVmm, 0, handle);
          uint64_t va = 0x7c0000000000 + (rng() % 16) * 2 * kMiB;
          b.map(va, handle, 2 * kMiB, kMapSite);
          bases.push_back(va);
          break;
        }
        case 3:
          if (!bases.empty()) b.op(Op::kUnmap, Kind::kVmm).address = bases[rng() % bases.size()];
          break;
        case 4:
        case 5: {
          uint64_t at = bases.empty() || rng() % 5 == 0 ? 0x100000 * (rng() % 64)
                                                        : bases[rng() % bases.size()] + (rng() % 4) * 4096;
          blocks.push_back(b.alloc(4096 * (1 + rng() % 64), kTensorSite, Kind::kPoolBlock, rng() % 2, at));
          break;
        }
        case 6:
          if (!blocks.empty()) b.free(blocks[rng() % blocks.size()], Kind::kPoolBlock, rng() % 2);
          break;
        default:
          if (rng() % 16 == 0) b.op(Op::kContextReset, Kind::kUnknown, rng() % 2);
          break;
      }
      if (i % 20 == 19) b.end();
    }
    CaptureBuilder without = b;
    std::vector<format::MemoryRecord> kept;
    for (const auto &r : b.capture.memory)
      if (r.kind != static_cast<uint8_t>(Kind::kPoolBlock)) kept.push_back(r);
    without.capture.memory = kept;
    AnalysisOptions o;
    o.record_lives = true;
    Analysis with = analyze(b.capture, o), plain = analyze(without.capture, o);
    ASSERT_EQ(with.devices.size(), plain.devices.size());
    for (size_t d = 0; d < with.devices.size(); ++d) {
      EXPECT_EQ(with.devices[d].peak_live_bytes, plain.devices[d].peak_live_bytes) << round;
      EXPECT_EQ(with.devices[d].live_at_exit_bytes, plain.devices[d].live_at_exit_bytes) << round;
    }
    for (size_t i = 0; i < with.iterations.size(); ++i)
      for (size_t d = 0; d < with.devices.size(); ++d)
        EXPECT_EQ(with.iteration_device(i, d).live_end_bytes, plain.iteration_device(i, d).live_end_bytes);
  }
}

}  // namespace
}  // namespace gpuleak::analysis
