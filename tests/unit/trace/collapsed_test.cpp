// Folded stacks for flamegraph.pl / speedscope: root first, one line per stack, the bytes on
// each device adding up to the analysis' number for the moment chosen.
#include <gtest/gtest.h>

#include <sstream>

#include "output/trace/collapsed_stacks.h"
#include "trace_test_support.h"

namespace gpuleak::testing {
namespace {

using output::trace::Moment;

struct Line {
  std::vector<std::string> frames;
  uint64_t bytes = 0;
};

std::vector<Line> parse_folded(const std::string &text) {
  std::vector<Line> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t space = line.rfind(' ');
    EXPECT_NE(space, std::string::npos) << line;
    Line l;
    l.bytes = std::stoull(line.substr(space + 1));
    std::string stack = line.substr(0, space), frame;
    std::istringstream s(stack);
    while (std::getline(s, frame, ';')) l.frames.push_back(frame);
    out.push_back(l);
  }
  return out;
}

std::string folded(const format::Capture &c, Moment at, const output::SymbolizeFn &sym = fake_symbolizer()) {
  std::string out, error;
  EXPECT_TRUE(output::trace::collapsed_stacks(c, analysis::analyze(c), sym, at, &out, &error)) << error;
  return out;
}

uint64_t total(const std::vector<Line> &lines) {
  uint64_t sum = 0;
  for (const Line &l : lines) sum += l.bytes;
  return sum;
}

TEST(Collapsed, EndPeakAndOomAddUpToTheAnalysis) {
  format::Capture c = rich_capture();
  analysis::Analysis a = analysis::analyze(c);
  auto end = parse_folded(folded(c, Moment::kEnd));
  EXPECT_EQ(total(end), a.devices[0].live_at_exit_bytes);
  ASSERT_EQ(end.size(), 1u);
  EXPECT_EQ(end[0].frames, (std::vector<std::string>{"cuda:0", "fn2 (file2.cpp:2)"}));
  EXPECT_EQ(total(parse_folded(folded(c, Moment::kPeak))), a.devices[0].peak_live_bytes);
  EXPECT_EQ(total(parse_folded(folded(c, Moment::kOom))), a.ooms[0].live_bytes);
}

TEST(Collapsed, RootFirstInnermostLast) {
  CaptureBuilder b;
  b.alloc(kMiB, 1);
  b.alloc(2 * kMiB, 2);
  auto deep = [](uint32_t id) {
    output::Stack s;  // innermost first, as the symbolizer gives it
    for (const char *name : {"leaf", "middle", "main"}) {
      output::Frame f;
      f.function = name + std::string(id == 2 ? "2" : "");
      f.file = "/src/app.cpp";
      f.line = 10;
      s.push_back(f);
    }
    return s;
  };
  auto lines = parse_folded(folded(b.capture, Moment::kEnd, deep));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].frames,
            (std::vector<std::string>{"cuda:0", "main (app.cpp:10)", "middle (app.cpp:10)", "leaf (app.cpp:10)"}));
  EXPECT_EQ(lines[0].bytes, kMiB);
  EXPECT_EQ(lines[1].frames.back(), "leaf2 (app.cpp:10)");
}

TEST(Collapsed, SeparatorsAndLineBreaksInNamesCannotSplitALine) {
  CaptureBuilder b;
  b.alloc(kMiB, 1);
  std::string text = folded(b.capture, Moment::kEnd, fake_symbolizer({{1, "a;b\nc\r\x01 \xff end"}}));
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
  auto lines = parse_folded(text);
  ASSERT_EQ(lines.size(), 1u);
  ASSERT_EQ(lines[0].frames.size(), 2u);
  EXPECT_EQ(lines[0].frames[1], "a,b c   \xEF\xBF\xBD end (file1.cpp:1)");
  EXPECT_EQ(lines[0].bytes, kMiB);
}

TEST(Collapsed, OomWithoutAnOomIsAnError) {
  CaptureBuilder b;
  b.alloc(kMiB, 1);
  std::string out, error;
  EXPECT_FALSE(output::trace::collapsed_stacks(b.capture, analysis::analyze(b.capture), fake_symbolizer(), Moment::kOom,
                                               &out, &error));
  EXPECT_NE(error.find("no out-of-memory"), std::string::npos);
  Moment m;
  EXPECT_FALSE(output::trace::parse_moment("middle", &m));
  EXPECT_TRUE(output::trace::parse_moment("peak", &m));
}

}  // namespace
}  // namespace gpuleak::testing
