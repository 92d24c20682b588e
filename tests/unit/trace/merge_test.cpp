// Merging traces: ranks in order, one clock, no pid clashes, inputs of every shape.
#include <gtest/gtest.h>

#include <fstream>

#include "output/trace/chrome_trace_reader.h"
#include "output/trace/trace_merge.h"
#include "trace_test_support.h"

namespace gpuleak::testing {
namespace {

using nlohmann::json;
using namespace output::trace;
using output::ReadOptions;

format::Capture ranked(int rank, uint32_t pid, uint64_t realtime_offset_ns) {
  format::Capture c = rich_capture();
  c.run->fixed.rank = rank;
  c.run->fixed.pid = pid;
  c.header.realtime_ns += realtime_offset_ns;
  return c;
}

std::string write_trace(const std::string &dir, const std::string &name, const format::Capture &c) {
  std::string path = dir + "/" + name;
  std::string error;
  auto file = OutputFile::create(path, &error);
  EXPECT_TRUE(file) << error;
  file->write(json_trace(c));
  EXPECT_TRUE(file->commit(&error)) << error;
  return path;
}

json merge(const std::vector<std::string> &paths, std::vector<std::string> *warnings = nullptr,
           MergeSummary *summary = nullptr) {
  StringStream out;
  MergeSummary s;
  std::vector<std::string> w;
  std::string error;
  EXPECT_TRUE(merge_traces(paths, ReadOptions{}, TraceOptions{}, &out, &s, &w, &error)) << error;
  if (warnings) *warnings = w;
  if (summary) *summary = s;
  return parse(out.data);
}

// ts of the first counter event of a pid.
double first_counter(const json &trace, int64_t pid) {
  for (const json &e : trace)
    if (e["ph"] == "C" && e["pid"] == pid) return e["ts"].get<double>();
  ADD_FAILURE() << "no counter for pid " << pid;
  return 0;
}

TEST(Merge, OrdersByRankAndAlignsOnTheRealtimeAnchors) {
  std::string dir = temp_dir("merge");
  // Rank 1 started 5 ms after rank 0; given first, and gzip-compressed.
  std::string r1 = write_trace(dir, "r1.trace.json.gz", ranked(1, 200, 5'000'000));
  std::string r0 = write_trace(dir, "r0.trace.json", ranked(0, 100, 0));
  json alone = parse(read_text(r1));
  MergeSummary summary;
  json merged = merge({r1, r0}, nullptr, &summary);
  ASSERT_EQ(summary.order.size(), 2u);
  EXPECT_EQ(summary.order[0], r0 + " (rank 0)");

  ASSERT_EQ(merged[0]["name"], "gpuleak_trace");
  const json &about = merged[0]["args"];
  EXPECT_EQ(about["merged"], true);
  EXPECT_EQ(about["realtime_anchor_ns"], ranked(0, 100, 0).header.realtime_ns);
  EXPECT_EQ(about["inputs"][1]["ts_shift_us"], 5000.0);

  std::map<int64_t, int64_t> sort_index;
  for (const json &e : events(merged, "M", "process_sort_index")) sort_index[e["pid"]] = e["args"]["sort_index"];
  EXPECT_EQ(sort_index[100], 0);
  EXPECT_EQ(sort_index[200], 1);
  EXPECT_DOUBLE_EQ(first_counter(merged, 200), first_counter(alone, 200) + 5000.0);
  EXPECT_DOUBLE_EQ(first_counter(merged, 100), first_counter(parse(read_text(r0)), 100));
  EXPECT_EQ(events(merged, "M", "gpuleak_process").size(), 2u);
  EXPECT_EQ(events(merged, "X").size(), 2 * events(alone, "X").size());
}

TEST(Merge, ClashingPidsAreRenumberedAndCapturesConverted) {
  std::string dir = temp_dir("merge-pid");
  std::string a = write_trace(dir, "a.trace.json", ranked(0, 100, 0));
  std::string capture = dir + "/b.gpuleak";
  write_capture_file(capture, ranked(1, 100, 1'000'000));
  json merged = merge({a, capture});
  std::set<int64_t> pids;
  for (const json &e : merged)
    if (e.contains("pid") && e["pid"] != 0) pids.insert(e["pid"].get<int64_t>());
  EXPECT_EQ(pids.size(), 2u);
  EXPECT_TRUE(pids.count(100));
  auto names = events(merged, "M", "process_name");
  ASSERT_EQ(names.size(), 2u);
  EXPECT_NE(names[0]["pid"], names[1]["pid"]);
}

TEST(Merge, ACutShortTraceAndAForeignObjectTraceMergeWithWarnings) {
  std::string dir = temp_dir("merge-odd");
  std::string whole = json_trace(ranked(0, 100, 0));
  std::string cut = whole.substr(0, whole.size() / 2);  // mid-line: the last event is torn
  std::ofstream(dir + "/cut.trace.json") << cut;
  std::ofstream(dir + "/torch.json") << R"({"traceEvents": [
      {"ph": "X", "name": "aten::mm", "pid": 7, "tid": 7, "ts": 10, "dur": 5},
      {"ph": "i", "name": "[memory]", "pid": 7, "tid": 7, "ts": 12, "s": "t"}],
    "displayTimeUnit": "ms"})";
  std::vector<std::string> warnings;
  json merged = merge({dir + "/cut.trace.json", dir + "/torch.json"}, &warnings);
  EXPECT_EQ(events(merged, "X", "aten::mm").size(), 1u);
  EXPECT_EQ(events(merged, "X", "aten::mm")[0]["ts"], 10);  // no anchor: not moved
  bool cut_warned = false, anchor_warned = false;
  for (const auto &w : warnings) {
    cut_warned |= w.find("cut short") != std::string::npos;
    anchor_warned |= w.find("torch.json: no gpuleak_trace realtime anchor") != std::string::npos;
  }
  EXPECT_TRUE(cut_warned);
  EXPECT_TRUE(anchor_warned);
}

