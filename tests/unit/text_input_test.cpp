// src/text: the bounded reads and the bounded JSON parser every reader goes through, and the one
// terminal sanitizer (#18: no input makes a reader crash or balloon; names are inert).
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "text/bounded_read.h"
#include "text/escape.h"
#include "text/input_file.h"
#include "text/json_input.h"
#include "text/limits.h"

namespace gpuleak::text {
namespace {

std::string nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(JsonInput, NestingIsBoundedAtTheLimit) {
  nlohmann::json doc;
  JsonError error;
  ASSERT_TRUE(parse_json(nested(kMaxJsonDepth), &doc, &error)) << error.message;
  EXPECT_EQ(doc.dump().size(), 2 * kMaxJsonDepth);  // dump() recurses: fine at the bound
  EXPECT_FALSE(parse_json(nested(kMaxJsonDepth + 1), &doc, &error));
  EXPECT_EQ(error.kind, JsonError::kTooDeep);
  EXPECT_EQ(error.message, "JSON nested deeper than 512 levels");
  // Objects count as levels too, and the bound holds in the middle of a larger document.
  std::string objects = "{\"a\": [1, 2], \"b\": ";
  for (int i = 0; i < 600; ++i) objects += "{\"k\": ";
  EXPECT_FALSE(parse_json(objects + "0" + std::string(600, '}') + "}", &doc, &error));
  EXPECT_EQ(error.kind, JsonError::kTooDeep);
}

// The document that killed `view` and `merge` (SIGSEGV in nlohmann's recursive dump once parsed):
// now refused while parsing, and nothing of it is kept.
TEST(JsonInput, AHundredThousandLevelsAreRefused) {
  nlohmann::json doc = {{"stale", 1}};
  JsonError error;
  EXPECT_FALSE(parse_json(std::string(100000, '[') + std::string(100000, ']'), &doc, &error));
  EXPECT_EQ(error.kind, JsonError::kTooDeep);
  EXPECT_TRUE(doc.is_null());
}

TEST(JsonInput, OneLineErrors) {
  nlohmann::json doc;
  JsonError error;
  EXPECT_FALSE(parse_json(" \n", &doc, &error));
  EXPECT_EQ(error.message, "empty file, not JSON");
  EXPECT_FALSE(parse_json("{\"a\": [1, ", &doc, &error));
  EXPECT_EQ(error.kind, JsonError::kTruncated);
  EXPECT_FALSE(parse_json("{\"a\" 1}", &doc, &error));
  EXPECT_EQ(error.message, "not valid JSON (syntax error at byte 6)");
  EXPECT_FALSE(parse_json("1E8884888888", &doc, &error));
  EXPECT_EQ(error.kind, JsonError::kOutOfRange);
  ASSERT_TRUE(parse_json("{\"a\": [1, 2]}", &doc, &error));
  EXPECT_EQ(doc["a"][1], 2);
}

std::string write_temp(const std::string &name, const std::string &bytes) {
  std::string path = ::testing::TempDir() + "/" + name;
  FILE *f = std::fopen(path.c_str(), "wb");
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  return path;
}

TEST(BoundedRead, RegularFileOverTheLimitIsRefusedFromItsSize) {
  std::string path = write_temp("bounded.json", std::string(100, 'x')), out, error;
  ASSERT_EQ(read_bounded(path, 100, "a report", &out, &error), ReadResult::kOk) << error;
  EXPECT_EQ(out.size(), 100u);
  EXPECT_EQ(read_bounded(path, 99, "a report", &out, &error), ReadResult::kTooLarge);
  EXPECT_EQ(error, path + ": larger than 99 bytes, the limit for a report (docs/limits.md)");
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(read_bounded(::testing::TempDir(), 99, "a report", &out, &error), ReadResult::kIoError);
  EXPECT_EQ(error, ::testing::TempDir() + ": Is a directory");
  std::remove(path.c_str());
}

// /dev/zero has no size to check and never ends: it is refused before anything is read (it was
// read until it passed the limit).
TEST(BoundedRead, DevicesAreRefusedBeforeAnyRead) {
  std::string out, error;
  EXPECT_EQ(read_bounded("/dev/zero", kMaxReportBytes, "a report", &out, &error), ReadResult::kIoError);
  EXPECT_EQ(error, "/dev/zero: not a regular file (a character device)");
  EXPECT_TRUE(out.empty());
}

// #25: open() of a FIFO with no writer blocks forever; every reader opens through open_input()
// and refuses it at once. In a child with an alarm, so the unfixed reader fails instead of hanging.
TEST(BoundedRead, FifoWithoutWriterIsRefusedAtOnce) {
  const std::string fifo = ::testing::TempDir() + "/bounded_fifo." + std::to_string(getpid());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(10);
    std::string out, error;
    bool refused = read_bounded(fifo, kMaxReportBytes, "a report", &out, &error) == ReadResult::kIoError;
    bool said = error == fifo + ": not a regular file (a FIFO (named pipe) or pipe)";
    int fd = open_input(fifo, &error);
    _exit(refused && said && fd < 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  std::remove(fifo.c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

TEST(LimitText, SpellsBinaryUnits) {
  EXPECT_EQ(limit_text(kMaxReportBytes), "128 MiB");
  EXPECT_EQ(limit_text(kMaxTraceBytes), "1 GiB");
  EXPECT_EQ(limit_text(1000), "1000 bytes");
}

// #25: nlohmann keeps the last of a key given twice, so a report could say "leak" and then "clean".
TEST(JsonInput, DuplicateKeysAreRefusedUnlessAllowed) {
  nlohmann::json doc;
  JsonError error;
  EXPECT_FALSE(parse_json(R"({"verdict": "leak", "devices": [], "verdict": "clean"})", &doc, &error));
  EXPECT_EQ(error.kind, JsonError::kDuplicateKey);
  EXPECT_EQ(error.message, "JSON object has the key \"verdict\" twice (which one counts is ambiguous)");
  EXPECT_TRUE(doc.is_null());
  EXPECT_FALSE(parse_json(R"([{"a": 1}, {"b": {"c": 1, "c": 2}}])", &doc, &error));
  EXPECT_EQ(error.kind, JsonError::kDuplicateKey);
  // The same key in sibling objects is no duplicate; other tools' traces may repeat keys.
  ASSERT_TRUE(parse_json(R"([{"a": 1}, {"a": 2}])", &doc, &error)) << error.message;
  JsonRules lenient;
  lenient.refuse_duplicate_keys = false;
  ASSERT_TRUE(parse_json(R"({"a": 1, "a": 2})", &doc, &error, lenient)) << error.message;
  EXPECT_EQ(doc["a"], 2);
}

// The values built are the ones nlohmann's own parser builds.
TEST(JsonInput, BuildsWhatNlohmannBuilds) {
  const std::string text =
      R"({"s": "caf\u00e9\n", "i": -3, "u": 18446744073709551615, "f": 1.5e300, "t": true, "n": null,)"
      R"( "a": [[], {}, [1, [2, {"k": "v"}]]], "e": {}})";
  nlohmann::json doc;
  JsonError error;
  ASSERT_TRUE(parse_json(text, &doc, &error)) << error.message;
  EXPECT_EQ(doc, nlohmann::json::parse(text));
  ASSERT_TRUE(parse_json("  42 ", &doc, &error));
  EXPECT_EQ(doc, 42);
  EXPECT_FALSE(parse_json("[1] x", &doc, &error));
  EXPECT_EQ(error.kind, JsonError::kSyntax);
}

TEST(JsonInput, StreamsTheElementsOfOneArray) {
  std::vector<nlohmann::json> got;
  auto keep = [&](nlohmann::json &e) {
    got.push_back(std::move(e));
    return true;
  };
  JsonStream stream;
  JsonError error;
  JsonRules rules;
  ASSERT_TRUE(stream_json_elements(R"([{"a": 1}, 2, [3]])", "traceEvents", keep, &stream, &error, rules));
  EXPECT_EQ(stream.shape, JsonShape::kArray);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], nlohmann::json({{"a", 1}}));
  EXPECT_EQ(got[2], nlohmann::json::array({3}));
  got.clear();
  ASSERT_TRUE(stream_json_elements(R"({"x": [{"no": 1}], "traceEvents": [{"b": 2}], "y": {"z": []}})", "traceEvents",
                                   keep, &stream, &error, rules));
  EXPECT_EQ(stream.shape, JsonShape::kObject);
  EXPECT_TRUE(stream.key_found);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], nlohmann::json({{"b", 2}}));
  // Elements before a failure stay delivered; the failure is said as parse_json says it.
  got.clear();
  EXPECT_FALSE(stream_json_elements(R"([{"a": 1}, {"b": )", "", keep, &stream, &error, rules));
  EXPECT_EQ(error.kind, JsonError::kTruncated);
  EXPECT_EQ(got.size(), 1u);
  // The bound on one element's values.
  rules.max_element_values = 4;
  EXPECT_TRUE(stream_json_elements("[[1, 2, 3], [4]]", "", keep, &stream, &error, rules));
  EXPECT_FALSE(stream_json_elements("[[1, 2, 3, 4]]", "", keep, &stream, &error, rules));
  EXPECT_EQ(error.kind, JsonError::kTooManyValues);
  // The callback stops the reading.
  uint64_t seen = 0;
  ASSERT_TRUE(stream_json_elements(
      "[1, 2, 3]", "", [&](nlohmann::json &) { return ++seen < 2; }, &stream, &error, JsonRules{}));
  EXPECT_TRUE(stream.stopped);
  EXPECT_EQ(seen, 2u);
}

// One repair for every output: each maximal subpart of an ill-formed sequence becomes one U+FFFD.
// The trace writers' old copy replaced a whole bad sequence once (one U+FFFD for an overlong form,
// a surrogate or a code point past U+10FFFF); this one replaced a cut-short sequence byte by byte.
TEST(ValidUtf8, OneReplacementPerMaximalSubpart) {
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(valid_utf8("caf\xC3\xA9 \xF0\x9F\x98\x80 \xF4\x8F\xBF\xBF"),  // valid text, U+10FFFF included
            "caf\xC3\xA9 \xF0\x9F\x98\x80 \xF4\x8F\xBF\xBF");
  // Cut short: the bytes that start a well-formed sequence are one subpart.
  EXPECT_EQ(valid_utf8("\xE2\x82"
                       "A\xE2\x82\xAC"),
            r + "A\xE2\x82\xAC");
  EXPECT_EQ(valid_utf8("end \xF0\x9F\x98"), "end " + r);
  // No well-formed sequence starts with these two bytes: the second byte is a subpart of its own.
  EXPECT_EQ(valid_utf8("\xE0\x80\x80"), r + r + r);          // overlong
  EXPECT_EQ(valid_utf8("\xED\xA0\x80"), r + r + r);          // a UTF-16 surrogate
  EXPECT_EQ(valid_utf8("\xF4\x90\x80\x80"), r + r + r + r);  // past U+10FFFF
  EXPECT_EQ(valid_utf8("\xC0\xAF\xF5\x80"), r + r + r + r);  // never lead bytes
  // The Unicode Standard's own example (chapter 3, U+FFFD substitution of maximal subparts).
  EXPECT_EQ(valid_utf8("a\xF1\x80\x80\xE1\x80\xC2"
                       "b\x80"
                       "c\x80\xBF"
                       "d"),
            "a" + r + r + r + "b" + r + "c" + r + r + "d");
}

// Terminal injection: ESC (CSI colour, OSC title), BEL, and the 8-bit C1 forms of CSI and OSC.
TEST(Printable, EscapeSequencesAreInert) {
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(printable("f\x1b[31mred"), "f" + r + "[31mred");
  EXPECT_EQ(printable("\x1b]0;pwned\x07x"), r + "]0;pwned" + r + "x");
  EXPECT_EQ(printable("a\xC2\x9B"
                      "31mb\xC2\x9D"
                      "0;t\xC2\x9C"),
            "a" + r + "31mb" + r + "0;t" + r);
  EXPECT_EQ(printable("caf\xC3\xA9 \xC2\xA0ok"), "caf\xC3\xA9 \xC2\xA0ok");  // U+00A0 is text, kept
  EXPECT_EQ(printable("tab\tnl\n"), "tab" + r + "nl" + r);
}

}  // namespace
}  // namespace gpuleak::text
