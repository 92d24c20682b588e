// Issue #15, goal 2: THREADS threads (8) each make PAIRS (20,000) cudaMallocAsync + cudaFreeAsync
// pairs on their own stream, all at once (4 KiB to 64 KiB). bench/async_stress.py runs it plain
// and under gpuleak and compares the whole runs, at-exit analysis included.
// usage: async_stress_bench [THREADS] [PAIRS] [HOLD_MB]
// HOLD_MB (default 0): host memory written once and kept until exit, so that the kernel's release
// of it at exit takes a while, as a CUDA context's teardown does on a GPU host (the fake CUDA has
// none): the time `gpuleak run` analyzes the capture in (bench/exit_gap.py measures it).
#include <cuda_runtime_api.h>

#include <cstring>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

int main(int argc, char **argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 8;
  const int pairs = argc > 2 ? std::atoi(argv[2]) : 20000;
  const size_t hold = argc > 3 ? static_cast<size_t>(std::atoll(argv[3])) << 20 : 0;
  if (hold) std::memset(std::malloc(hold), 1, hold);  // kept: released by the kernel at exit
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  std::vector<int> failed(threads, 0);
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([t, pairs, &failed] {
      cudaStream_t s;
      if (cudaStreamCreate(&s) != cudaSuccess) {
        failed[t] = 1;
        return;
      }
      for (int i = 0; i < pairs; ++i) {
        void *p = nullptr;
        if (cudaMallocAsync(&p, 4096u * static_cast<size_t>(1 + (i + t) % 16), s) != cudaSuccess ||
            cudaFreeAsync(p, s) != cudaSuccess) {
          failed[t] = 1;
          return;
        }
      }
      cudaStreamSynchronize(s);
      cudaStreamDestroy(s);
    });
  for (auto &t : pool) t.join();
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  for (int f : failed)
    if (f) return 1;
  std::printf("async_stress threads=%d pairs=%d ms=%.1f\n", threads, pairs, ms);
  return 0;
}
