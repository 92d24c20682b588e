// The Perfetto protobuf trace, read back as trace_processor would (perfetto_decoder.h: interned
// strings resolved through the sequence's incremental state) and, where protoc is installed, by
// `protoc --decode` against Perfetto's own schema (perfetto_schema/).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "output/trace/perfetto_fields.h"
#include "output/trace/perfetto_interning.h"
#include "perfetto_decoder.h"
#include "trace_test_support.h"

namespace gpuleak::testing {
namespace {

namespace pf = output::trace::pf;
using nlohmann::json;

// Decodes and fails the test on anything a reader would reject.
PerfettoTrace decode(const std::string &bytes) {
  PerfettoTrace t = decode_perfetto(bytes);
  for (const std::string &p : t.problems) ADD_FAILURE() << p;
  return t;
}

// The JSON trace's "gpuleak_trace" metadata.
json about(const json &trace) { return events(trace, "M", "gpuleak_trace").at(0)["args"]; }

// Every event of the protobuf trace matches the JSON's: the same names, categories and
// arguments in the same order, and the same counter values at the same times.
void expect_same_timeline(const format::Capture &c, const output::SymbolizeFn &symbolize = fake_symbolizer()) {
  const json trace = parse(json_trace(c, {}, nullptr, symbolize));
  const PerfettoTrace p = decode(perfetto_trace(c, {}, symbolize));
  const uint64_t anchor = about(trace)["monotonic_anchor_ns"].get<uint64_t>();

  std::vector<json> expected;
  std::map<std::string, std::vector<std::pair<int64_t, uint64_t>>> json_counters, pb_counters;
  for (const json &e : trace) {
    const std::string ph = e["ph"];
    if (ph == "C")
      json_counters[e["name"]].emplace_back(std::llround(e["ts"].get<double>() * 1000), e["args"]["bytes"]);
    if (ph == "X" || ph == "B" || ph == "b" || ph == "i")
      expected.push_back({e["name"], e["cat"], as_annotations(e.value("args", json()))});
  }
  std::vector<json> got;
  for (const auto &e : p.events) {
    if (e.type == pf::kTypeCounter)
      pb_counters[p.tracks.at(e.track).name].emplace_back(static_cast<int64_t>(e.ts - anchor), e.counter);
    if (e.name == "gpuleak_trace") {
      EXPECT_EQ(e.args, as_annotations(about(trace)));
      continue;
    }
    if (e.type == pf::kTypeSliceBegin || e.type == pf::kTypeInstant)
      got.push_back({e.name, e.categories.size() == 1 ? json(e.categories[0]) : json(e.categories), e.args});
  }
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], expected[i]) << "event " << i;
  EXPECT_FALSE(json_counters.empty());
  EXPECT_EQ(pb_counters, json_counters);
}

TEST(PerfettoTrace, DecodesIntoTheSameTimelineAsTheJson) {
  format::Capture c = rich_capture();
  analysis::Analysis a = analysis::analyze(c);
  PerfettoTrace d = decode(perfetto_trace(c));
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

  size_t iterations = 0;
  int64_t max = 0, last = 0;
  uint64_t previous_ts = 0;
  std::map<uint64_t, int> open;  // per track: slices begun and not ended
  for (const auto &e : d.events) {
    EXPECT_GE(e.ts, previous_ts);  // packets in time order
    previous_ts = e.ts;
    EXPECT_TRUE(d.tracks.count(e.track)) << e.track;
    if (e.type == pf::kTypeCounter) {
      max = std::max(max, e.counter);
      last = e.counter;
    }
    if (e.type == pf::kTypeSliceBegin) {
      ++open[e.track];
      if (e.track == by_name["iterations"]) {
        EXPECT_EQ(e.name, "train #" + std::to_string(iterations));
        EXPECT_EQ(e.args["index"], iterations);
        ++iterations;
      }
    }
    if (e.type == pf::kTypeSliceEnd) {
      ASSERT_GE(--open[e.track], 0) << d.tracks[e.track].name;
    }
  }
  for (auto &[track, n] : open) EXPECT_EQ(n, 0) << d.tracks[track].name;
  EXPECT_EQ(iterations, 12u);
  EXPECT_EQ(static_cast<uint64_t>(max), a.devices[0].peak_live_bytes);
  EXPECT_EQ(static_cast<uint64_t>(last), a.devices[0].live_at_exit_bytes);
  // The trace's own description, at the start, on the process track.
  ASSERT_FALSE(d.events.empty());
  EXPECT_EQ(d.events[0].name, "gpuleak_trace");
  EXPECT_TRUE(d.events[0].args.contains("realtime_anchor_ns"));
}

TEST(PerfettoTrace, EveryEventMatchesTheJsonTrace) { expect_same_timeline(rich_capture()); }

// Many allocations from a few call sites, each at a fresh address: what a training loop writes.
format::Capture busy_capture(int iterations) {
  CaptureBuilder b;
  b.device(0, "Fake GPU", 64ull << 30);
  for (int i = 0; i < iterations; ++i) {
    b.begin("train");
    std::vector<uint64_t> live;
    for (uint32_t site = 1; site <= 8; ++site) live.push_back(b.alloc(site * kMiB, site));
    b.alloc(kMiB, 9);  // the leak
    for (uint64_t address : live) b.free(address);
    b.end("train");
  }
  return b.capture;
}

