// The JSON trace: every line re-parsed by nlohmann, every track present, numbers equal to the
// analysis', hostile strings harmless, a cut-short file still loadable.
#include <gtest/gtest.h>

#include <algorithm>

#include "output/report_json.h"
#include "trace_test_support.h"

namespace gpuleak::testing {
namespace {

using nlohmann::json;

TEST(ChromeTrace, EveryLineIsOneCompleteEventAndTheWholeParses) {
  std::string text = json_trace(rich_capture());
  ASSERT_EQ(text.substr(0, 2), "[\n");
  ASSERT_EQ(text.substr(text.size() - 3), "\n]\n");
  size_t pos = 2, lines = 0;
  while (true) {
    size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl - pos);
    if (line == "]") break;
    if (!line.empty() && line.back() == ',') line.pop_back();
    json event = json::parse(line);  // throws on a torn or multi-line event
    EXPECT_TRUE(event.is_object());
    ++lines;
    pos = nl + 1;
  }
  json trace = parse(text);
  EXPECT_EQ(trace.size(), lines);
}

TEST(ChromeTrace, MetadataNamesTheProcessAndAnchorsTheClock) {
  format::Capture c = rich_capture();
  json trace = parse(json_trace(c));
  auto about = events(trace, "M", "gpuleak_trace");
  ASSERT_EQ(about.size(), 1u);
  EXPECT_EQ(trace[0]["name"], "gpuleak_trace");  // first: merge finds it without reading on
  const json &args = about[0]["args"];
  EXPECT_EQ(args["gpuleak_trace_version"], 1);
  EXPECT_EQ(args["realtime_anchor_ns"], c.header.realtime_ns);
  EXPECT_EQ(args["monotonic_anchor_ns"], c.header.monotonic_ns);
  EXPECT_EQ(args["rank"], 3);
  EXPECT_EQ(args["gpu_activity"], "GPU activity unavailable (CUPTI off)");
  auto name = events(trace, "M", "process_name");
  ASSERT_EQ(name.size(), 1u);
  EXPECT_EQ(name[0]["args"]["name"], "train.py (pid 4242, rank 3)");
  EXPECT_EQ(name[0]["pid"], 4242);
  EXPECT_EQ(events(trace, "M", "process_sort_index")[0]["args"]["sort_index"], 3);
  std::vector<std::string> threads;
  for (const json &t : events(trace, "M", "thread_name")) threads.push_back(t["args"]["name"]);
  EXPECT_NE(std::find(threads.begin(), threads.end(), "iterations"), threads.end());
  EXPECT_NE(std::find(threads.begin(), threads.end(), "leaks"), threads.end());
  EXPECT_NE(std::find(threads.begin(), threads.end(), "thread 2"), threads.end());
  auto note = events(trace, "i", "GPU activity unavailable (CUPTI off)");
  ASSERT_EQ(note.size(), 1u);
  EXPECT_EQ(note[0]["s"], "p");
}

TEST(ChromeTrace, CountersAndIterationsCarryTheAnalysisNumbers) {
  format::Capture c = rich_capture();
  analysis::Analysis a = analysis::analyze(c);
  json trace = parse(json_trace(c));
  auto counters = events(trace, "C", "cuda:0 live");
  ASSERT_FALSE(counters.empty());
  uint64_t max = 0;
  for (const json &e : counters) {
    ASSERT_EQ(e["args"].size(), 1u);  // one value per event
    max = std::max<uint64_t>(max, e["args"]["bytes"]);
  }
  EXPECT_EQ(max, a.devices[0].peak_live_bytes);
  EXPECT_EQ(counters.back()["args"]["bytes"], a.devices[0].live_at_exit_bytes);

  auto iterations = events(trace, "X");
  iterations.erase(
      std::remove_if(iterations.begin(), iterations.end(), [](const json &e) { return e["cat"] != "iteration"; }),
      iterations.end());
  ASSERT_EQ(iterations.size(), 12u);
  for (size_t i = 0; i < iterations.size(); ++i) {
    const json &e = iterations[i];
    EXPECT_EQ(e["name"], "train #" + std::to_string(i));
    EXPECT_EQ(e["args"]["index"], i);
    EXPECT_EQ(e["args"]["loop"], "train");
    const analysis::IterationDevice d = a.iteration_device(i, 0);
    EXPECT_EQ(e["args"]["cuda:0"]["live_end_bytes"], d.live_end_bytes);
    EXPECT_EQ(e["args"]["cuda:0"]["peak_bytes"], d.peak_bytes);
    EXPECT_EQ(e["args"]["cuda:0"]["allocated_bytes"], d.allocated_bytes);
    EXPECT_EQ(e["args"]["cuda:0"]["freed_bytes"], d.freed_bytes);
    EXPECT_EQ(e["args"]["cuda:0"]["alloc_count"], d.alloc_count);
    EXPECT_EQ(e["args"]["cuda:0"]["free_count"], d.free_count);
    EXPECT_DOUBLE_EQ(e["ts"].get<double>(), a.iterations[i].start_ns / 1000.0);
    EXPECT_DOUBLE_EQ(e["dur"].get<double>(), (a.iterations[i].end_ns - a.iterations[i].start_ns) / 1000.0);
  }
}

TEST(ChromeTrace, LeakMarkersPointAtTheIterationsThatLeftMemory) {
  format::Capture c = rich_capture();
  analysis::Analysis a = analysis::analyze(c);
  ASSERT_EQ(a.leaks.size(), 1u);
  json trace = parse(json_trace(c));
  std::vector<json> markers;
  for (const json &e : events(trace, "i"))
    if (e["cat"] == "leak") markers.push_back(e);
  ASSERT_EQ(markers.size(), 12u);  // every iteration left its 1 MiB behind
  uint64_t bytes = 0;
  const std::string expected_id = output::site_id(fake_symbolizer()(2));
  for (size_t i = 0; i < markers.size(); ++i) {
    EXPECT_EQ(markers[i]["args"]["iteration"], i);
    EXPECT_EQ(markers[i]["args"]["site_id"], expected_id);
    EXPECT_EQ(markers[i]["args"]["function"], "fn2 (file2.cpp:2)");
    EXPECT_NEAR(markers[i]["args"]["bytes_per_iteration"].get<double>(), 1 << 20, 1);
    bytes += markers[i]["args"]["bytes"].get<uint64_t>();
  }
  EXPECT_EQ(bytes, a.leaks[0].live_bytes);
}

TEST(ChromeTrace, OomIsAGlobalMarkerWithWhatWasLive) {
  format::Capture c = rich_capture();
  analysis::Analysis a = analysis::analyze(c);
  json trace = parse(json_trace(c));
  std::vector<json> ooms;
  for (const json &e : events(trace, "i"))
    if (e["cat"] == "oom") ooms.push_back(e);
  ASSERT_EQ(ooms.size(), 1u);
  EXPECT_EQ(ooms[0]["s"], "g");
  EXPECT_EQ(ooms[0]["args"]["requested_bytes"], 2ull << 30);
  EXPECT_EQ(ooms[0]["args"]["live_bytes"], a.ooms[0].live_bytes);
  EXPECT_EQ(ooms[0]["args"]["recovered"], false);
  EXPECT_EQ(ooms[0]["args"]["function"], "fn4 (file4.cpp:4)");
  EXPECT_EQ(ooms[0]["args"]["top_live_sites"][0]["function"], "fn2 (file2.cpp:2)");
}

TEST(ChromeTrace, AllocationsSitOnTheirThreadAndNvtxRangesNest) {
  json trace = parse(json_trace(rich_capture()));
  int on_thread_2 = 0, failed = 0;
  for (const json &e : events(trace, "X")) {
    if (e["cat"] != "memory") continue;
    EXPECT_TRUE(e["args"].contains("size"));
    EXPECT_TRUE(e["args"]["address"].get<std::string>().rfind("0x", 0) == 0);
    on_thread_2 += e["tid"] == 2;
    failed += e["name"] == "none failed" || e["args"].contains("result");
  }
  EXPECT_EQ(on_thread_2, 2);
  EXPECT_EQ(failed, 1);
  // Push/pop ranges: balanced per thread, each E after its B.
  std::map<int64_t, int> depth;
  for (const json &e : trace) {
    if (e["ph"] == "B") ++depth[e["tid"].get<int64_t>()];
    if (e["ph"] == "E") {
      ASSERT_GE(--depth[e["tid"].get<int64_t>()], 0);
    }
  }
  for (auto &[tid, d] : depth) EXPECT_EQ(d, 0) << tid;
  EXPECT_EQ(events(trace, "B", "forward").size(), 12u);
  auto begin = events(trace, "b", "epoch"), end = events(trace, "e", "epoch");
  ASSERT_EQ(begin.size(), 1u);
  ASSERT_EQ(end.size(), 1u);
  EXPECT_EQ(begin[0]["id"], end[0]["id"]);
  EXPECT_EQ(begin[0]["cat"], "nvtx");
}

TEST(ChromeTrace, EventsAreInTimeOrder) {
  json trace = parse(json_trace(rich_capture()));
  double last = -1e300;
  for (const json &e : trace) {
    if (e["ph"] == "M") continue;
    double ts = e["ts"].get<double>();
    EXPECT_GE(ts, last) << e.dump();
    last = ts;
  }
}

TEST(ChromeTrace, ACutShortFileStillLoadsTheWayViewersRepairIt) {
  std::string text = json_trace(rich_capture());
  size_t cut = text.find('\n', text.size() / 2);  // after some whole line, mid-file
  std::string prefix = text.substr(0, cut);
  // catapult and Perfetto: drop one trailing comma, add the missing "]".
  while (!prefix.empty() && (prefix.back() == ',' || prefix.back() == '\n')) prefix.pop_back();
  json trace = json::parse(prefix + "]");
  EXPECT_GT(trace.size(), 10u);
}

TEST(ChromeTrace, HostileStringsStayValidJson) {
  const std::string evil = "q\"uo\\te\n\t\x01\x1f ctl \xff\xfe bad </script><script>alert(1)</script>";
  CaptureBuilder b;
  format::RunInfo run;
  run.fixed.pid = 7;
  run.fixed.rank = -1;
  run.program = evil;
  run.host = evil;
  b.capture.run = run;
  b.push(evil);
  uint64_t p = b.alloc(kMiB, 9);
  b.pop();
  b.free(p);
  b.start(evil, 5);
  b.end_range(5);
  b.capture.markers.push_back({b.now() + 1, 1, b.str(evil), static_cast<uint8_t>(format::MarkerOp::kMark), {}});
  std::string text = json_trace(b.capture, {}, nullptr, fake_symbolizer({{9, evil}}));
  EXPECT_EQ(text.find("</script>"), std::string::npos);
  EXPECT_EQ(text.find("</"), std::string::npos);
  json trace = parse(text);
  const std::string repaired = events(trace, "B")[0]["name"];
  EXPECT_NE(repaired.find("q\"uo\\te\n\t\x01\x1f ctl "), std::string::npos);
  EXPECT_NE(repaired.find("\xEF\xBF\xBD"), std::string::npos);  // U+FFFD for the bad bytes
  EXPECT_NE(repaired.find("</script>"), std::string::npos);     // "<\/" decodes back to "</"
  bool site_seen = false;
  for (const json &e : events(trace, "X"))
    site_seen |= e["args"].value("site", "").find("alert(1)") != std::string::npos;
  EXPECT_TRUE(site_seen);
}

TEST(ChromeTrace, AnEmptyCaptureIsAValidTrace) {
  CaptureBuilder b;
  json trace = parse(json_trace(b.capture));
  EXPECT_EQ(events(trace, "M", "gpuleak_trace").size(), 1u);
  EXPECT_EQ(events(trace, "i", "GPU activity unavailable (CUPTI off)").size(), 1u);
}

}  // namespace
}  // namespace gpuleak::testing
