// The capture reader against hand-made bytes: whole files, every prefix, garbage.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "format/capture_reader.h"

namespace gpuleak::format {
namespace {

std::string header(uint16_t major = kMajorVersion) {
  FileHeader h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.major = major;
  h.minor = kMinorVersion;
  h.header_size = sizeof h;
  h.pid = 42;
  return std::string(reinterpret_cast<const char *>(&h), sizeof h);
}

std::string record(RecordType type, const std::string &payload) {
  RecordHeader h{static_cast<uint32_t>(payload.size()), static_cast<uint16_t>(type), 0};
  return std::string(reinterpret_cast<const char *>(&h), sizeof h) + payload;
}

template <typename T>
std::string bytes(const T &v) {
  return std::string(reinterpret_cast<const char *>(&v), sizeof v);
}

std::string sample() {
  MemoryRecord m{};
  m.ts_ns = 100;
  m.address = 0x1000;
  m.size = 64;
  m.op = static_cast<uint8_t>(Op::kAlloc);
  m.kind = static_cast<uint8_t>(Kind::kDevice);
  m.stack_id = 1;
  StackRecord s{1, 2, 0};
  uint64_t frames[2] = {0x400100, 0x400200};
  StringRecord str{7, 4};
  return header() + record(RecordType::kStack, bytes(s) + std::string(reinterpret_cast<char *>(frames), 16)) +
         record(RecordType::kString, bytes(str) + "step") + record(RecordType::kMemory, bytes(m)) +
         record(static_cast<RecordType>(999), "future");
}

bool parse(const std::string &b, Capture *c, std::string *e) {
  return parse_capture(reinterpret_cast<const uint8_t *>(b.data()), b.size(), c, e);
}

TEST(CaptureReader, DecodesEveryRecordAndSkipsUnknownTypes) {
  Capture c;
  std::string error;
  ASSERT_TRUE(parse(sample(), &c, &error)) << error;
  ASSERT_EQ(c.memory.size(), 1u);
  EXPECT_EQ(c.memory[0].address, 0x1000u);
  ASSERT_EQ(c.stacks.count(1), 1u);
  EXPECT_EQ(c.stacks[1].frames, (std::vector<uint64_t>{0x400100, 0x400200}));
  EXPECT_EQ(c.string(7), "step");
  EXPECT_EQ(c.string(8), "");
  EXPECT_EQ(c.unknown_records, 1u);
  EXPECT_FALSE(c.truncated);
  EXPECT_EQ(c.header.pid, 42u);
}

// Format 1.1: GPU activity records are decoded, a longer payload (a later minor version) keeps its
// known fields, and a shorter one is corruption.
TEST(CaptureReader, DecodesGpuActivityOfFormat11) {
  GpuActivityRecord g{};
  g.start_ns = 100;
  g.end_ns = 250;
  g.correlation_id = 9;
  g.kind = static_cast<uint8_t>(GpuActivityKind::kKernel);
  Capture c;
  std::string error;
  ASSERT_TRUE(parse(header() + record(RecordType::kGpuActivity, bytes(g)) +
                        record(RecordType::kGpuActivity, bytes(g) + "more fields"),
                    &c, &error))
      << error;
  ASSERT_EQ(c.gpu_activity.size(), 2u);
  EXPECT_EQ(c.gpu_activity[1].end_ns, 250u);
  EXPECT_EQ(c.gpu_activity[1].correlation_id, 9u);
  EXPECT_EQ(c.unknown_records, 0u);
  EXPECT_FALSE(parse(header() + record(RecordType::kGpuActivity, bytes(g).substr(0, 40)), &c, &error));
}

TEST(CaptureReader, EveryPrefixIsReadableAndTruncationIsReported) {
  std::string all = sample();
  for (size_t n = sizeof(FileHeader); n < all.size(); ++n) {
    Capture c;
    std::string error;
    ASSERT_TRUE(parse(all.substr(0, n), &c, &error)) << "prefix " << n << ": " << error;
    EXPECT_LE(c.bytes_read, n);
    EXPECT_EQ(c.truncated, c.bytes_read != n) << n;
  }
}

TEST(CaptureReader, RefusesGarbageWithOneLine) {
  Capture c;
  std::string error;
  EXPECT_FALSE(parse("hello", &c, &error));
  EXPECT_EQ(error, "not a gpuleak capture (file too short)");
  EXPECT_FALSE(parse(std::string(100, 'x'), &c, &error));
  EXPECT_EQ(error, "not a gpuleak capture (bad magic)");
  EXPECT_FALSE(parse(header(2), &c, &error));
  EXPECT_EQ(error,
            "unsupported capture format version 2." + std::to_string(kMinorVersion) + " (this gpuleak reads 1.x)");
  std::string huge = header();
  RecordHeader h{kMaxRecordSize + 1, static_cast<uint16_t>(RecordType::kMemory), 0};
  huge += bytes(h);
  EXPECT_FALSE(parse(huge, &c, &error));
  EXPECT_NE(error.find("claims"), std::string::npos);
  // A memory record shorter than its struct is corrupt, not data.
  EXPECT_FALSE(parse(header() + record(RecordType::kMemory, "short"), &c, &error));
  EXPECT_NE(error.find("malformed record of type 5"), std::string::npos) << error;
  // A stack announcing more frames than it carries.
  StackRecord s{1, 1000, 0};
  EXPECT_FALSE(parse(header() + record(RecordType::kStack, bytes(s)), &c, &error));
}

TEST(CaptureReader, MissingFileIsAnError) {
  Capture c;
  std::string error;
  EXPECT_FALSE(read_capture_file("/nonexistent/x.gpuleak", &c, &error));
  EXPECT_EQ(error, "/nonexistent/x.gpuleak: No such file or directory");
}

}  // namespace
}  // namespace gpuleak::format