TEST(PerfettoTrace, RepeatedStringsAreInternedAndUniqueOnesWrittenInline) {
  format::Capture c = busy_capture(200);
  output::trace::TraceOptions full;
  full.full = true;
  const std::string bytes = perfetto_trace(c, full);
  PerfettoTrace d = decode(bytes);
  // Names, categories, argument names, API names and call sites repeat on every event: each is
  // defined once and then referred to. The 1,800 addresses and 200 "train #N" are not interned.
  EXPECT_GT(d.iid_references, 10 * d.definitions);
  EXPECT_LT(d.definitions, 100u);
  std::set<std::string> addresses;
  for (const auto &e : d.events)
    if (e.args.contains("address")) addresses.insert(e.args["address"].get<std::string>());
  EXPECT_GE(addresses.size(), 1800u);
  // What it buys: the timeline in under half the JSON's bytes (the writer without interning: 87%).
  const std::string json_bytes = json_trace(c, full);
  EXPECT_LT(bytes.size() * 2, json_bytes.size()) << bytes.size() << " vs JSON " << json_bytes.size();
}

// Names from the program (symbols, NVTX messages) are untrusted: control bytes, markup and invalid
// UTF-8, interned (they repeat) or inline (they do not), reach the reader intact but valid UTF-8.
TEST(PerfettoTrace, UntrustedNamesSurviveInternedOrInline) {
  const std::string evil_symbol = "evil\x01\x1b[31m</script><b>\"x\"\\ \xff";
  const std::string evil_nvtx = "bad \xff\xfe bytes </script>\n\t\x7f";
  const std::string repaired_nvtx = "bad \xEF\xBF\xBD\xEF\xBF\xBD bytes </script>\n\t\x7f";
  CaptureBuilder b;
  b.device(0, "Fake GPU", 1ull << 30);
  for (int i = 0; i < 3; ++i) {
    b.begin("train");
    b.push(evil_nvtx);
    b.alloc(kMiB, 5);
    b.pop();
    b.end("train");
  }
  b.push("once \x02 only \xc3");  // seen once: inline
  b.pop();
  auto symbolize = fake_symbolizer({{5, evil_symbol}});
  PerfettoTrace d = decode(perfetto_trace(b.capture, {}, symbolize));
  size_t nvtx = 0, once = 0, sites = 0;
  for (const auto &e : d.events) {
    if (e.name == repaired_nvtx) ++nvtx;
    if (e.name == "once \x02 only \xEF\xBF\xBD") ++once;
    if (e.args.contains("site")) {
      ++sites;
      EXPECT_EQ(e.args["site"], "evil\x01\x1b[31m</script><b>\"x\"\\ \xEF\xBF\xBD (file5.cpp:5)");
    }
  }
  EXPECT_EQ(nvtx, 3u);
  EXPECT_EQ(once, 1u);
  EXPECT_EQ(sites, 3u);
  expect_same_timeline(b.capture, symbolize);
}

// `cat a.pftrace b.pftrace`: the second file's first packet clears the sequence's incremental
// state, and its iids resolve to its own strings, not to the first file's.
TEST(PerfettoTrace, ConcatenatedTracesKeepTheirOwnInternedStrings) {
  format::Capture a = rich_capture();
  format::Capture b = busy_capture(5);
  b.run = a.run;
  b.run->fixed.pid = 777;
  b.run->program = "other.py";
  PerfettoTrace both = decode(perfetto_trace(a) + perfetto_trace(b));
  PerfettoTrace second = decode(perfetto_trace(b));
  ASSERT_GE(both.events.size(), second.events.size());
  const size_t offset = both.events.size() - second.events.size();
  for (size_t i = 0; i < second.events.size(); ++i) {
    EXPECT_EQ(both.events[offset + i].name, second.events[i].name) << i;
    EXPECT_EQ(both.events[offset + i].args, second.events[i].args) << i;
  }
  std::set<uint64_t> a_tracks;
  for (const auto &[uuid, t] : decode(perfetto_trace(a)).tracks) a_tracks.insert(uuid);
  for (const auto &[uuid, t] : second.tracks) EXPECT_FALSE(a_tracks.count(uuid)) << t.name;
}