TEST(Merge, ItsOwnOutputMergesAgain) {
  std::string dir = temp_dir("merge-again");
  StringStream first;
  MergeSummary s;
  std::vector<std::string> w;
  std::string error;
  ASSERT_TRUE(merge_traces({write_trace(dir, "a.json", ranked(0, 1, 0)), write_trace(dir, "b.json", ranked(1, 2, 0))},
                           ReadOptions{}, TraceOptions{}, &first, &s, &w, &error));
  std::ofstream(dir + "/ab.json") << first.data;
  json again = merge({dir + "/ab.json", write_trace(dir, "c.json", ranked(2, 3, 2'000'000))});
  EXPECT_EQ(events(again, "M", "process_name").size(), 3u);
  EXPECT_DOUBLE_EQ(first_counter(again, 3), first_counter(parse(read_text(dir + "/c.json")), 3) + 2000.0);
}

TEST(Merge, GarbageIsAOneLineError) {
  std::string dir = temp_dir("merge-bad");
  std::ofstream(dir + "/bad.json") << "{ not json";
  StringStream out;
  MergeSummary s;
  std::vector<std::string> w;
  std::string error;
  EXPECT_FALSE(merge_traces({dir + "/bad.json"}, ReadOptions{}, TraceOptions{}, &out, &s, &w, &error));
  EXPECT_NE(error.find("bad.json"), std::string::npos);
  EXPECT_EQ(error.find('\n'), std::string::npos);
  EXPECT_FALSE(merge_traces({dir + "/missing.json"}, ReadOptions{}, TraceOptions{}, &out, &s, &w, &error));
}

TEST(TraceReader, RepairsTheArrayFormLikeTheViewers) {
  TraceReadStats stats;
  std::string error;
  int n = 0;
  auto count = [&](json &) { return ++n, true; };
  EXPECT_TRUE(
      read_chrome_trace("[{\"ph\":\"i\",\"ts\":1},\n{\"ph\":\"i\",\"ts\":2},\n{\"ph\":\"i\",", count, &stats, &error));
  EXPECT_EQ(n, 2);
  EXPECT_TRUE(stats.repaired);
  n = 0;
  EXPECT_TRUE(read_chrome_trace("[{\"ph\":\"i\"},", count, &stats, &error));
  EXPECT_EQ(n, 1);
  EXPECT_FALSE(read_chrome_trace("42", count, &stats, &error));
  EXPECT_FALSE(read_chrome_trace("", count, &stats, &error));
  EXPECT_FALSE(read_chrome_trace("{\"a\":1}", count, &stats, &error));
}

}  // namespace
}  // namespace gpuleak::testing
