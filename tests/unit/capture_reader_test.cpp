// The capture reader against hand-made bytes: whole files, every prefix, garbage.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "format/address_space.h"
#include "format/capture_peek.h"
#include "format/capture_reader.h"
#include "text/limits.h"

namespace gpuleak::format {
namespace {

std::string header(uint16_t major = kMajorVersion) {
  FileHeader h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.major = major;
  h.minor = major == kMajorVersion ? kMinorVersion : 0;
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
  EXPECT_EQ(error, "unsupported capture format version 2.0 (this gpuleak reads 1.x)");
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

// #18: a file that has the magic but ends inside the 40-byte header was cut short, whatever its
// length from 8 to 39 bytes: "truncated", not "bad magic".
TEST(CaptureReader, ShortFileWithTheMagicIsATruncatedHeader) {
  const std::string h = header();
  for (size_t n = sizeof kMagic; n < sizeof(FileHeader); ++n) {
    Capture c;
    std::string error;
    EXPECT_FALSE(parse(h.substr(0, n), &c, &error));
    EXPECT_EQ(error, "truncated capture: the file ends inside its 40-byte header (" + std::to_string(n) + " bytes)");
  }
}

// #17: a report or a trace where the capture belongs is named as such.
TEST(CaptureReader, SaysWhenGivenJsonInsteadOfACapture) {
  Capture c;
  std::string error;
  EXPECT_FALSE(parse("{\n  \"schema\": \"gpuleak.report/1\",\n  \"verdict\": \"clean\"}", &c, &error));
  EXPECT_EQ(error, "not a gpuleak capture: this is a report (JSON); give the .gpuleak capture it was made from");
  EXPECT_FALSE(parse("[\n{\"ph\":\"M\"}", &c, &error));
  EXPECT_EQ(error, "not a gpuleak capture: this is JSON (a report or a trace?); give the .gpuleak capture");
  EXPECT_FALSE(parse("{}", &c, &error));  // shorter than the magic, still JSON
  EXPECT_NE(error.find("this is JSON"), std::string::npos) << error;
}

// #18: what may follow the last whole record is the start of a record cut short (a header whose
// size, type and reserved field a writer could have written), nothing else: junk is refused
// whether or not it starts with a NUL byte, and a cut record is accepted whatever its length.
TEST(CaptureReader, TailIsEitherACutRecordOrCorrupt) {
  const std::string all = sample();
  for (const std::string &junk :
       {std::string("\0\0\0\0\0\0\0\0junk", 12), std::string(16, '\0'), std::string("\0junkjunk", 9),
        std::string("junkjunkjunk"), std::string("\x10\0\0\0\0\0", 6), std::string("\xff\xff\xff\xff", 4),
        std::string("\x10\0\0\0\x05\0\x01\0", 8)}) {
    Capture c;
    std::string error;
    EXPECT_FALSE(parse(all + junk, &c, &error)) << "junk of " << junk.size() << " bytes accepted";
    EXPECT_EQ(error.rfind("corrupt capture: ", 0), 0u) << error;
    // The streaming reader says the same.
    std::string path = ::testing::TempDir() + "/junk.gpuleak";
    FILE *f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::string bytes_on_disk = all + junk;
    std::fwrite(bytes_on_disk.data(), 1, bytes_on_disk.size(), f);
    std::fclose(f);
    std::string streamed_error;
    EXPECT_FALSE(read_capture_file(path, &c, &streamed_error));
    EXPECT_EQ(streamed_error, path + ": " + error);
    std::remove(path.c_str());
  }
  // A memory record cut after 1 to 7 bytes of its header, or inside its payload.
  const std::string cut = record(RecordType::kMemory, std::string(sizeof(MemoryRecord), '\0'));
  for (size_t n = 1; n < cut.size(); ++n) {
    Capture c;
    std::string error;
    ASSERT_TRUE(parse(all + cut.substr(0, n), &c, &error)) << n << ": " << error;
    EXPECT_TRUE(c.truncated);
  }
}

std::string device_record(int32_t index) {
  DeviceRecord d{index, 3, 1ull << 30};
  return record(RecordType::kDevice, bytes(d) + "GPU");
}

// #18: a capture naming more devices than any machine has is refused as it is read (the analysis
// keeps per-device state for every iteration: 30,000 devices in 1 MB took over 4 GB).
TEST(CaptureReader, RefusesMoreDevicesThanTheLimit) {
  std::string ok = header(), too_many = header();
  for (int32_t i = 0; i < static_cast<int32_t>(text::kMaxDevices); ++i) ok += device_record(i * 7);
  ok += device_record(0);  // the same device again: not a new one
  Capture c;
  std::string error;
  ASSERT_TRUE(parse(ok, &c, &error)) << error;
  EXPECT_EQ(c.devices.size(), text::kMaxDevices);
  for (int32_t i = 0; i < 30000; ++i) too_many += device_record(i);
  EXPECT_FALSE(parse(too_many, &c, &error));
  EXPECT_EQ(error, "capture names more than 32 devices (a limit, docs/limits.md): corrupt or not from gpuleak");
  // Memory records count too: 32 known devices and one allocation on a 33rd.
  MemoryRecord m{};
  m.op = static_cast<uint8_t>(Op::kAlloc);
  m.device = 30000;
  EXPECT_FALSE(parse(ok + record(RecordType::kMemory, bytes(m)), &c, &error));
  m.device = 7;  // one of the 32
  EXPECT_TRUE(parse(ok + record(RecordType::kMemory, bytes(m)), &c, &error)) << error;
}

// #25: the analysis sums sizes in 64 bits; a size near 2^64 wrapped a leak to "740 B live".
// Successful allocations claiming more than text::kMaxAllocatedBytes in all make a corrupt capture.
TEST(CaptureReader, RefusesAllocationsPastTheLimit) {
  MemoryRecord m{};
  m.op = static_cast<uint8_t>(Op::kAlloc);
  m.size = text::kMaxAllocatedBytes / 2;
  const std::string half = record(RecordType::kMemory, bytes(m));
  Capture c;
  std::string error;
  ASSERT_TRUE(parse(header() + half + half, &c, &error)) << error;  // exactly the limit
  m.size = 1;
  std::string past = header() + half + half + record(RecordType::kMemory, bytes(m));
  EXPECT_FALSE(parse(past, &c, &error));
  EXPECT_NE(error.find("corrupt capture: the allocation at offset "), std::string::npos) << error;
  EXPECT_NE(error.find("past 4 EiB"), std::string::npos) << error;
  m.size = UINT64_MAX;
  m.result = 2;  // out of memory: a request, not memory held
  EXPECT_TRUE(parse(header() + half + half + record(RecordType::kMemory, bytes(m)), &c, &error)) << error;
  m.result = 0;
  EXPECT_FALSE(parse(header() + record(RecordType::kMemory, bytes(m)), &c, &error));
}

TEST(CaptureReader, DeviceUsageRecordsOfFormat11) {
  EXPECT_GE(kMinorVersion, 1u);  // 1.1 introduced them; 1.2 (kFlagUntimed) kept them as they were
  DeviceUsageRecord u{};
  u.ts_ns = 500;
  u.process_used_bytes = 600u << 20;
  u.device_used_bytes = 900u << 20;
  u.device_total_bytes = 1ull << 34;
  u.tracked_live_bytes = 100u << 20;
  u.device = 1;
  u.flags = kUsageProcessKnown | kUsageAtExit;
  // A later minor version may append fields: the reader keeps what it knows.
  Capture c;
  std::string error;
  ASSERT_TRUE(parse(sample() + record(RecordType::kDeviceUsage, bytes(u) + "more"), &c, &error)) << error;
  ASSERT_EQ(c.device_usage.size(), 1u);
  EXPECT_EQ(c.device_usage[0].process_used_bytes, 600u << 20);
  EXPECT_EQ(c.device_usage[0].device, 1);
  EXPECT_EQ(c.device_usage[0].flags, 3u);
  EXPECT_EQ(c.unknown_records, 1u);  // only the type-999 one
  EXPECT_FALSE(parse(header() + record(RecordType::kDeviceUsage, "short"), &c, &error));
}

// Format 1.3: memory records of kind pool_block (a framework allocator's blocks) read like any
// other, and the PoolTracker record says which tracker reported them. A reader of 1.2 or older
// skips the PoolTracker record (an unknown type) and takes kind 12 for an unknown kind: never
// device memory (address_space_of), so its device bytes stay the segments' alone.
TEST(CaptureReader, PoolBlocksOfFormat13) {
  EXPECT_GE(kMinorVersion, 3u);
  MemoryRecord m{};
  m.ts_ns = 200;
  m.address = 0x1000;  // the segment's own address: a block at its start
  m.size = 1 << 20;
  m.op = static_cast<uint8_t>(Op::kAlloc);
  m.kind = static_cast<uint8_t>(Kind::kPoolBlock);
  m.api = static_cast<uint16_t>(Api::torchCachingAllocator);
  m.flags = kFlagUntimed;
  PoolTrackerRecord t{};
  t.ts_ns = 150;
  t.framework = static_cast<int32_t>(PoolFramework::kPyTorch);
  const std::string description = "torch 2.11.0+cu130 CUDACachingAllocator trace tracker";
  t.length = static_cast<uint32_t>(description.size());
  Capture c;
  std::string error;
  // A later minor version may append fields after the description: ignored.
  ASSERT_TRUE(parse(sample() + record(RecordType::kPoolTracker, bytes(t) + description + "more") +
                        record(RecordType::kMemory, bytes(m)),
                    &c, &error))
      << error;
  ASSERT_EQ(c.memory.size(), 2u);
  EXPECT_EQ(c.memory[1].kind, static_cast<uint8_t>(Kind::kPoolBlock));
  EXPECT_STREQ(kind_name(c.memory[1].kind), "pool_block");
  EXPECT_STREQ(api_name(c.memory[1].api), "torch.CUDACachingAllocator");
  EXPECT_EQ(address_space_of(c.memory[1].kind), AddressSpace::kPoolBlock);
  ASSERT_EQ(c.pool_trackers.size(), 1u);
  EXPECT_EQ(c.pool_trackers[0].framework, 1);
  EXPECT_EQ(c.pool_trackers[0].ts_ns, 150u);
  EXPECT_EQ(c.pool_trackers[0].description, description);
  EXPECT_EQ(c.unknown_records, 1u);  // only the type-999 one
  // A description longer than the record, or than 4096 bytes, is corruption.
  t.length = 5000;
  EXPECT_FALSE(parse(header() + record(RecordType::kPoolTracker, bytes(t) + std::string(5000, 'x')), &c, &error));
  t.length = 10;
  EXPECT_FALSE(parse(header() + record(RecordType::kPoolTracker, bytes(t) + "short"), &c, &error));
}

TEST(CaptureReader, ObservedLoopsOfFormat15) {
  EXPECT_GE(kMinorVersion, 5u);
  LoopRecord l{};
  l.id = 3;
  l.parent_id = 1;
  l.file_id = 7;
  l.function_id = 8;
  l.first_line = 38;
  l.last_line = 52;
  l.depth = 1;
  l.kind = static_cast<uint8_t>(LoopKind::kLoop);
  LoopPassRecord p{};
  p.ts_ns = 300;
  p.task_id = 0x7f0012345678ull;
  p.tid = 99;
  p.loop_id = 3;
  p.op = static_cast<uint8_t>(LoopPassOp::kBackEdge);
  ObserverRecord o{};
  o.ts_ns = 50;
  o.method = static_cast<uint32_t>(ObserverMethod::kMonitoring);
  const std::string note = "Python 3.12.1: sys.monitoring tool 3";
  o.length = static_cast<uint32_t>(note.size());
  Capture c;
  std::string error;
  ASSERT_TRUE(parse(sample() + record(RecordType::kObserver, bytes(o) + note) + record(RecordType::kLoop, bytes(l)) +
                        record(RecordType::kLoopPass, bytes(p)),
                    &c, &error))
      << error;
  ASSERT_EQ(c.loops.size(), 1u);
  EXPECT_EQ(c.loops[0].id, 3u);
  EXPECT_EQ(c.loops[0].parent_id, 1u);
  EXPECT_EQ(c.loops[0].first_line, 38u);
  EXPECT_EQ(c.loops[0].last_line, 52u);
  EXPECT_EQ(c.loops[0].depth, 1u);
  ASSERT_EQ(c.loop_passes.size(), 1u);
  EXPECT_EQ(c.loop_passes[0].task_id, 0x7f0012345678ull);
  EXPECT_EQ(c.loop_passes[0].tid, 99u);
  ASSERT_EQ(c.observers.size(), 1u);
  EXPECT_EQ(c.observers[0].note, note);
  EXPECT_EQ(c.unknown_records, 1u);  // only the type-999 one
  // A pass record cut short is corruption; a note longer than its record too.
  EXPECT_FALSE(parse(header() + record(RecordType::kLoopPass, bytes(p).substr(0, 20)), &c, &error));
  o.length = 100;
  EXPECT_FALSE(parse(header() + record(RecordType::kObserver, bytes(o) + "short"), &c, &error));
}

// Format 1.6 appends the pool fields to the OomRecord: a 1.3 record (56 bytes) reads with them
// zero, a 1.6 one with them, and a shorter one is corruption.
TEST(CaptureReader, OomRecordsOfFormat13And16) {
  EXPECT_GE(kMinorVersion, 6u);
  OomRecord o{};
  o.ts_ns = 300;
  o.requested = 4 << 20;
  o.api = static_cast<uint16_t>(Api::jaxRuntimeError);
  o.pool_in_use_bytes = 7;
  o.pool_largest_free_bytes = 8;
  o.pool_limit_bytes = 9;
  o.pool_framework = static_cast<int32_t>(PoolFramework::kJax);
  const std::string whole = bytes(o);
  Capture c;
  std::string error;
  ASSERT_TRUE(
      parse(sample() + record(RecordType::kOom, whole.substr(0, kOomRecordSize13)) + record(RecordType::kOom, whole),
            &c, &error))
      << error;
  ASSERT_EQ(c.ooms.size(), 2u);
  EXPECT_EQ(c.ooms[0].requested, 4u << 20);
  EXPECT_EQ(c.ooms[0].pool_framework, 0);
  EXPECT_EQ(c.ooms[0].pool_limit_bytes, 0u);
  EXPECT_EQ(c.ooms[1].pool_framework, 3);
  EXPECT_EQ(c.ooms[1].pool_largest_free_bytes, 8u);
  EXPECT_STREQ(api_name(c.ooms[1].api), "jax.JaxRuntimeError");
  EXPECT_FALSE(parse(header() + record(RecordType::kOom, whole.substr(0, 40)), &c, &error));
}

// (1.7) Retention paths: who keeps an object alive, with its address and bytes; a summary has
// address 0. A 1.3 reader skips type 20 (an unknown type).
TEST(CaptureReader, RetentionPathsOfFormat16) {
  EXPECT_GE(kMinorVersion, 6u);
  RetentionRecord r{};
  r.ts_ns = 300;
  r.address = 0x7f0000100000;
  r.size = 1 << 20;
  r.tid = 7;
  r.event = static_cast<uint8_t>(RetentionEvent::kOom);
  const std::string path = "`history` (list, local of main at train.py:44) -> [53 items] -> Tensor";
  r.length = static_cast<uint32_t>(path.size());
  Capture c;
  std::string error;
  ASSERT_TRUE(parse(sample() + record(RecordType::kRetention, bytes(r) + path), &c, &error)) << error;
  ASSERT_EQ(c.retentions.size(), 1u);
  EXPECT_EQ(c.retentions[0].ts_ns, 300u);
  EXPECT_EQ(c.retentions[0].address, 0x7f0000100000u);
  EXPECT_EQ(c.retentions[0].size, 1u << 20);
  EXPECT_EQ(c.retentions[0].tid, 7u);
  EXPECT_EQ(c.retentions[0].event, 2);
  EXPECT_EQ(c.retentions[0].text, path);
  // Text longer than the record, or than 4096 bytes, is corruption.
  r.length = 5000;
  EXPECT_FALSE(parse(header() + record(RecordType::kRetention, bytes(r) + std::string(5000, 'x')), &c, &error));
  r.length = 100;
  EXPECT_FALSE(parse(header() + record(RecordType::kRetention, bytes(r) + "short"), &c, &error));
}

// The file is read through a 4 MiB buffer: records straddling its edges, and a cut at the end,
// must read exactly as the whole bytes do.
TEST(CaptureReader, FileReadInChunksMatchesTheWholeBytes) {
  std::string all = header();
  MemoryRecord m{};
  m.op = static_cast<uint8_t>(Op::kAlloc);
  for (uint64_t i = 0; i < 120000; ++i) {  // 9.6 MB: three chunks
    m.ts_ns = i;
    m.address = i;
    all += record(RecordType::kMemory, bytes(m));
    if (i % 997 == 0) all += record(RecordType::kString, bytes(StringRecord{static_cast<uint32_t>(i), 3}) + "abc");
  }
  std::string path = ::testing::TempDir() + "/chunks.gpuleak";
  for (size_t cut : {size_t{0}, size_t{5}, size_t{50}}) {
    std::string bytes_on_disk = all.substr(0, all.size() - cut);
    FILE *f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(bytes_on_disk.data(), 1, bytes_on_disk.size(), f);
    std::fclose(f);
    Capture whole, streamed;
    std::string e1, e2;
    ASSERT_TRUE(parse(bytes_on_disk, &whole, &e1)) << e1;
    ASSERT_TRUE(read_capture_file(path, &streamed, &e2)) << e2;
    EXPECT_EQ(streamed.memory.size(), whole.memory.size()) << cut;
    EXPECT_EQ(streamed.memory.size(), cut ? 119999u : 120000u);
    EXPECT_EQ(streamed.memory.back().address, whole.memory.back().address);
    EXPECT_EQ(streamed.strings.size(), whole.strings.size());
    EXPECT_EQ(streamed.truncated, cut != 0);
    EXPECT_EQ(streamed.bytes_read, whole.bytes_read);
  }
  std::remove(path.c_str());
}

// gpuleak run's look at a capture's two ends: whose it is, and whether it ends with the final
// Stats record of an exit (a cut file, a Stats record of the running capture, or anything after
// the final one: not finished).
TEST(CapturePeek, SaysWhoseAndWhetherFinished) {
  const std::string dir = ::testing::TempDir();
  auto write = [&](const std::string &name, const std::string &content) {
    const std::string path = dir + "/" + name;
    FILE *f = std::fopen(path.c_str(), "wb");
    EXPECT_NE(f, nullptr);
    if (f) std::fwrite(content.data(), 1, content.size(), f), std::fclose(f);
    return path;
  };
  StatsRecord final_stats{}, running{};
  final_stats.final_record = 1;
  const std::string finished = sample() + record(RecordType::kStats, bytes(final_stats));
  CapturePeek peek;
  ASSERT_TRUE(peek_capture(write("peek-final.gpuleak", finished), &peek));
  EXPECT_EQ(peek.pid, 42u);
  EXPECT_EQ(peek.run_token, "");
  EXPECT_TRUE(peek.finished);
  for (const std::string &unfinished :
       {finished.substr(0, finished.size() - 1), sample() + record(RecordType::kStats, bytes(running)),
        finished + record(RecordType::kString, bytes(StringRecord{8, 1}) + "x"), sample()}) {
    ASSERT_TRUE(peek_capture(write("peek-open.gpuleak", unfinished), &peek));
    EXPECT_FALSE(peek.finished) << unfinished.size();
  }
  EXPECT_FALSE(peek_capture(write("peek-garbage.gpuleak", "not a capture at all, no"), &peek));
  EXPECT_FALSE(peek_capture(dir + "/peek-missing.gpuleak", &peek));
  const std::string fifo = dir + "/peek-fifo.gpuleak";
  std::remove(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_FALSE(peek_capture(fifo, &peek));  // never read: it would block without a writer
  for (const char *name : {"peek-final.gpuleak", "peek-open.gpuleak", "peek-garbage.gpuleak", "peek-fifo.gpuleak"})
    std::remove((dir + "/" + name).c_str());
}

TEST(CaptureReader, MissingFileIsAnError) {
  Capture c;
  std::string error;
  EXPECT_FALSE(read_capture_file("/nonexistent/x.gpuleak", &c, &error));
  EXPECT_EQ(error, "/nonexistent/x.gpuleak: No such file or directory");
}

}  // namespace
}  // namespace gpuleak::format
