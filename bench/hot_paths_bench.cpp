// Micro-benchmarks of the recorder's hot structures (Google Benchmark). Not run in CI; numbers and
// method in docs/benchmarks.md.
#include <benchmark/benchmark.h>

#include <vector>

#include "core/interner.h"
#include "core/module_map.h"
#include "core/stack_capture.h"
#include "core/thread_buffer.h"
#include "format/free_pairing.h"

namespace gpuleak::core {
namespace {

// The reader's pairing of a free with its allocation (format/free_pairing.h), per pair.
void BM_FreePairing(benchmark::State &state) {
  format::FreePairing pairing;
  format::MemoryRecord alloc{}, free{};
  alloc.op = static_cast<uint8_t>(format::Op::kAlloc);
  alloc.kind = static_cast<uint8_t>(format::Kind::kDevice);
  alloc.size = 1 << 20;
  alloc.space = 1;
  free = alloc;
  free.op = static_cast<uint8_t>(format::Op::kFree);
  free.size = 0;
  uint64_t address = 0x7f0000000000;
  for (auto _ : state) {
    alloc.address = free.address = address;
    pairing.apply(alloc);
    format::MemoryRecord f = free;
    pairing.apply(f);
    benchmark::DoNotOptimize(f.size);
    address += 512;
  }
}
BENCHMARK(BM_FreePairing);

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
