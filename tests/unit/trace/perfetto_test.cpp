// The Perfetto protobuf trace, decoded by a hand-written decoder (trace_test_support.h) and,
// where protoc and Perfetto's schema are installed, by `protoc --decode`.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "output/trace/perfetto_fields.h"
#include "trace_test_support.h"

namespace gpuleak::testing {
namespace {

namespace pf = output::trace::pf;
using nlohmann::json;

struct Decoded {
  struct TrackInfo {
    std::string name;
    bool has_parent = false;
    bool counter_bytes = false;
    int64_t pid = 0, tid = 0;
  };
  struct Ev {
    uint64_t ts = 0;
    uint64_t type = 0;
    uint64_t track = 0;
    std::string name;
    int64_t counter = 0;
    std::map<std::string, PbField> annotations;
  };
  std::map<uint64_t, TrackInfo> tracks;
  std::string process_name;
  int64_t process_pid = 0;
  std::vector<Ev> events;
};

Decoded decode_trace(const std::string &bytes) {
  Decoded d;
  std::vector<PbField> trace;
  EXPECT_TRUE(pb_decode(bytes, &trace));
  for (const PbField &p : trace) {
    EXPECT_EQ(p.number, pf::kTracePacket);
    auto packet = pb_message(p);
    const PbField *seq = pb_field(packet, pf::kPacketTrustedSequenceId);
    EXPECT_TRUE(seq && seq->value == 1);
    if (const PbField *td = pb_field(packet, pf::kPacketTrackDescriptor)) {
      auto desc = pb_message(*td);
      uint64_t uuid = pb_field(desc, pf::kTrackUuid)->value;
      Decoded::TrackInfo &t = d.tracks[uuid];
      if (const PbField *proc = pb_field(desc, pf::kTrackProcess)) {
        auto pd = pb_message(*proc);
        d.process_pid = static_cast<int64_t>(pb_field(pd, pf::kProcessPid)->value);
        d.process_name = pb_field(pd, pf::kProcessName)->bytes;
        t.name = d.process_name;
      }
      if (const PbField *th = pb_field(desc, pf::kTrackThread)) {
        auto td2 = pb_message(*th);
        t.pid = static_cast<int64_t>(pb_field(td2, pf::kThreadPid)->value);
        t.tid = static_cast<int64_t>(pb_field(td2, pf::kThreadTid)->value);
        t.name = pb_field(td2, pf::kThreadName)->bytes;
      }
      if (const PbField *n = pb_field(desc, pf::kTrackName)) t.name = n->bytes;
      t.has_parent = pb_field(desc, pf::kTrackParentUuid) != nullptr;
      if (const PbField *c = pb_field(desc, pf::kTrackCounter)) {
        auto cd = pb_message(*c);
        const PbField *unit = pb_field(cd, pf::kCounterUnit);
        t.counter_bytes = unit && unit->value == pf::kCounterUnitSizeBytes;
      }
    }
    if (const PbField *te = pb_field(packet, pf::kPacketTrackEvent)) {
      auto ev = pb_message(*te);
      Decoded::Ev e;
      e.ts = pb_field(packet, pf::kPacketTimestamp)->value;
      e.type = pb_field(ev, pf::kEventType)->value;
      e.track = pb_field(ev, pf::kEventTrackUuid)->value;
      if (const PbField *n = pb_field(ev, pf::kEventName)) e.name = n->bytes;
      if (const PbField *v = pb_field(ev, pf::kEventCounterValue)) e.counter = static_cast<int64_t>(v->value);
      for (const PbField &a : pb_fields(ev, pf::kEventDebugAnnotations)) {
        auto ann = pb_message(a);
        e.annotations[pb_field(ann, pf::kAnnotationName)->bytes] = ann.size() > 1 ? ann[1] : PbField{};
      }
      d.events.push_back(std::move(e));
    }
  }
  return d;
}

TEST(PerfettoTrace, DecodesIntoTheSameTimelineAsTheJson) {
  format::Capture c = rich_capture();
  analysis::Analysis a = analysis::analyze(c);
  Decoded d = decode_trace(perfetto_trace(c));
  EXPECT_EQ(d.process_pid, 4242);
  EXPECT_EQ(d.process_name, "train.py (pid 4242, rank 3)");

  std::map<std::string, uint64_t> by_name;
  for (const auto &[uuid, t] : d.tracks) by_name[t.name] = uuid;
  ASSERT_TRUE(by_name.count("cuda:0 live"));
  EXPECT_TRUE(d.tracks[by_name["cuda:0 live"]].counter_bytes);
  ASSERT_TRUE(by_name.count("iterations"));
  ASSERT_TRUE(by_name.count("out of memory"));
  EXPECT_FALSE(d.tracks[by_name["out of memory"]].has_parent);  // a global track
  EXPECT_TRUE(d.tracks[by_name["iterations"]].has_parent);

  json trace = parse(json_trace(c));
  size_t counters = 0, iterations = 0;
  int64_t max = 0, last = 0;
  uint64_t previous_ts = 0;
  std::map<uint64_t, int> open;  // per track: slices begun and not ended
  for (const auto &e : d.events) {
    EXPECT_GE(e.ts, previous_ts);  // packets in time order
    previous_ts = e.ts;
    EXPECT_TRUE(d.tracks.count(e.track)) << e.track;
    if (e.type == pf::kTypeCounter) {
      ++counters;
      max = std::max(max, e.counter);
      last = e.counter;
    }
    if (e.type == pf::kTypeSliceBegin) {
      ++open[e.track];
      if (e.track == by_name["iterations"]) {
        EXPECT_EQ(e.name, "train #" + std::to_string(iterations));
        ASSERT_TRUE(e.annotations.count("index"));
        EXPECT_EQ(e.annotations.at("index").value, iterations);
        ++iterations;
      }
    }
    if (e.type == pf::kTypeSliceEnd) {
      ASSERT_GE(--open[e.track], 0) << d.tracks[e.track].name;
    }
  }
  for (auto &[track, n] : open) EXPECT_EQ(n, 0) << d.tracks[track].name;
  EXPECT_EQ(counters, events(trace, "C").size());
  EXPECT_EQ(iterations, 12u);
  EXPECT_EQ(static_cast<uint64_t>(max), a.devices[0].peak_live_bytes);
  EXPECT_EQ(static_cast<uint64_t>(last), a.devices[0].live_at_exit_bytes);
  // The trace's own description, at the start, on the process track.
  ASSERT_FALSE(d.events.empty());
  EXPECT_EQ(d.events[0].name, "gpuleak_trace");
  EXPECT_TRUE(d.events[0].annotations.count("realtime_anchor_ns"));
}

TEST(PerfettoTrace, UntrustedStringsBecomeValidUtf8) {
  CaptureBuilder b;
  b.push("bad \xff\xfe bytes </script>");
  b.pop();
  Decoded d = decode_trace(perfetto_trace(b.capture));
  bool found = false;
  for (const auto &e : d.events)
    if (e.name.find("bad ") == 0) {
      found = true;
      EXPECT_EQ(e.name, "bad \xEF\xBF\xBD\xEF\xBF\xBD bytes </script>");
    }
  EXPECT_TRUE(found);
}

TEST(PerfettoTrace, ProtocDecodesItWithPerfettosSchema) {
  const std::string proto_dir = GPULEAK_PERFETTO_PROTO_DIR;
  if (!std::filesystem::exists(proto_dir + "/perfetto_trace.proto") ||
      std::system("command -v protoc >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "protoc or " << proto_dir << "/perfetto_trace.proto not available";
  std::string dir = temp_dir("protoc");
  std::ofstream(dir + "/t.pftrace", std::ios::binary) << perfetto_trace(rich_capture());
  std::string cmd = "protoc --decode=perfetto.protos.Trace --proto_path=" + proto_dir + " perfetto_trace.proto < " +
                    dir + "/t.pftrace > " + dir + "/decoded.txt 2> " + dir + "/err.txt";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << read_text(dir + "/err.txt");
  std::string text = read_text(dir + "/decoded.txt");
  EXPECT_NE(text.find("type: TYPE_COUNTER"), std::string::npos);
  EXPECT_NE(text.find("unit: UNIT_SIZE_BYTES"), std::string::npos);
  EXPECT_NE(text.find("type: TYPE_SLICE_BEGIN"), std::string::npos);
  EXPECT_NE(text.find("name: \"train #11\""), std::string::npos);
  EXPECT_NE(text.find("process_name: \"train.py (pid 4242, rank 3)\""), std::string::npos);
  EXPECT_NE(text.find("debug_annotations"), std::string::npos);
}

}  // namespace
}  // namespace gpuleak::testing
