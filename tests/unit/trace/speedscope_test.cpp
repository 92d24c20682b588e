// `gpuleak export --format speedscope`: a file that keeps to speedscope's published schema
// (https://www.speedscope.app/file-format-schema.json: the keys it requires, frame indices in
// range, one weight per sample), whose weights add up to the analysis' number for the moment.
#include <gtest/gtest.h>

#include "output/trace/speedscope_export.h"
#include "trace_test_support.h"

namespace gpuleak::testing {
namespace {

using nlohmann::json;
using output::trace::Moment;

json speedscope(const format::Capture &c, Moment at, const output::SymbolizeFn &sym = fake_symbolizer()) {
  std::string error;
  output::Sites sites(sym, output::site_options(c));
  std::vector<output::trace::LiveStack> live;
  EXPECT_TRUE(output::trace::live_stacks(c, analysis::analyze(c), sites, at, &live, &error)) << error;
  return parse(output::trace::speedscope_profile(live, "run.gpuleak"));
}

// The schema's "required" lists for the file, "shared", each frame and a SampledProfile, and the
// types it gives them; returns the sum of the weights.
uint64_t check_schema(const json &doc) {
  EXPECT_EQ(doc.value("$schema", ""), "https://www.speedscope.app/file-format-schema.json");
  EXPECT_TRUE(doc.at("shared").at("frames").is_array());
  EXPECT_TRUE(doc.at("profiles").is_array());
  const json &frames = doc["shared"]["frames"];
  for (const json &f : frames) {
    EXPECT_TRUE(f.at("name").is_string());
    if (f.contains("file")) {
      EXPECT_TRUE(f["file"].is_string());
    }
    if (f.contains("line")) {
      EXPECT_TRUE(f["line"].is_number_integer());
    }
  }
  uint64_t sum = 0;
  for (const json &p : doc["profiles"]) {
    EXPECT_EQ(p.at("type"), "sampled");
    EXPECT_TRUE(p.at("name").is_string());
    EXPECT_EQ(p.at("unit"), "bytes");
    EXPECT_TRUE(p.at("startValue").is_number());
    EXPECT_TRUE(p.at("endValue").is_number());
    EXPECT_EQ(p.at("samples").size(), p.at("weights").size());
    for (const json &s : p["samples"])
      for (const json &i : s) EXPECT_LT(i.get<size_t>(), frames.size());
    for (const json &w : p["weights"]) sum += w.get<uint64_t>();
    EXPECT_EQ(p["endValue"].get<uint64_t>() - p["startValue"].get<uint64_t>(), sum);
  }
  return sum;
}

std::vector<std::string> names(const json &doc, const json &sample) {
  std::vector<std::string> out;
  for (const json &i : sample) out.push_back(doc["shared"]["frames"][i.get<size_t>()]["name"]);
  return out;
}

TEST(Speedscope, EndPeakAndOomAddUpToTheAnalysis) {
  format::Capture c = rich_capture();
  analysis::Analysis a = analysis::analyze(c);
  json end = speedscope(c, Moment::kEnd);
  EXPECT_EQ(check_schema(end), a.devices[0].live_at_exit_bytes);
  ASSERT_EQ(end["profiles"][0]["samples"].size(), 1u);
  EXPECT_EQ(names(end, end["profiles"][0]["samples"][0]), (std::vector<std::string>{"cuda:0", "fn2 (file2.cpp:2)"}));
  EXPECT_EQ(check_schema(speedscope(c, Moment::kPeak)), a.devices[0].peak_live_bytes);
  EXPECT_EQ(check_schema(speedscope(c, Moment::kOom)), a.ooms[0].live_bytes);
}

TEST(Speedscope, FramesAreSharedAndRootFirst) {
  CaptureBuilder b;
  b.alloc(kMiB, 1);
  b.alloc(2 * kMiB, 2);
  auto deep = [](uint32_t id) {
    output::Stack s;  // innermost first, as the symbolizer gives it
    for (const char *name : {id == 2 ? "leaf2" : "leaf", "main"}) {
      output::Frame f;
      f.function = name;
      f.file = "/src/app.cpp";
      f.line = 10;
      s.push_back(f);
    }
    return s;
  };
  json doc = speedscope(b.capture, Moment::kEnd, deep);
  EXPECT_EQ(check_schema(doc), 3 * kMiB);
  // cuda:0, main, leaf, leaf2: "main" is one frame shared by both samples.
  EXPECT_EQ(doc["shared"]["frames"].size(), 4u);
  const json &samples = doc["profiles"][0]["samples"];
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(names(doc, samples[0]), (std::vector<std::string>{"cuda:0", "main (app.cpp:10)", "leaf (app.cpp:10)"}));
  EXPECT_EQ(samples[0][1], samples[1][1]);
  EXPECT_EQ(doc["shared"]["frames"][samples[0][2].get<size_t>()]["file"], "/src/app.cpp");
}

TEST(Speedscope, UntrustedNamesStayValidJson) {
  CaptureBuilder b;
  b.alloc(kMiB, 1);
  std::string error;
  output::Sites sites(fake_symbolizer({{1, "a\"b\\c</script>\n\x01\xff"}}), output::site_options(b.capture));
  std::vector<output::trace::LiveStack> live;
  ASSERT_TRUE(output::trace::live_stacks(b.capture, analysis::analyze(b.capture), sites, Moment::kEnd, &live, &error));
  std::string out = output::trace::speedscope_profile(live, "x\xfe.gpuleak");
  json doc = parse(out);  // nlohmann throws on invalid UTF-8 or unescaped quotes
  EXPECT_EQ(check_schema(doc), kMiB);
  EXPECT_EQ(doc["shared"]["frames"][1]["name"], "a\"b\\c</script>\n\x01\xEF\xBF\xBD (file1.cpp:1)");
  EXPECT_EQ(out.find('\n'), out.size() - 1);  // the raw line break was escaped
  EXPECT_EQ(doc["name"], "x\xEF\xBF\xBD.gpuleak");
}

}  // namespace
}  // namespace gpuleak::testing
