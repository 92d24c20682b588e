// advice_loops MODE [N=20]: the loops of the loop advice tests (docs/advice.md), iterations marked
// with gpuleak_iteration_begin("train") / gpuleak_iteration_end(), 8 MiB of weights made first.
//   churn:  scratch_buffer() cudaMallocs 4 MiB and the loop cudaFrees it, every iteration
//   thrash: cache_refill() cudaMallocs 8 blocks of 4 MiB, empty_cache() frees them all, every
//           iteration (what torch.cuda.empty_cache() inside the loop does)
//   late:   activation() cudaMallocs 8 MiB; the previous iteration's is freed only after it
//   clean:  every buffer allocated before the loop; the body allocates nothing
//   pool-reserve: a pool made with cudaMemPoolCreate serves 4 MiB per iteration (cudaMallocFromPoolAsync,
//           cudaFreeAsync, synchronized, 30 ms); halfway, a one-off 512 MiB allocation from it,
//           freed at once. Under FAKE_CUDA_POOL_KEEP=1 the pool keeps those 512 MiB to the end.
//   pool-reserve-fixed: the same, with cudaMemPoolTrimTo(pool, 0) right after the 512 MiB
// Expected: one finding of the mode's kind at the named function; none for clean; pool-reserve:
// a fragmentation finding without a site when NVML follows the fake driver
// (FAKE_NVML_FOLLOW_DRIVER=1), none for pool-reserve-fixed.
// The GPU twin of this program is tests/gpu/advice_loops.cu.
#include <cuda_runtime_api.h>
#include <gpuleak/gpuleak.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "prog_common.h"

namespace {
void *device_alloc(size_t bytes) {
  void *p = nullptr;
  CHECK_CUDA(cudaMalloc(&p, bytes));
  return p;
}
}  // namespace

// Not inlined, extern "C": each site must show up by name in stacks.
extern "C" __attribute__((noinline)) void *scratch_buffer(size_t bytes) {
  void *p = device_alloc(bytes);
  asm volatile("" ::: "memory");  // keep the frame (no tail call)
  return p;
}
extern "C" __attribute__((noinline)) void *activation(size_t bytes) {
  void *p = device_alloc(bytes);
  asm volatile("" ::: "memory");
  return p;
}
extern "C" __attribute__((noinline)) void cache_refill(std::vector<void *> *cache) {
  while (cache->size() < 8) cache->push_back(device_alloc(4u << 20));
  asm volatile("" ::: "memory");
}
extern "C" __attribute__((noinline)) void empty_cache(std::vector<void *> *cache) {
  for (void *p : *cache) CHECK_CUDA(cudaFree(p));
  cache->clear();
  asm volatile("" ::: "memory");
}

namespace {
// One iteration of the pool-reserve modes.
void pool_step(const char *mode, cudaMemPool_t pool, bool burst) {
  if (burst) {  // a one-off phase that needed 512 MiB
    void *big = nullptr;
    CHECK_CUDA(cudaMallocFromPoolAsync(&big, 512u << 20, pool, nullptr));
    CHECK_CUDA(cudaFreeAsync(big, nullptr));
    if (std::strcmp(mode, "pool-reserve-fixed") == 0) CHECK_CUDA(cudaMemPoolTrimTo(pool, 0));
  }
  void *tmp = nullptr;
  CHECK_CUDA(cudaMallocFromPoolAsync(&tmp, 4u << 20, pool, nullptr));
  usleep(30000);  // the work
  CHECK_CUDA(cudaFreeAsync(tmp, nullptr));
  CHECK_CUDA(cudaStreamSynchronize(nullptr));
}
}  // namespace

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "clean";
  const long n = arg_or(argc, argv, 2, 20);
  void *weights = device_alloc(8u << 20);
  void *in = device_alloc(4u << 20);
  cudaMemPool_t pool = nullptr;
  const bool pooled = std::strncmp(mode, "pool-reserve", 12) == 0;
  if (pooled) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    CHECK_CUDA(cudaMemPoolCreate(&pool, &props));
  }
  void *prev = nullptr;
  std::vector<void *> cache;
  for (long i = 0; i < n; ++i) {
    gpuleak_iteration_begin("train");
    if (std::strcmp(mode, "churn") == 0) {
      void *tmp = scratch_buffer(4u << 20);
      usleep(200);  // the work
      CHECK_CUDA(cudaFree(tmp));
    } else if (std::strcmp(mode, "thrash") == 0) {
      cache_refill(&cache);
      usleep(200);
      empty_cache(&cache);
    } else if (std::strcmp(mode, "late") == 0) {
      void *act = activation(8u << 20);
      if (prev) CHECK_CUDA(cudaFree(prev));  // the reference dropped one step late
      prev = act;
      usleep(200);
    } else if (pooled) {
      pool_step(mode, pool, i == n / 2);
    } else {
      usleep(200);  // clean: the body reuses `in` and `weights`
    }
    gpuleak_iteration_end();
  }
  if (prev) CHECK_CUDA(cudaFree(prev));
  if (pool) CHECK_CUDA(cudaMemPoolDestroy(pool));
  CHECK_CUDA(cudaFree(in));
  CHECK_CUDA(cudaFree(weights));
  return 0;
}
