// Micro-benchmarks of the recorder's hot structures (Google Benchmark). Not run in CI; numbers and
// method in docs/benchmarks.md.
#include <benchmark/benchmark.h>

#include <vector>

#include "core/interner.h"
#include "core/live_table.h"
#include "core/module_map.h"
#include "core/stack_capture.h"
#include "core/thread_buffer.h"

namespace gpuleak::core {
namespace {

void BM_LiveTableInsertTake(benchmark::State &state) {
  LiveTable table;
  LiveEntry e;
  e.size = 1 << 20;
  e.counts_on_device = true;
  uint64_t address = 0x7f0000000000;
  for (auto _ : state) {
    table.insert(Space::kDevicePtr, address, e);
    LiveEntry out;
    table.take(Space::kDevicePtr, address, &out);
    address += 512;
  }
}
BENCHMARK(BM_LiveTableInsertTake)->Threads(1)->Threads(8);

void BM_StackInternKnown(benchmark::State &state) {
  StackInterner interner;
  std::vector<uint64_t> frames(32);
  for (size_t i = 0; i < frames.size(); ++i) frames[i] = 0x400000 + i * 64;
  bool is_new;
  interner.intern(frames.data(), 32, &is_new);
  for (auto _ : state) benchmark::DoNotOptimize(interner.intern(frames.data(), 32, &is_new));
}
BENCHMARK(BM_StackInternKnown);

void BM_BufferAppendDrain(benchmark::State &state) {
  BufferRegistry registry;
  ThreadBuffer *b = registry.create(1 << 20, 1);
  char record[80] = {};
  size_t drained = 0;
  for (auto _ : state) {
    if (!buffer_append(b, record, 8, record + 8, 72)) drained += buffer_drain(b, [](const uint8_t *, size_t) {});
  }
  benchmark::DoNotOptimize(drained);
}
BENCHMARK(BM_BufferAppendDrain);

__attribute__((noinline)) unsigned deep(const StackCapture &c, int depth, uint64_t *out) {
  if (depth > 0) return deep(c, depth - 1, out) + 0;
  return c.capture(out, 32);
}

void BM_StackCaptureDepth(benchmark::State &state) {
  StackCapture capture;
  auto own = ModuleMap::range_of(reinterpret_cast<void *>(&BM_StackCaptureDepth));
  (void)own;
  capture.init(0, 0);
  uint64_t frames[128];
  for (auto _ : state) benchmark::DoNotOptimize(deep(capture, static_cast<int>(state.range(0)), frames));
  state.SetLabel(capture.unwinder_name());
}
BENCHMARK(BM_StackCaptureDepth)->Arg(8)->Arg(24);

}  // namespace
}  // namespace gpuleak::core

BENCHMARK_MAIN();
