// The size bound of docs/trace-format.md: a 10,000-iteration run of 40 allocations each stays
// under 100 MB by default, with every counter track and every iteration slice in it.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <iostream>

#include "trace_test_support.h"

namespace gpuleak::testing {
namespace {

using nlohmann::json;

constexpr int kIterations = 10'000;
constexpr int kAllocations = 40;

// 40 allocations per iteration from 40 call sites, 25 us apart; all but the last freed at the
// end of the iteration (the last site leaks 4 KiB per iteration).
format::Capture long_run() {
  CaptureBuilder b(1'000'000'000, 25'000);
  b.device(0, "Fake GPU", 80ull << 30);
  b.capture.memory.reserve(static_cast<size_t>(kIterations) * (2 * kAllocations));
  std::vector<uint64_t> live;
  for (int i = 0; i < kIterations; ++i) {
    b.begin("train");
    for (int k = 1; k <= kAllocations; ++k) {
      uint64_t size = k == kAllocations ? 4096 : static_cast<uint64_t>(k) * kMiB;
      live.push_back(b.alloc(size, static_cast<uint32_t>(k)));
    }
    live.pop_back();  // the leak
    for (uint64_t p : live) b.free(p);
    live.clear();
    b.end("train");
  }
  return b.capture;
}

TEST(SizeBound, TenThousandIterationsStayUnder100MBWithEveryCounterAndIteration) {
  const format::Capture c = long_run();
  const analysis::Analysis a = analysis::analyze(c);
  ASSERT_EQ(a.primary_iterations, static_cast<uint32_t>(kIterations));

  auto started = std::chrono::steady_clock::now();
  output::trace::TraceSummary summary;
  const std::string text = json_trace(c, {}, &summary);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << "[ size ] 10,000 x 40 JSON trace: " << text.size() / 1e6 << " MB, " << summary.events << " events, "
            << summary.counter_points << " counter points of " << summary.counter_changes << " changes, "
            << summary.memory_events_shown << " of " << summary.memory_events << " allocation events, built in "
            << seconds << " s\n";
  EXPECT_LT(text.size(), 100u * 1000 * 1000);

  // Every line re-parsed by nlohmann (line by line: the whole document would need ~1 GB).
  std::vector<std::pair<double, double>> iterations;
  std::vector<double> counter_ts;
  uint64_t max_counter = 0;
  size_t pos = text.find('\n') + 1;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line == "]") break;
    if (line.back() == ',') line.pop_back();
    json e = json::parse(line);
    if (e["ph"] == "C") {
      counter_ts.push_back(e["ts"].get<double>());
      max_counter = std::max<uint64_t>(max_counter, e["args"]["bytes"]);
    } else if (e["ph"] == "X" && e["cat"] == "iteration") {
      ASSERT_EQ(e["args"]["index"], iterations.size());
      iterations.emplace_back(e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>());
    }
  }
  ASSERT_EQ(iterations.size(), static_cast<size_t>(kIterations));
  EXPECT_EQ(max_counter, a.devices[0].peak_live_bytes);
  // The live-bytes curve covers the whole run: points inside every single iteration.
  ASSERT_TRUE(std::is_sorted(counter_ts.begin(), counter_ts.end()));
  for (const auto &[start, end] : iterations) {
    auto it = std::lower_bound(counter_ts.begin(), counter_ts.end(), start);
    ASSERT_TRUE(it != counter_ts.end() && *it <= end) << "no counter point in the iteration at " << start;
  }
  EXPECT_EQ(summary.leak_markers, static_cast<uint64_t>(kIterations));

  started = std::chrono::steady_clock::now();
  const std::string proto = perfetto_trace(c);
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << "[ size ] same run, Perfetto protobuf: " << proto.size() / 1e6 << " MB, built in " << seconds << " s\n";
  EXPECT_LT(proto.size(), text.size());
}

}  // namespace
}  // namespace gpuleak::testing
