// Who keeps it (issue #30, retention.cpp): retention paths (capture format 1.7) joined by address to
// the allocations live when each was sent, per leak, and the path that holds most of a group.
#include <gtest/gtest.h>

#include "analysis/analysis.h"
#include "analysis/capture_builder.h"

namespace gpuleak::analysis {
namespace {

using format::Kind;
using testing::CaptureBuilder;
using testing::kMiB;

constexpr uint32_t kSegmentSite = 1, kKeptSite = 2, kOtherSite = 3;

// 20 iterations, each keeping one 1 MiB block from kKeptSite and one 256 KiB block from kOtherSite,
// in 64 MiB segments; `walk` runs after the loop (then the blocks are freed, as at exit).
CaptureBuilder kept_loop(std::vector<uint64_t> *kept, std::vector<uint64_t> *other) {
  CaptureBuilder b;
  uint64_t segment = b.alloc(64 * kMiB, kSegmentSite);
  for (int i = 0; i < 20; ++i) {
    b.begin("train");
    kept->push_back(b.alloc(kMiB, kKeptSite, Kind::kPoolBlock, 0, segment + static_cast<uint64_t>(i) * 2 * kMiB));
    other->push_back(
        b.alloc(kMiB / 4, kOtherSite, Kind::kPoolBlock, 0, segment + static_cast<uint64_t>(i) * 2 * kMiB + kMiB));
    b.end();
  }
  return b;
}

const Leak *leak_at(const Analysis &a, uint32_t site) {
  for (const Leak &l : a.leaks)
    if (l.site.stack_id == site) return &l;
  return nullptr;
}

TEST(Retention, EachLeakGetsThePathsThatHoldItsLiveBlocks) {
  std::vector<uint64_t> kept, other;
  CaptureBuilder b = kept_loop(&kept, &other);
  for (size_t i = 0; i < kept.size(); ++i) b.retention(kept[i], kMiB, "`history` (list) -> [20 items] -> Tensor");
  for (size_t i = 0; i < other.size(); ++i) b.retention(other[i], kMiB / 4, "`_bank` (list) -> [20 items] -> Tensor");
  b.retention(0, 1234567, "objects=500 paths=40 stopped=none");
  for (uint64_t a : kept) b.free(a, Kind::kPoolBlock);  // exit frees everything after the walk
  for (uint64_t a : other) b.free(a, Kind::kPoolBlock);
  Analysis a = analyze(b.capture);
  const Leak *k = leak_at(a, kKeptSite), *o = leak_at(a, kOtherSite);
  ASSERT_TRUE(k && o);
  uint64_t bytes = 0;
  int64_t path = retained_by(b.capture, {k}, &bytes);
  ASSERT_GE(path, 0);
  EXPECT_EQ(b.capture.retentions[static_cast<size_t>(path)].text, "`history` (list) -> [20 items] -> Tensor");
  EXPECT_EQ(bytes, 20 * kMiB);
  path = retained_by(b.capture, {o}, &bytes);
  ASSERT_GE(path, 0);
  EXPECT_EQ(b.capture.retentions[static_cast<size_t>(path)].text, "`_bank` (list) -> [20 items] -> Tensor");
  EXPECT_EQ(bytes, 5 * kMiB);
  // A group of both: the path that holds the most of its bytes.
  path = retained_by(b.capture, {o, k}, &bytes);
  EXPECT_EQ(b.capture.retentions[static_cast<size_t>(path)].text, "`history` (list) -> [20 items] -> Tensor");
  ASSERT_EQ(a.retention_walks.size(), 1u);
  EXPECT_EQ(a.retention_walks[0].duration_ns, 1234567u);
  EXPECT_EQ(a.retention_walks[0].objects, 500u);
  EXPECT_EQ(a.retention_walks[0].paths, 40u);
  EXPECT_EQ(a.retention_walks[0].stopped, "none");
}

TEST(Retention, APathToMemoryFreedBeforeItWasSentHoldsNothing) {
  std::vector<uint64_t> kept, other;
  CaptureBuilder b = kept_loop(&kept, &other);
  for (uint64_t a : kept) b.free(a, Kind::kPoolBlock);
  for (uint64_t a : kept) b.retention(a, kMiB, "`late` (list) -> Tensor");  // the blocks are gone
  Analysis a = analyze(b.capture);
  const Leak *k = leak_at(a, kKeptSite);
  ASSERT_TRUE(k);
  EXPECT_TRUE(k->retained.empty());
  uint64_t bytes = 1;
  EXPECT_EQ(retained_by(b.capture, {k}, &bytes), -1);
  EXPECT_EQ(bytes, 0u);
}

TEST(Retention, AnAddressInsideADeviceAllocationHoldsTheObjectsBytes) {
  // A pool's chunks (CuPy, JAX): the arrays lie inside one device allocation per iteration.
  CaptureBuilder b;
  std::vector<uint64_t> chunks;
  for (int i = 0; i < 20; ++i) {
    b.begin("train");
    chunks.push_back(b.alloc(2 * kMiB, kKeptSite));
    b.end();
  }
  for (uint64_t c : chunks) b.retention(c + 4096, 512 * 1024, "`arrays` (list) -> ndarray");
  b.retention(chunks.back() + 2 * kMiB + 100 * kMiB, 10, "`nowhere` -> ndarray");  // in no allocation
  b.retention(chunks[3] + 8192, 4096, "`one` (list) -> ndarray");                  // another array in one chunk
  Analysis a = analyze(b.capture);
  const Leak *k = leak_at(a, kKeptSite);
  ASSERT_TRUE(k);
  uint64_t bytes = 0;
  int64_t path = retained_by(b.capture, {k}, &bytes);
  ASSERT_GE(path, 0);
  EXPECT_EQ(b.capture.retentions[static_cast<size_t>(path)].text, "`arrays` (list) -> ndarray");
  EXPECT_EQ(bytes, 20u * 512 * 1024);  // one text, one array in each chunk
}

TEST(Retention, NoPathsNoRetention) {
  std::vector<uint64_t> kept, other;
  CaptureBuilder b = kept_loop(&kept, &other);
  Analysis a = analyze(b.capture);
  for (const Leak &l : a.leaks) EXPECT_TRUE(l.retained.empty());
  EXPECT_TRUE(a.retention_walks.empty());
}

}  // namespace
}  // namespace gpuleak::analysis