// The reader's checks can fail: an iid without a definition, or a definition cleared by a later
// SEQ_INCREMENTAL_STATE_CLEARED, or a packet that uses one without SEQ_NEEDS_INCREMENTAL_STATE.
TEST(PerfettoTrace, TheReaderRejectsIidsUsedBeforeTheirDefinition) {
  using output::trace::ProtoEncoder;
  auto packet = [](uint32_t flags, bool define, uint64_t name_iid) {
    ProtoEncoder p;
    p.varint_field(pf::kPacketTimestamp, 1);
    p.varint_field(pf::kPacketTrustedSequenceId, 1);
    if (flags) p.varint_field(pf::kPacketSequenceFlags, flags);
    if (define)
      p.message_field(pf::kPacketInternedData, [](ProtoEncoder &d) {
        d.message_field(pf::kInternedEventNames, [](ProtoEncoder &e) {
          e.varint_field(pf::kInternedIid, 1);
          e.bytes_field(pf::kInternedString, "cudaMalloc");
        });
      });
    p.message_field(pf::kPacketTrackEvent, [&](ProtoEncoder &te) {
      te.varint_field(pf::kEventType, pf::kTypeInstant);
      te.varint_field(pf::kEventTrackUuid, 1);
      te.varint_field(pf::kEventNameIid, name_iid);
    });
    ProtoEncoder frame;
    frame.bytes_field(pf::kTracePacket, p.data());
    return frame.take();
  };
  const uint32_t cleared = pf::kSeqIncrementalStateCleared, needs = pf::kSeqNeedsIncrementalState;
  EXPECT_TRUE(decode_perfetto(packet(cleared | needs, true, 1) + packet(needs, false, 1)).problems.empty());
  EXPECT_EQ(decode_perfetto(packet(cleared | needs, true, 1) + packet(needs, false, 2)).problems.size(), 1u);
  EXPECT_EQ(decode_perfetto(packet(cleared | needs, true, 1) + packet(cleared | needs, false, 1)).problems.size(), 1u);
  EXPECT_EQ(decode_perfetto(packet(cleared | needs, true, 1) + packet(0, false, 1)).problems.size(), 1u);
  EXPECT_EQ(decode_perfetto(packet(needs, true, 1)).problems.size(), 2u);  // no state was ever cleared
}

TEST(PerfettoInterning, ThirdSightingDefinesOnceThenRefersAndTablesAreBounded) {
  using output::trace::InternedStrings;
  using output::trace::ProtoEncoder;
  InternedStrings interned;
  ProtoEncoder packet;
  EXPECT_EQ(interned.iid(InternedStrings::kEventNames, "cudaMalloc"), 0u);  // inline, twice
  EXPECT_EQ(interned.iid(InternedStrings::kEventNames, "cudaMalloc"), 0u);
  EXPECT_FALSE(interned.write_pending(packet));
  EXPECT_TRUE(packet.data().empty());
  EXPECT_EQ(interned.iid(InternedStrings::kEventNames, "cudaMalloc"), 1u);
  EXPECT_EQ(interned.iid(InternedStrings::kAnnotationValues, "cudaMalloc"), 0u);  // tables are apart
  EXPECT_TRUE(interned.write_pending(packet));
  std::vector<PbField> fields;
  ASSERT_TRUE(pb_decode(packet.data(), &fields));
  ASSERT_EQ(fields.size(), 1u);
  EXPECT_EQ(fields[0].number, pf::kPacketInternedData);
  auto data = pb_message(fields[0]);
  ASSERT_EQ(data.size(), 1u);
  EXPECT_EQ(data[0].number, pf::kInternedEventNames);
  auto entry = pb_message(data[0]);
  EXPECT_EQ(pb_field(entry, pf::kInternedIid)->value, 1u);
  EXPECT_EQ(pb_field(entry, pf::kInternedString)->bytes, "cudaMalloc");
  // Later uses refer to it without defining it again.
  packet.clear();
  EXPECT_EQ(interned.iid(InternedStrings::kEventNames, "cudaMalloc"), 1u);
  EXPECT_TRUE(interned.write_pending(packet));
  EXPECT_TRUE(packet.data().empty());
  // A full table writes new strings inline and keeps resolving the ones it has.
  for (size_t i = 1; i < InternedStrings::kMaxEntries; ++i)
    for (int sighting = 0; sighting < 3; ++sighting) interned.iid(InternedStrings::kEventNames, std::to_string(i));
  EXPECT_EQ(interned.interned(InternedStrings::kEventNames), InternedStrings::kMaxEntries);
  for (int sighting = 0; sighting < 5; ++sighting)
    EXPECT_EQ(interned.iid(InternedStrings::kEventNames, "one too many"), 0u);
  EXPECT_EQ(interned.iid(InternedStrings::kEventNames, "cudaMalloc"), 1u);
  EXPECT_EQ(interned.iid(InternedStrings::kEventNames, "7"), 8u);
}

TEST(PerfettoTrace, ProtocDecodesItWithPerfettosSchema) {
  const std::string proto_dir = GPULEAK_PERFETTO_PROTO_DIR;
  if (std::system("command -v protoc >/dev/null 2>&1") != 0) GTEST_SKIP() << "protoc not installed";
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
  // The interned tables, under the schema's names, and the references to them.
  for (const char *field : {"interned_data {", "event_names {", "event_categories {", "debug_annotation_names {",
                            "debug_annotation_string_values {", "name_iid:", "category_iids:", "string_value_iid:",
                            "sequence_flags: 1", "sequence_flags: 2"})
    EXPECT_NE(text.find(field), std::string::npos) << field;
}

}  // namespace
}  // namespace gpuleak::testing
