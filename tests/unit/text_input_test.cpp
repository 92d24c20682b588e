// src/text: the bounded reads and the bounded JSON parser every reader goes through, and the one
// terminal sanitizer (#18: no input makes a reader crash or balloon; names are inert).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "text/bounded_read.h"
#include "text/escape.h"
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

// /dev/zero has no size to check: it is read until it passes the limit, in a child whose address
// space is capped (RLIMIT_AS), so reading it all, as the readers once did, would fail there.
TEST(BoundedRead, EndlessInputStopsAtTheLimit) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    rlimit as{512ull << 20, 512ull << 20};
    setrlimit(RLIMIT_AS, &as);
    std::string out, error;
    bool ok = read_bounded("/dev/zero", kMaxReportBytes, "a report", &out, &error) == ReadResult::kOk;
    bool said = error == "/dev/zero: larger than 128 MiB, the limit for a report (docs/limits.md)";
    _exit(!ok && said ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

TEST(LimitText, SpellsBinaryUnits) {
  EXPECT_EQ(limit_text(kMaxReportBytes), "128 MiB");
  EXPECT_EQ(limit_text(kMaxTraceBytes), "1 GiB");
  EXPECT_EQ(limit_text(1000), "1000 bytes");
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
