// Hostile and mistaken input to the gpuleak commands (#18, #17): each command on /dev/zero, JSON
// nested 100,000 levels deep, a gzip bomb, a capture naming 30,000 devices, a capture where a
// report belongs and the reverse, and names that carry terminal escape sequences. Every case
// ends with one line on stderr and exit status 2 (or the gate's verdict), never a crash, and the
// memory-hungry ones run with their address space capped (RLIMIT_AS, through `ulimit -v`), so a
// reader that balloons fails there instead of passing on a machine with memory to spare.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "format/capture_format.h"
#include "process.h"

namespace gpuleak::test {
namespace {

using format::RecordType;

std::string write(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// The CLI with its address space capped at `mib` MiB.
Result gpuleak_capped(size_t mib, const std::vector<std::string> &args) {
  std::vector<std::string> argv = {"/bin/sh", "-c", "ulimit -v " + std::to_string(mib << 10) + " && exec \"$0\" \"$@\"",
                                   GPULEAK_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, {});
}

Result gpuleak(const std::vector<std::string> &args) { return gpuleak_capped(4096, args); }

// One line on stderr, starting "gpuleak: ", exit 2.
void expect_one_line_error(const Result &r, const std::string &fragment) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.signal, 0);
  EXPECT_EQ(r.err.rfind("gpuleak: ", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
}

template <typename T>
std::string bytes(const T &v) {
  return std::string(reinterpret_cast<const char *>(&v), sizeof v);
}

std::string record(RecordType type, const std::string &payload) {
  format::RecordHeader h{static_cast<uint32_t>(payload.size()), static_cast<uint16_t>(type), 0};
  return bytes(h) + payload;
}

std::string header() {
  format::FileHeader h{};
  std::memcpy(h.magic, format::kMagic, sizeof h.magic);
  h.major = format::kMajorVersion;
  h.minor = format::kMinorVersion;
  h.header_size = sizeof h;
  h.monotonic_ns = 1'000'000;
  h.pid = 4242;
  return bytes(h);
}

std::string run_info(const std::string &program) {
  format::RunInfoRecord r{};
  r.pid = 4242;
  r.rank = -1;
  r.string_count = 1;
  uint32_t len = static_cast<uint32_t>(program.size());
  return record(RecordType::kRunInfo, bytes(r) + bytes(len) + program);
}

std::string alloc(uint64_t ts, uint64_t address, int16_t device, uint64_t size = 1 << 20) {
  format::MemoryRecord m{};
  m.ts_ns = ts;
  m.address = address;
  m.size = size;
  m.tid = 1;
  m.op = static_cast<uint8_t>(format::Op::kAlloc);
  m.kind = static_cast<uint8_t>(format::Kind::kDevice);
  m.device = device;
  return record(RecordType::kMemory, bytes(m));
}

std::string marker(uint64_t ts, format::MarkerOp op) {
  format::MarkerRecord m{};
  m.ts_ns = ts;
  m.tid = 1;
  m.op = static_cast<uint8_t>(op);
  return record(RecordType::kMarker, bytes(m));
}

std::string device_record(int32_t index) {
  format::DeviceRecord d{index, 3, 1ull << 30};
  return record(RecordType::kDevice, bytes(d) + "GPU");
}

std::string deep_json(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(HostileInput, DeepJsonIsRefusedByEveryJsonReader) {
  std::string dir = make_temp_dir("hostile_deep");
  std::string deep = write(dir + "/deep.report.json", deep_json(100000));
  expect_one_line_error(gpuleak({"view", deep, "-o", dir + "/deep.html"}), "nested deeper than 512 levels");
  expect_one_line_error(gpuleak({"merge", deep, "-o", dir + "/merged.json"}), "nested deeper than 512 levels");
  expect_one_line_error(gpuleak({"check", deep}), "nested deeper than 512 levels");
  expect_one_line_error(gpuleak({"diff", deep, deep}), "nested deeper than 512 levels");
  // Inside a report that is otherwise fine, and as one event of a trace in gpuleak's line layout.
  std::string nested =
      "{\"schema\": \"gpuleak.report/1\", \"verdict\": \"clean\", \"devices\": [], \"x\": " + deep_json(100000) + "}";
  expect_one_line_error(gpuleak({"view", write(dir + "/nested.report.json", nested), "-o", dir + "/n.html"}),
                        "nested deeper than 512 levels");
  std::string trace = "[\n{\"ph\":\"M\",\"name\":\"x\",\"args\":" + deep_json(100000) + "},\n]\n";
  expect_one_line_error(gpuleak({"merge", write(dir + "/t.trace.json", trace), "-o", dir + "/m.json"}),
                        "nested deeper than 512 levels");
}

// /dev/zero once made check, diff and merge read 16.7 GB and view never end; it is not a regular
// file, so every reader refuses it before reading a byte (#25).
TEST(HostileInput, EndlessFilesAreRefusedUnread) {
  std::string dir = make_temp_dir("hostile_zero");
  const std::string refused = "/dev/zero: not a regular file (a character device)";
  expect_one_line_error(gpuleak_capped(1024, {"check", "/dev/zero"}), refused);
  expect_one_line_error(gpuleak_capped(1024, {"diff", "/dev/zero", "/dev/zero"}), refused);
  expect_one_line_error(gpuleak_capped(1024, {"view", "/dev/zero", "-o", dir + "/z.html"}), refused);
  expect_one_line_error(gpuleak_capped(1024, {"merge", "/dev/zero", "-o", dir + "/z.json"}), refused);
}

// #25: a FIFO with no writer blocked every reader in open() forever (`timeout` turns a hang into
// exit 124). Every command that opens an input refuses it at once.
TEST(HostileInput, FifoWithoutWriterIsRefusedByEveryReader) {
  std::string dir = make_temp_dir("hostile_fifo");
  const std::string fifo = dir + "/pipe.1.gpuleak";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string said = fifo + ": not a regular file (a FIFO (named pipe) or pipe)";
  for (const std::vector<std::string> &args : {std::vector<std::string>{"report", fifo},
                                               {"view", fifo, "-o", dir + "/f.html"},
                                               {"trace", fifo},
                                               {"export", "--format", "pprof", fifo, "-o", dir + "/f.pb.gz"},
                                               {"stats", fifo},
                                               {"merge", fifo, "-o", dir + "/m.json"},
                                               {"check", fifo},
                                               {"diff", fifo, fifo}}) {
    std::vector<std::string> argv = {"timeout", "20", GPULEAK_CLI_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    Result r = run(argv, {});
    SCOPED_TRACE(args[0]);
    expect_one_line_error(r, said);
  }
}

// #25: sizes near 2^64 wrapped the live bytes: a capture leaking 1 MiB per iteration, then one
// allocation of 2^64 - 10 MiB + 740 bytes, reported "740 B live, clean". A capture whose
// allocations claim more than any machine allocates is corrupt: every reader refuses it with one
// line, never a verdict, and below that limit no sum of sizes can wrap.
TEST(HostileInput, ImpossibleSizesAreCorruptionNotAVerdict) {
  std::string dir = make_temp_dir("hostile_wrap");
  std::string bytes_on_disk = header() + run_info("wrap");
  uint64_t ts = 2'000'000;
  for (uint64_t i = 0; i < 10; ++i) {
    bytes_on_disk += marker(ts++, format::MarkerOp::kIterationBegin);
    bytes_on_disk += alloc(ts++, 0x10000000 + i * 0x100000, 0);
    if (i == 9) bytes_on_disk += alloc(ts++, 0x80000000, 0, 0 - (10ull << 20) + 740);
    bytes_on_disk += marker(ts++, format::MarkerOp::kIterationEnd);
  }
  std::string capture = write(dir + "/wrap.1.gpuleak", bytes_on_disk);
  const std::string said = "takes the bytes its allocations claim past 4 EiB (no machine allocates that";
  expect_one_line_error(gpuleak({"report", capture}), said);
  expect_one_line_error(gpuleak({"view", capture, "-o", dir + "/w.html"}), said);
  expect_one_line_error(gpuleak({"trace", capture}), said);
  expect_one_line_error(gpuleak({"stats", capture}), said);
  // Sizes that each look possible cannot add up past the limit either: 64 of 2^56 bytes reach it.
  std::string many = header() + run_info("wrap");
  for (uint64_t i = 0; i < 70; ++i) many += alloc(2'000'000 + i, 0x10000000 + i * 0x100000, 0, 1ull << 56);
  expect_one_line_error(gpuleak({"report", write(dir + "/many.1.gpuleak", many)}), said);
  // Failed allocations hold nothing: a program asking for SIZE_MAX and told no is not corrupt.
  std::string asked = header() + run_info("ask") + alloc(2'000'000, 0x1000, 0);
  format::MemoryRecord m{};
  m.ts_ns = 2'000'001;
  m.size = UINT64_MAX;
  m.op = static_cast<uint8_t>(format::Op::kAlloc);
  m.kind = static_cast<uint8_t>(format::Kind::kDevice);
  m.result = 2;
  asked += record(RecordType::kMemory, bytes(m));
  Result r = gpuleak({"report", write(dir + "/ask.1.gpuleak", asked), "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// 80 gzip members of 16 MiB of spaces each: 1.25 GiB once inflated, from a few hundred KB.
TEST(HostileInput, GzipBombStopsAtTheTraceLimit) {
  std::string dir = make_temp_dir("hostile_gzip");
  std::string bomb = dir + "/bomb.trace.json.gz";
  Result made = run({"/bin/sh", "-c",
                     "head -c 16777216 /dev/zero | tr '\\0' ' ' | gzip -1 > \"$0.one\" && "
                     "for i in $(seq 80); do cat \"$0.one\"; done > \"$0\" && rm \"$0.one\"",
                     bomb},
                    {});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  expect_one_line_error(gpuleak_capped(3072, {"merge", bomb, "-o", dir + "/m.json"}),
                        "larger than 1 GiB, the limit for a trace, once decompressed");
}

// #25: a 200 KB gzip inflates to 200 MB of JSON whose parsed form took 5.9 GB: merge read other
// tools' traces as one document. It streams them one event at a time now, so the memory is about
// the inflated text; under a 1 GiB cap the bomb merges (its one event) instead of failing.
TEST(HostileInput, GzipOfSmallValuesStaysNearItsText) {
  std::string dir = make_temp_dir("hostile_gzip_values");
  std::string bomb = dir + "/values.trace.json.gz";
  Result made = run({"/bin/sh", "-c",
                     "{ printf '[{\"ph\":\"i\",\"name\":\"x\",\"pid\":1,\"tid\":1,\"ts\":1}'; "
                     "yes ,0 | tr -d '\\n' | head -c 200000000; "
                     "printf ']'; } | gzip -9 > \"$0\"",
                     bomb},
                    {});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  Result r = gpuleak_capped(1024, {"merge", bomb, "-o", dir + "/m.json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.signal, 0);
}

// A 1 MB capture naming 30,000 devices needed over 4 GB (state per device and iteration).
TEST(HostileInput, DeviceBombIsRefusedAsItIsRead) {
  std::string dir = make_temp_dir("hostile_devices");
  std::string bytes_on_disk = header() + run_info("bomb");
  for (int32_t d = 0; d < 30000; ++d) bytes_on_disk += device_record(d);
  for (uint64_t i = 0; i < 2000; ++i)
    bytes_on_disk += marker(2'000'000 + i * 10, format::MarkerOp::kIterationBegin) +
                     marker(2'000'005 + i * 10, format::MarkerOp::kIterationEnd);
  std::string capture = write(dir + "/bomb.1.gpuleak", bytes_on_disk);
  const std::string limit = "capture names more than 32 devices (a limit, docs/limits.md)";
  expect_one_line_error(gpuleak_capped(1024, {"report", capture}), limit);
  expect_one_line_error(gpuleak_capped(1024, {"view", capture, "-o", dir + "/bomb.html"}), limit);
  expect_one_line_error(gpuleak_capped(1024, {"trace", capture}), limit);
  expect_one_line_error(gpuleak_capped(1024, {"stats", capture}), limit);
}

// At the limit: 32 devices, each with memory live, over 10,000 marked iterations (the most a
// report lists), stays under 1 GiB: per-device state is per device and iteration.
TEST(HostileInput, AtTheDeviceLimitMemoryStaysBounded) {
  std::string dir = make_temp_dir("hostile_devices_ok");
  std::string bytes_on_disk = header() + run_info("wide");
  for (int16_t d = 0; d < 32; ++d) bytes_on_disk += device_record(d) + alloc(1'500'000 + d, 0x1000 + d * 0x100000, d);
  for (uint64_t i = 0; i < 10000; ++i)
    bytes_on_disk += marker(2'000'000 + i * 10, format::MarkerOp::kIterationBegin) +
                     marker(2'000'005 + i * 10, format::MarkerOp::kIterationEnd);
  std::string capture = write(dir + "/wide.1.gpuleak", bytes_on_disk);
  Result r = gpuleak_capped(1024, {"report", capture, "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// #18: per-device numbers are sparse. 32 devices, each holding memory, over 300,000 marked
// iterations (a 19 MB capture) in which only device 0 allocates: tables of devices x iterations
// (the ledger's, the analysis's copy, the peak advice's ages) took 1.6 GB and failed under a
// 1.4 GB cap. Now an untouched cell is its device's live bytes at the iteration's boundaries, one
// step each; the report itself (10,000 iterations x 32 devices listed) is most of the 650 MB.
TEST(HostileInput, ManyDevicesTimesManyIterationsStaysSmall) {
  std::string dir = make_temp_dir("hostile_devices_sparse");
  std::string bytes_on_disk = header() + run_info("wide");
  for (int16_t d = 0; d < 32; ++d) bytes_on_disk += device_record(d) + alloc(1'500'000 + d, 0x1000 + d * 0x100000, d);
  for (uint64_t i = 0; i < 300000; ++i) {
    bytes_on_disk += marker(2'000'000 + i * 10, format::MarkerOp::kIterationBegin) +
                     marker(2'000'005 + i * 10, format::MarkerOp::kIterationEnd);
    if (i % 1000 == 0) bytes_on_disk += alloc(2'000'001 + i * 10, 0x100000000 + i * 0x1000, 0, 4096);
  }
  std::string capture = write(dir + "/sparse.1.gpuleak", bytes_on_disk);
  Result r = gpuleak_capped(900, {"report", capture, "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.signal, 0);
}

// #17.7: the mix-ups say what to run instead.
TEST(HostileInput, MisusedFilesSayWhatToRun) {
  std::string dir = make_temp_dir("hostile_misuse");
  std::string capture = write(dir + "/train.7.gpuleak", header() + run_info("train") + alloc(1'500'000, 0x1000, 0));
  expect_one_line_error(gpuleak({"check", capture}),
                        capture + " is a capture, not a report: run `gpuleak report " + capture + "` first");
  expect_one_line_error(gpuleak({"diff", capture, capture}), "is a capture, not a report: run `gpuleak report");
  Result made = gpuleak({"report", capture, "--quiet"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  std::string report = dir + "/train.7.report.json";
  expect_one_line_error(gpuleak({"trace", report}),
                        "not a gpuleak capture: this is a report (JSON); give the .gpuleak capture it was made from");
  expect_one_line_error(gpuleak({"diff", report}), "(see gpuleak diff --help)");
  std::string header_only = write(dir + "/cut.gpuleak", header().substr(0, 20));
  expect_one_line_error(gpuleak({"report", header_only}), "truncated capture: the file ends inside its 40-byte header");
}

// #18.7: a capture with no events gives a report that says so, and a gate given only such
// reports fails closed.
TEST(HostileInput, CaptureWithoutEventsFailsTheGate) {
  std::string dir = make_temp_dir("hostile_empty");
  std::string capture = write(dir + "/idle.9.gpuleak", header() + run_info("idle"));
  Result made = gpuleak({"report", capture});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_NE(made.err.find("note: the capture recorded no CUDA memory events: nothing was measured"), std::string::npos)
      << made.err;
  Result gate = gpuleak({"check", dir + "/idle.9.report.json"});
  EXPECT_EQ(gate.exit_code, 1) << gate.out << gate.err;
  EXPECT_NE(gate.out.find("no report given has any: nothing was measured"), std::string::npos) << gate.out;
}

// #18.6: escape sequences in a program's name reach no terminal; #18.7: truncation is said.
TEST(HostileInput, TextSummaryIsInertAndSaysTruncated) {
  std::string dir = make_temp_dir("hostile_escape");
  const std::string evil =
      "ev\x1b]0;pwned\x07il\x1b[2J\xC2\x9B"
      "31m";
  std::string capture = write(dir + "/evil.3.gpuleak", header() + run_info(evil) + alloc(1'500'000, 0x1000, 0) +
                                                           alloc(1'600'000, 0x2000, 0).substr(0, 30));
  Result r = gpuleak({"report", capture});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\x07'), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("\xC2\x9B"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ev\xEF\xBF\xBD]0;pwned"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("note: the capture is truncated"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gpuleak::test
