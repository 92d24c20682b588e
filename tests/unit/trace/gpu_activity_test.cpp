// GPU work on the timeline (capture format 1.1 kGpuActivity): slices on "GPU d / stream s" rows,
// a flow from each launching host call, hostile kernel names escaped, bounded volume, and the same
// flows in the Perfetto protobuf.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "output/trace/perfetto_fields.h"
#include "trace_test_support.h"

namespace gpuleak::testing {
namespace {

using format::GpuActivityKind;
using format::GpuActivityRecord;
using nlohmann::json;

const std::string kHostile = std::string("k\"ern\\el<\x01\x1f\xff\xfe</script>");

uint32_t add_string(format::Capture *c, const std::string &s) {
  uint32_t id = 1000 + static_cast<uint32_t>(c->strings.size());
  c->strings[id] = s;
  return id;
}

// A GPU record `offset_ns` after the capture's start, launched `lead_ns` before by thread `tid`.
GpuActivityRecord &add_gpu(format::Capture *c, GpuActivityKind kind, uint64_t offset_ns, uint64_t dur_ns,
                           uint32_t tid = 4242, uint64_t stream = 7, uint64_t lead_ns = 500) {
  GpuActivityRecord r{};
  r.kind = static_cast<uint8_t>(kind);
  r.start_ns = c->header.monotonic_ns + offset_ns;
  r.end_ns = r.start_ns + dur_ns;
  r.stream = stream;
  r.device = 0;
  r.context_id = 1;
  r.correlation_id = static_cast<uint32_t>(c->gpu_activity.size() + 1);
  if (tid) {
    r.host_tid = tid;
    r.host_ts_ns = r.start_ns - lead_ns;
    r.host_dur_ns = 200;
  }
  c->gpu_activity.push_back(r);
  return c->gpu_activity.back();
}

format::Capture capture_with_gpu_work() {
  format::Capture c = rich_capture();
  GpuActivityRecord &k = add_gpu(&c, GpuActivityKind::kKernel, 5000, 3000);
  k.name_id = add_string(&c, kHostile);
  k.api_name_id = add_string(&c, "cuLaunchKernel");
  GpuActivityRecord &m = add_gpu(&c, GpuActivityKind::kMemcpy, 9000, 1000);
  m.bytes = 4096;
  m.copy_kind = 1;
  m.api_name_id = add_string(&c, "cuMemcpyHtoD_v2");
  GpuActivityRecord &s = add_gpu(&c, GpuActivityKind::kMemset, 12000, 500, 2, 9);
  s.bytes = 65536;
  add_gpu(&c, GpuActivityKind::kKernel, 14000, 100, 0);  // no host call known: a slice, no flow
  GpuActivityRecord lost{};
  lost.kind = static_cast<uint8_t>(GpuActivityKind::kDropped);
  lost.bytes = 5;
  c.gpu_activity.push_back(lost);
  return c;
}

std::map<int64_t, std::string> thread_names(const json &trace) {
  std::map<int64_t, std::string> names;
  for (const json &t : events(trace, "M", "thread_name")) names[t["tid"].get<int64_t>()] = t["args"]["name"];
  return names;
}

TEST(GpuActivityTrace, SlicesOnStreamRowsWithFlowsFromTheLaunchingCall) {
  json trace = parse(json_trace(capture_with_gpu_work()));
  auto names = thread_names(trace);
  std::vector<json> gpu;
  for (const json &e : events(trace, "X"))
    if (e["cat"] == "gpu.kernel" || e["cat"] == "gpu.memory") gpu.push_back(e);
  ASSERT_EQ(gpu.size(), 4u);
  EXPECT_EQ(names[gpu[0]["tid"].get<int64_t>()], "GPU 0 / stream 7");
  EXPECT_EQ(names[gpu[2]["tid"].get<int64_t>()], "GPU 0 / stream 9");
  EXPECT_EQ(gpu[1]["name"], "Memcpy HtoD");
  EXPECT_EQ(gpu[1]["args"]["bytes"], 4096);
  EXPECT_EQ(gpu[1]["args"]["copy_kind"], "HtoD");
  EXPECT_EQ(gpu[2]["name"], "Memset");
  EXPECT_EQ(gpu[0]["args"]["launched_by"], "cuLaunchKernel");
  EXPECT_EQ(gpu[0]["ts"], 5);  // us since the capture's start
  EXPECT_EQ(gpu[0]["dur"], 3);

  // Flows: one "s" and one "f" per id, same name and category; "f" binds to the GPU slice that
  // starts where it is, "s" sits inside a launch slice of the host thread.
  auto starts = events(trace, "s"), finishes = events(trace, "f");
  ASSERT_EQ(starts.size(), 3u);
  ASSERT_EQ(finishes.size(), 3u);
  std::set<uint64_t> ids;
  for (const json &s : starts) ids.insert(s["id"].get<uint64_t>());
  EXPECT_EQ(ids.size(), 3u);
  std::vector<json> launches = events(trace, "X");
  launches.erase(std::remove_if(launches.begin(), launches.end(), [](const json &e) { return e["cat"] != "launch"; }),
                 launches.end());
  ASSERT_EQ(launches.size(), 3u);
  EXPECT_EQ(launches[0]["name"], "cuLaunchKernel");
  EXPECT_EQ(names[launches[0]["tid"].get<int64_t>()], "main thread 4242");
  EXPECT_EQ(names[launches[2]["tid"].get<int64_t>()], "thread 2");
  for (const json &s : starts) {
    auto f = std::find_if(finishes.begin(), finishes.end(), [&](const json &x) { return x["id"] == s["id"]; });
    ASSERT_NE(f, finishes.end());
    EXPECT_EQ((*f)["bp"], "e");
    EXPECT_EQ((*f)["cat"], s["cat"]);
    EXPECT_EQ((*f)["name"], s["name"]);
    bool on_gpu_slice = std::any_of(gpu.begin(), gpu.end(),
                                    [&](const json &g) { return g["tid"] == (*f)["tid"] && g["ts"] == (*f)["ts"]; });
    EXPECT_TRUE(on_gpu_slice) << f->dump();
    bool in_launch = std::any_of(launches.begin(), launches.end(), [&](const json &l) {
      return l["tid"] == s["tid"] && l["ts"].get<double>() <= s["ts"].get<double>() &&
             s["ts"].get<double>() <= l["ts"].get<double>() + l["dur"].get<double>();
    });
    EXPECT_TRUE(in_launch) << s.dump();
    EXPECT_LT(s["ts"].get<double>(), (*f)["ts"].get<double>());
  }
  const json about = events(trace, "M", "gpuleak_trace")[0]["args"];
  EXPECT_EQ(about["gpu_activity"], "GPU activity from CUPTI: 2 kernels, 1 copy, 1 memset");
  EXPECT_EQ(about["gpu_activity_events"]["dropped_while_capturing"], 5);
  EXPECT_EQ(about["gpu_activity_events"]["shown"], 4);
}

TEST(GpuActivityTrace, HostileKernelNamesAreEscapedAndRepaired) {
  std::string text = json_trace(capture_with_gpu_work());
  EXPECT_EQ(text.find("</script>"), std::string::npos);
  EXPECT_EQ(text.find('\x01'), std::string::npos);
  EXPECT_EQ(text.find('\xff'), std::string::npos);
  json trace = parse(text);
  auto kernel =
      std::find_if(trace.begin(), trace.end(), [](const json &e) { return e.value("cat", "") == "gpu.kernel"; });
  ASSERT_NE(kernel, trace.end());
  const std::string name = (*kernel)["name"];
  EXPECT_EQ(name.substr(0, 10), "k\"ern\\el<\x01");
  EXPECT_NE(name.find("\xEF\xBF\xBD"), std::string::npos);  // U+FFFD for the invalid bytes
  EXPECT_NE(name.find("</script>"), std::string::npos);     // as text, once parsed
}

TEST(GpuActivityTrace, EventsAreInTimeOrderAndCountersMonotonic) {
  json trace = parse(json_trace(capture_with_gpu_work()));
  double last = -1e300;
  std::map<std::string, double> last_counter;
  for (const json &e : trace) {
    if (e["ph"] == "M") continue;
    double ts = e["ts"].get<double>();
    EXPECT_GE(ts, last) << e.dump();
    last = ts;
  }
}

TEST(GpuActivityTrace, OverlapOnOneStreamIsClippedSoTheRowNests) {
  format::Capture c = rich_capture();
  add_gpu(&c, GpuActivityKind::kKernel, 5000, 3000);
  add_gpu(&c, GpuActivityKind::kKernel, 6000, 3000);
  json trace = parse(json_trace(c));
  std::vector<json> kernels;
  for (const json &e : events(trace, "X"))
    if (e["cat"] == "gpu.kernel") kernels.push_back(e);
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[1]["ts"], 8);
  EXPECT_EQ(kernels[1]["dur"], 1);
  EXPECT_EQ(kernels[1]["args"]["start_clipped"], true);
}

TEST(GpuActivityTrace, BoundedToTheDetailWindowsUnlessFull) {
  format::Capture c = rich_capture();
  const uint64_t span = c.memory.back().ts_ns - c.header.monotonic_ns;
  for (int i = 0; i < 400; ++i) add_gpu(&c, GpuActivityKind::kKernel, span * i / 400, 10, 4242, 7, 5);
  output::trace::TraceOptions bounded;
  bounded.max_gpu_activities = 50;
  output::trace::TraceSummary s;
  json trace = parse(json_trace(c, bounded, &s));
  EXPECT_EQ(s.gpu_activities, 400u);
  EXPECT_LE(s.gpu_activities_shown, 50u);
  EXPECT_GT(s.gpu_activities_shown, 0u);
  EXPECT_EQ(events(trace, "s").size(), s.gpu_activities_shown);
  EXPECT_EQ(events(trace, "f").size(), s.gpu_activities_shown);
  EXPECT_EQ(events(trace, "M", "gpuleak_trace")[0]["args"]["gpu_activity_events"]["policy"], "windows");
  output::trace::TraceOptions full = bounded;
  full.full = true;
  json_trace(c, full, &s);
  EXPECT_EQ(s.gpu_activities_shown, 400u);
}

TEST(GpuActivityTrace, PerfettoSlicesCarryMatchingFlowIds) {
  std::string bytes = perfetto_trace(capture_with_gpu_work());
  std::vector<PbField> trace;
  ASSERT_TRUE(pb_decode(bytes, &trace));
  std::multiset<uint64_t> out, in;
  for (const PbField &packet : pb_fields(trace, output::trace::pf::kTracePacket)) {
    auto fields = pb_message(packet);
    const PbField *te = pb_field(fields, output::trace::pf::kPacketTrackEvent);
    if (!te) continue;
    auto event = pb_message(*te);
    for (const PbField &f : pb_fields(event, output::trace::pf::kEventFlowIds)) {
      EXPECT_EQ(f.wire, 1);
      out.insert(f.value);
    }
    for (const PbField &f : pb_fields(event, output::trace::pf::kEventTerminatingFlowIds)) in.insert(f.value);
  }
  EXPECT_EQ(out.size(), 3u);
  EXPECT_EQ(out, in);
}

}  // namespace
}  // namespace gpuleak::testing
