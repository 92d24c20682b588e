// pool_blocks MODE [N=40]: a caching allocator that tells gpuleak about its blocks, as gpuleak's
// PyTorch adapter does (gpuleak_pool_block, include/gpuleak/gpuleak.h; capture format 1.3).
// Segments come from cudaMalloc (20 MiB each); blocks are handed out inside them. Iterations are
// marked with gpuleak_iteration_begin/end.
//   MODE leak:  a new segment every 5 iterations; each iteration keeps one 1 MiB block from
//               keep_tensor (never given back) and hands out and takes back three scratch blocks.
//               Expected: verdict leak, 1 MiB per iteration at keep_tensor (not at the cudaMalloc
//               of grow_segment), device peak = the segments' bytes only (N/5 x 20 MiB).
//   MODE clean: segments grow in the first 3 iterations, then stop; every block is given back in
//               its iteration. Expected: verdict clean.
#include <cuda_runtime_api.h>
#include <gpuleak/gpuleak.h>

#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "prog_common.h"

namespace {
constexpr unsigned long long kMiB = 1ull << 20;
constexpr unsigned long long kSegment = 20 * kMiB;
constexpr int kPyTorch = 1;
// Called through the exported symbol, as the adapter does (the header's inline wrapper would put
// gpuleak.h's line into the tensors' frames).
const auto pool_block = reinterpret_cast<gpuleak_pool_block_fn>(dlsym(RTLD_DEFAULT, "gpuleak_api_pool_block"));
}  // namespace

extern "C" __attribute__((noinline)) unsigned long long grow_segment() {
  void *p = nullptr;
  CHECK_CUDA(cudaMalloc(&p, kSegment));
  asm volatile("" ::: "memory");
  return reinterpret_cast<uintptr_t>(p);
}

extern "C" __attribute__((noinline)) void keep_tensor(unsigned long long address) {
  if (pool_block) pool_block(1, 0, address, kMiB, 0, kPyTorch);
  asm volatile("" ::: "memory");
}

extern "C" __attribute__((noinline)) void scratch_tensor(unsigned long long address, unsigned long long size) {
  if (pool_block) pool_block(1, 0, address, size, 0, kPyTorch);
  asm volatile("" ::: "memory");
}

extern "C" __attribute__((noinline)) void release_tensor(unsigned long long address) {
  if (pool_block) pool_block(2, 0, address, 0, 0, kPyTorch);
  asm volatile("" ::: "memory");
}

int main(int argc, char **argv) {
  const bool leak = argc > 1 && std::strcmp(argv[1], "leak") == 0;
  const long n = arg_or(argc, argv, 2, 40);
  gpuleak_pool_attached(kPyTorch, "test allocator (pool_blocks.cpp)");
  std::vector<unsigned long long> segments;
  for (long i = 0; i < n; ++i) {
    gpuleak_iteration_begin("train");
    const bool grow = leak ? i % 5 == 0 : i < 3;
    if (grow) segments.push_back(grow_segment());
    const unsigned long long base = segments.back();
    // A block at the segment's very start has the segment's address: its own address space.
    if (leak) keep_tensor(base + static_cast<unsigned long long>(i % 5) * kMiB);
    const unsigned long long scratch = base + 10 * kMiB;
    // One call site each (not unrolled into three), like one line of a training step.
#pragma GCC unroll 1
    for (int k = 0; k < 3; ++k) scratch_tensor(scratch + k * 2 * kMiB, 2 * kMiB);
#pragma GCC unroll 1
    for (int k = 0; k < 3; ++k) release_tensor(scratch + k * 2 * kMiB);
    gpuleak_iteration_end();
  }
  return 0;
}
