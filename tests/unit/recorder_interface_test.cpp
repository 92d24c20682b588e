// The recorder's internal interface (core/recorder.h), driven the way every hook drives it, with no
// preload, no shim and no CUDA (STYLE.md lesson 2: heaptrack's tests call heaptrack_malloc
// directly). The recorder is one per process, so this is a program of its own: the test records
// allocations and frees from several threads, ends the capture as an exit would, and reads the file
// back with the reader every command uses.
#include <gtest/gtest.h>
#include <unistd.h>

#include <dirent.h>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "core/recorder.h"
#include "format/capture_reader.h"

namespace gpuleak::core {
namespace {

using format::Api;
using format::Kind;
using format::Op;

std::string temp_dir() {
  char pattern[] = "/tmp/gpuleak-recorder-XXXXXX";
  const char *dir = mkdtemp(pattern);
  return dir ? dir : "";
}

std::string only_capture(const std::string &dir) {
  std::string found;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d)) {
      std::string name = e->d_name;
      if (name.size() > 8 && name.compare(name.size() - 8, 8, ".gpuleak") == 0) found = dir + "/" + name;
    }
    closedir(d);
  }
  return found;
}

// What a stream-ordered allocation hook hands over (shim/driver_alloc_handlers.cpp).
void alloc(uint64_t address, uint64_t size, int16_t device) {
  ASSERT_TRUE(hook_enter());
  CallFacts f{};
  f.op = Op::kAlloc;
  f.kind = Kind::kAsync;
  f.api = Api::cuMemAllocAsync;
  f.address = address;
  f.size = size;
  f.device = device;
  f.timing = Timing::kEnd;
  record_alloc(f, Space::kDevicePtr);
  hook_leave();
}

// A free's two halves around the real call, as shim/hook.h makes them.
void free_at(uint64_t address) {
  ASSERT_TRUE(hook_enter());
  CallFacts f{};
  f.op = Op::kFree;
  f.kind = Kind::kAsync;
  f.api = Api::cuMemFreeAsync;
  f.address = address;
  f.timing = Timing::kStart;
  f.start = clock_read();
  PendingFree pending = begin_free();
  // (the real free would run here)
  end_free(pending, f, Space::kDevicePtr);
  hook_leave();
}

TEST(RecorderInterface, HooksRecordRawAndTheReaderPairs) {
  const std::string out = temp_dir();
  ASSERT_FALSE(out.empty());
  Config config;
  config.out_dir = out;
  config.stack_depth = 0;
  config.under_run = true;  // no at-exit report to start
  config.quiet = true;
  config.nvml = false;
  recorder_init(config, 0, 0);
  DriverProbe probe;
  probe.device_count = [] { return 2; };
  probe.device_info = [](int device, char *name, size_t size, uint64_t *total) {
    snprintf(name, size, "test device %d", device);
    *total = 1ull << 34;
    return true;
  };
  recorder_set_probe(probe);

  // Four threads, each 1,000 pairs of its own addresses on device (thread % 2), and keeps its
  // last 10; then a thread frees an address another thread allocated.
  constexpr int kThreads = 4, kPairs = 1000, kKept = 10;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([t] {
      const uint64_t base = 0x7f0000000000ull + (static_cast<uint64_t>(t) << 32);
      for (int i = 0; i < kPairs; ++i) {
        alloc(base + i * 0x1000ull, 4096 + t, static_cast<int16_t>(t % 2));
        if (i < kPairs - kKept) free_at(base + i * 0x1000ull);
      }
    });
  for (std::thread &th : threads) th.join();
  std::thread([] { free_at(0x7f0000000000ull + (kPairs - 1) * 0x1000ull); }).join();  // thread 0's last
  EXPECT_EQ(recorder_shutdown("exit"), -1);

  const std::string path = only_capture(out);
  ASSERT_FALSE(path.empty()) << out;
  format::Capture c;
  std::string error;
  ASSERT_TRUE(format::read_capture_file(path, &c, &error)) << error;
  EXPECT_EQ(c.header.minor, format::kMinorVersion);
  uint64_t allocs = 0, frees = 0, unknown = 0, live_bytes[2] = {0, 0};
  for (const format::MemoryRecord &r : c.memory) {
    EXPECT_EQ(r.space, static_cast<uint8_t>(Space::kDevicePtr) + 1);
    EXPECT_EQ(r.ring, 0);
    if (r.op == static_cast<uint8_t>(Op::kAlloc)) {
      ++allocs;
      live_bytes[r.device] += r.size;
    } else {
      ++frees;
      if (r.flags & format::kFlagUnknownPointer) ++unknown;
      ASSERT_GE(r.device, 0);  // paired: the allocation's device, not the hook's -1
      live_bytes[r.device] -= r.size;
    }
  }
  EXPECT_EQ(allocs, uint64_t{kThreads} * kPairs);
  EXPECT_EQ(frees, uint64_t{kThreads} * (kPairs - kKept) + 1);
  EXPECT_EQ(unknown, 0u);
  // Threads 0 and 2 on device 0 (sizes 4096 and 4098), 1 and 3 on device 1; thread 0 lost one.
  EXPECT_EQ(live_bytes[0], (kKept - 1) * 4096ull + kKept * 4098ull);
  EXPECT_EQ(live_bytes[1], kKept * 4097ull + kKept * 4099ull);
  // The recorder's own tally (the Stats record) agrees with the reader's pairing.
  ASSERT_TRUE(c.stats);
  EXPECT_EQ(c.stats->live_bytes, live_bytes[0] + live_bytes[1]);
  EXPECT_EQ(c.devices.size(), 2u);
}

}  // namespace
}  // namespace gpuleak::core
