// What a default trace keeps of the individual events, and how counters are thinned.
#include <gtest/gtest.h>

#include <set>

#include "output/trace/counter_decimation.h"
#include "output/trace/event_selection.h"
#include "output/trace/memory_events.h"
#include "trace_test_support.h"

namespace gpuleak::testing {
namespace {

using nlohmann::json;
using output::trace::TraceOptions;
using output::trace::TraceSummary;

// n iterations: a 4 MiB temporary (site 1) and a 1 KiB leak (site 2) each.
format::Capture looped(int n, bool marks = true) {
  CaptureBuilder b;
  for (int i = 0; i < n; ++i) {
    if (marks) b.begin("step");
    uint64_t tmp = b.alloc(4 * kMiB, 1);
    b.alloc(1024, 2);
    b.free(tmp);
    if (marks) b.end("step");
  }
  return b.capture;
}

std::vector<json> memory_events(const json &trace) {
  std::vector<json> out;
  for (const json &e : events(trace, "X"))
    if (e["cat"] == "memory") out.push_back(e);
  return out;
}

TEST(Selection, DefaultKeepsEdgeIterationsAndLeakingSites) {
  TraceSummary s;
  json trace = parse(json_trace(looped(50), {}, &s));
  EXPECT_EQ(s.policy, "bounded");
  auto shown = memory_events(trace);
  // 6 edge iterations x 3 events, plus the leak's allocation in the other 44.
  EXPECT_EQ(shown.size(), 6u * 3 + 44);
  EXPECT_EQ(s.memory_events_shown, shown.size());
  EXPECT_EQ(s.memory_events, 150u);
  int leak_allocs = 0;
  for (const json &e : shown) leak_allocs += e["args"]["site"] == "fn2 (file2.cpp:2)";
  EXPECT_EQ(leak_allocs, 50);
  // Counters and iteration slices stay complete.
  int iterations = 0;
  for (const json &e : events(trace, "X")) iterations += e["cat"] == "iteration";
  EXPECT_EQ(iterations, 50);
  auto about = events(trace, "M", "gpuleak_trace")[0]["args"]["events"];
  EXPECT_EQ(about["policy"], "bounded");
  EXPECT_EQ(about["detail_windows_us"].size(), 2u);
}

TEST(Selection, HugeEdgeIterationsAreCutToTheirOuterEvents) {
  TraceOptions o;
  o.edge_events = 5;
  json trace = parse(json_trace(looped(50), o));
  // The first 5 and last 5 events (2 leak allocations in each), and all 50 leak allocations.
  EXPECT_EQ(memory_events(trace).size(), 5u + 5 + 50 - 4);
}

TEST(Selection, FullKeepsEverything) {
  TraceOptions o;
  o.full = true;
  TraceSummary s;
  json trace = parse(json_trace(looped(50), o, &s));
  EXPECT_EQ(s.policy, "full");
  EXPECT_EQ(memory_events(trace).size(), 150u);
}

TEST(Selection, ARunWithoutIterationsShowsAllWhileSmallThenItsEdges) {
  TraceSummary s;
  // Every allocation from its own call site: no period for automatic detection to find.
  CaptureBuilder b;
  for (int i = 0; i < 40; ++i) b.free(b.alloc(kMiB, static_cast<uint32_t>(i + 1)));
  format::Capture small = b.capture;
  analysis::Analysis a = analysis::analyze(small);
  ASSERT_TRUE(a.iterations.empty());
  json trace = parse(json_trace(small, {}, &s));
  EXPECT_EQ(s.policy, "all");
  EXPECT_EQ(memory_events(trace).size(), 80u);

  TraceOptions o;
  o.all_events_below = 50;
  o.edge_events = 10;
  trace = parse(json_trace(small, o, &s));
  EXPECT_EQ(s.policy, "bounded");
  EXPECT_EQ(memory_events(trace).size(), 20u);
}

TEST(Selection, EventsAroundAnOomAreKept) {
  CaptureBuilder b;
  for (int i = 0; i < 30; ++i) {
    b.begin("step");
    b.free(b.alloc(kMiB, 1));
    b.end("step");
    if (i == 15) {
      b.failed_alloc(1ull << 40, 3);
      b.oom(1ull << 40, 0, 1ull << 30, 3);
    }
  }
  TraceOptions o;
  o.oom_context_events = 4;
  json trace = parse(json_trace(b.capture, o));
  int failed = 0;
  for (const json &e : memory_events(trace)) failed += e["args"].contains("result");
  EXPECT_EQ(failed, 1);
  // The first and last 3 iterations (2 events each), and 4 events on either side of the OOM.
  EXPECT_EQ(memory_events(trace).size(), 6u * 2 + 4 + 4);
}

TEST(Decimation, KeepsEveryLocalMaximumAndTheLastValueWithoutAveraging) {
  CaptureBuilder b(1'000'000'000, 100);  // 100 ns apart: 200 changes per 20 us bucket
  std::vector<uint64_t> ptrs;
  for (int burst = 0; burst < 20; ++burst) {
    for (int i = 0; i < 50; ++i) ptrs.push_back(b.alloc(kMiB * (1 + burst % 3), 1));
    for (uint64_t p : ptrs) b.free(p);
    ptrs.clear();
    b.advance(100'000);  // quiet gap between bursts
  }
  const auto lives = analysis::lives_of(b.capture, analysis::analyze(b.capture));
  const uint64_t anchor = b.capture.header.monotonic_ns;
  auto c = output::trace::decimate(*lives, anchor, 10'000, 0);
  EXPECT_LT(c.points.size(), c.changes / 10);
  // Each burst's maximum survives exactly.
  std::set<uint64_t> values;
  for (const auto &p : c.points) values.insert(p.value);
  EXPECT_TRUE(values.count(50 * kMiB));
  EXPECT_TRUE(values.count(100 * kMiB));
  EXPECT_TRUE(values.count(150 * kMiB));
  for (uint64_t v : values) EXPECT_EQ(v % kMiB, 0u);  // no averages
  EXPECT_EQ(c.points.back().value, 0u);
  // At most 3 points per bucket and track (its min, max and last), and the starting zero.
  std::map<int64_t, int> per_bucket;
  const int64_t first = static_cast<int64_t>(lives->times[lives->devices[0].live.positions.front()] - anchor);
  for (const auto &p : c.points) ++per_bucket[(p.ts_ns - first) / static_cast<int64_t>(c.bucket_ns)];
  for (auto &[bucket, n] : per_bucket) EXPECT_LE(n, 4) << bucket;
}

TEST(Decimation, TheOverallCapWidensBuckets) {
  format::Capture c = looped(2000);
  const analysis::Analysis a = analysis::analyze(c);
  auto d = output::trace::decimate(*analysis::lives_of(c, a), c.header.monotonic_ns, 1, 500);
  EXPECT_LE(d.points.size(), 500u);
  EXPECT_GT(d.bucket_ns, 2u);
  uint64_t max = 0;
  for (const auto &p : d.points) max = std::max(max, p.value);
  EXPECT_EQ(max, a.devices[0].peak_live_bytes);
}

// Which allocation each event made or ended, in the analysis's time order.
TEST(MemoryEvents, AFreeNamesTheAllocationItReleasedInTimeOrder) {
  CaptureBuilder b;
  uint64_t p = b.alloc(kMiB, 42);
  b.free(p);
  b.alloc(2 * kMiB, 43);
  std::swap(b.capture.memory[1], b.capture.memory[2]);  // a thread's buffer drained late
  output::trace::MemoryEvents events(b.capture, analysis::analyze(b.capture));
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events.at(1).op, static_cast<uint8_t>(format::Op::kFree));
  ASSERT_NE(events.life_of(1), output::trace::kNoEvent);
  const auto &life = events.lives().lives[events.life_of(1)];
  EXPECT_EQ(life.site.stack_id, 42u);
  EXPECT_EQ(life.death, 1u);
  EXPECT_EQ(events.lives().lives[events.life_of(2)].site.stack_id, 43u);
  EXPECT_LT(events.time(1), events.time(2));
}

}  // namespace
}  // namespace gpuleak::testing
