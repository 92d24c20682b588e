// `gpuleak export --format pprof`: profile.proto read back with a small wire-format reader here
// (the CLI test also opens the file with `go tool pprof` when Go is installed): the sample types,
// the string table, leaf-first locations ending at the device, values adding up to the analysis,
// and the allocations a span of iterations added for good.
#include <gtest/gtest.h>

#include <map>

#include "output/trace/pprof_export.h"
#include "trace_test_support.h"

namespace gpuleak::testing {
namespace {

using Kind = format::Kind;
using output::trace::IterationSpan;
using output::trace::LiveStack;
using output::trace::Moment;

// One message's fields: number -> values in order (varints as numbers, length-delimited as bytes).
struct Message {
  std::multimap<uint32_t, uint64_t> ints;
  std::multimap<uint32_t, std::string> bytes;
  std::vector<uint64_t> all(uint32_t f) const {
    std::vector<uint64_t> out;
    for (auto [a, b] = ints.equal_range(f); a != b; ++a) out.push_back(a->second);
    return out;
  }
  uint64_t one(uint32_t f) const { return ints.count(f) ? ints.find(f)->second : 0; }
  std::vector<std::string> messages(uint32_t f) const {
    std::vector<std::string> out;
    for (auto [a, b] = bytes.equal_range(f); a != b; ++a) out.push_back(a->second);
    return out;
  }
};

Message decode(const std::string &data) {
  Message m;
  size_t i = 0;
  auto varint = [&] {
    uint64_t v = 0;
    for (int shift = 0; i < data.size(); shift += 7) {
      uint8_t c = static_cast<uint8_t>(data[i++]);
      v |= static_cast<uint64_t>(c & 0x7f) << shift;
      if (!(c & 0x80)) return v;
    }
    ADD_FAILURE() << "truncated varint";
    return v;
  };
  while (i < data.size()) {
    uint64_t key = varint();
    uint32_t field = static_cast<uint32_t>(key >> 3);
    switch (key & 7) {
      case 0:
        m.ints.emplace(field, varint());
        break;
      case 2: {
        uint64_t n = varint();
        EXPECT_LE(i + n, data.size());
        m.bytes.emplace(field, data.substr(i, n));
        i += n;
        break;
      }
      default:
        ADD_FAILURE() << "unexpected wire type " << (key & 7);
        return m;
    }
  }
  return m;
}

// A decoded profile: each sample's frame names (leaf first) and values.
struct Profile {
  std::vector<std::string> strings, sample_types;
  struct Sample {
    std::vector<std::string> names, files;
    std::vector<int64_t> lines;
    std::vector<uint64_t> values;
    std::string device;
  };
  std::vector<Sample> samples;
};

Profile read_profile(const std::string &raw) {
  Message m = decode(raw);
  Profile p;
  p.strings = m.messages(6);
  EXPECT_FALSE(p.strings.empty());
  EXPECT_EQ(p.strings.at(0), "");
  auto str = [&](uint64_t i) { return i < p.strings.size() ? p.strings[i] : "<bad string index>"; };
  for (const std::string &t : m.messages(1)) {
    Message v = decode(t);
    p.sample_types.push_back(str(v.one(1)) + "/" + str(v.one(2)));
  }
  std::map<uint64_t, Message> functions, locations;
  for (const std::string &f : m.messages(5)) functions[decode(f).one(1)] = decode(f);
  for (const std::string &l : m.messages(4)) locations[decode(l).one(1)] = decode(l);
  EXPECT_EQ(m.messages(3).size(), 1u);  // the one mapping
  for (const std::string &s : m.messages(2)) {
    Message sm = decode(s);
    Profile::Sample out;
    for (uint64_t id : sm.all(1)) {
      EXPECT_TRUE(locations.count(id)) << id;
      EXPECT_EQ(locations[id].one(2), 1u);  // mapping id
      Message line = decode(locations[id].messages(4).at(0));
      const Message &fn = functions.at(line.one(1));
      out.names.push_back(str(fn.one(2)));
      out.files.push_back(str(fn.one(4)));
      out.lines.push_back(static_cast<int64_t>(line.one(2)));
    }
    out.values = sm.all(2);
    Message label = decode(sm.messages(3).at(0));
    EXPECT_EQ(str(label.one(1)), "device");
    out.device = str(label.one(2));
    p.samples.push_back(out);
  }
  return p;
}

Profile pprof(const std::vector<LiveStack> &live) {
  return read_profile(output::trace::pprof_profile_uncompressed(live, 0, "prog"));
}

std::vector<LiveStack> live_at(const format::Capture &c, Moment at,
                               const output::SymbolizeFn &sym = fake_symbolizer()) {
  std::string error;
  output::Sites sites(sym, output::site_options(c));
  std::vector<LiveStack> live;
  EXPECT_TRUE(output::trace::live_stacks(c, analysis::analyze(c), sites, at, &live, &error)) << error;
  return live;
}

std::pair<uint64_t, uint64_t> totals(const Profile &p) {
  uint64_t bytes = 0, count = 0;
  for (const auto &s : p.samples) {
    EXPECT_EQ(s.values.size(), 2u);
    bytes += s.values.at(0);
    count += s.values.at(1);
  }
  return {bytes, count};
}

TEST(Pprof, EndPeakAndOomAddUpToTheAnalysis) {
  format::Capture c = rich_capture();
  analysis::Analysis a = analysis::analyze(c);
  Profile end = pprof(live_at(c, Moment::kEnd));
  EXPECT_EQ(end.sample_types, (std::vector<std::string>{"inuse_space/bytes", "inuse_objects/count"}));
  EXPECT_EQ(totals(end).first, a.devices[0].live_at_exit_bytes);
  EXPECT_EQ(totals(pprof(live_at(c, Moment::kPeak))).first, a.devices[0].peak_live_bytes);
  EXPECT_EQ(totals(pprof(live_at(c, Moment::kOom))).first, a.ooms[0].live_bytes);
}

TEST(Pprof, LocationsAreLeafFirstAndEndAtTheDevice) {
  CaptureBuilder b;
  b.alloc(kMiB, 1);
  b.alloc(kMiB, 1);
  b.alloc(2 * kMiB, 2, Kind::kDevice, 1);
  auto deep = [](uint32_t id) {
    output::Stack s;  // innermost first, as the symbolizer gives it
    int line = 10;
    for (const char *name : {id == 2 ? "leaf2" : "leaf", "main"}) {
      output::Frame f;
      f.function = name;
      f.file = "/src/app.cpp";
      f.line = line++;
      s.push_back(f);
    }
    return s;
  };
  Profile p = pprof(live_at(b.capture, Moment::kEnd, deep));
  ASSERT_EQ(p.samples.size(), 2u);
  EXPECT_EQ(p.samples[0].names, (std::vector<std::string>{"leaf", "main", "cuda:0"}));
  EXPECT_EQ(p.samples[0].files[0], "/src/app.cpp");
  EXPECT_EQ(p.samples[0].lines, (std::vector<int64_t>{10, 11, 0}));
  EXPECT_EQ(p.samples[0].values, (std::vector<uint64_t>{2 * kMiB, 2}));
  EXPECT_EQ(p.samples[0].device, "cuda:0");
  EXPECT_EQ(p.samples[1].names, (std::vector<std::string>{"leaf2", "main", "cuda:1"}));
  EXPECT_EQ(p.samples[1].device, "cuda:1");
  // "main" is one function: pprof would otherwise show it twice.
  EXPECT_EQ(std::count(p.strings.begin(), p.strings.end(), "main"), 1);
}

TEST(Pprof, UntrustedNamesAreValidUtf8) {
  CaptureBuilder b;
  b.alloc(kMiB, 1);
  Profile p = pprof(live_at(b.capture, Moment::kEnd, fake_symbolizer({{1, "bad\xff name"}})));
  ASSERT_EQ(p.samples.size(), 1u);
  EXPECT_EQ(p.samples[0].names[0], "bad\xEF\xBF\xBD name");
}

TEST(Pprof, GzipWrapsTheSameBytes) {
  CaptureBuilder b;
  b.alloc(kMiB, 1);
  std::string gz = output::trace::pprof_profile(live_at(b.capture, Moment::kEnd), 0, "prog");
  ASSERT_GE(gz.size(), 2u);
  EXPECT_EQ(static_cast<uint8_t>(gz[0]), 0x1f);
  EXPECT_EQ(static_cast<uint8_t>(gz[1]), 0x8b);
}

// Four iterations, each keeping 1 MiB (site 1) and freeing 2 MiB (site 2) before it ends; 5 MiB
// allocated before the loop (site 3).
format::Capture loop_capture() {
  CaptureBuilder b;
  b.alloc(5 * kMiB, 3);
  for (int i = 0; i < 4; ++i) {
    b.begin("step");
    b.alloc(kMiB, 1);
    uint64_t t = b.alloc(2 * kMiB, 2);
    b.free(t);
    b.end("step");
  }
  return b.capture;
}

TEST(Pprof, AnIterationSpanKeepsWhatItAddedForGood) {
  format::Capture c = loop_capture();
  analysis::Analysis a = analysis::analyze(c);
  output::Sites sites(fake_symbolizer(), output::site_options(c));
  auto span = [&](uint32_t first, uint32_t last) {
    std::vector<LiveStack> live;
    std::string error;
    EXPECT_TRUE(output::trace::live_stacks_in_iterations(c, a, sites, {first, last}, &live, &error)) << error;
    return live;
  };
  auto one = span(1, 2);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].bytes, 2 * kMiB);
  EXPECT_EQ(one[0].count, 2u);
  EXPECT_EQ(one[0].frames.at(0).function, "fn1");
  EXPECT_EQ(totals(pprof(span(0, 3))), std::make_pair(4 * kMiB, uint64_t{4}));
  EXPECT_EQ(totals(pprof(span(3, 3))).first, kMiB);

  std::vector<LiveStack> live;
  std::string error;
  EXPECT_FALSE(output::trace::live_stacks_in_iterations(c, a, sites, {2, 9}, &live, &error));
  EXPECT_NE(error.find("outside the capture's iterations 0:3"), std::string::npos) << error;
  CaptureBuilder none;
  none.alloc(kMiB, 1);
  EXPECT_FALSE(output::trace::live_stacks_in_iterations(none.capture, analysis::analyze(none.capture), sites, {0, 0},
                                                        &live, &error));
  EXPECT_NE(error.find("no iterations"), std::string::npos) << error;
}

TEST(Pprof, IterationSpansParse) {
  IterationSpan s;
  ASSERT_TRUE(output::trace::parse_iteration_span("3:7", &s));
  EXPECT_EQ(s.first, 3u);
  EXPECT_EQ(s.last, 7u);
  ASSERT_TRUE(output::trace::parse_iteration_span("4", &s));
  EXPECT_EQ(s.first, 4u);
  EXPECT_EQ(s.last, 4u);
  for (const char *bad : {"", "7:3", "a:b", "1:", ":2", "-1:2", "1:2:3", "99999999999"})
    EXPECT_FALSE(output::trace::parse_iteration_span(bad, &s)) << bad;
}

}  // namespace
}  // namespace gpuleak::testing
