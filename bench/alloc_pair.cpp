// What gpuleak adds to one cudaMallocAsync + cudaFreeAsync pair, the cheapest allocation there is
// (~1 us on the H200, ~0.1 us on the fake CUDA). Run it with and without the shim
// (bench/run_overhead.sh) and compare medians. Plain timing loop, no framework: the same source is
// built against the fake static runtime here and with nvcc against the real one on the GPU.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char **argv) {
  const int pairs = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 15;
  const size_t bytes = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : (1u << 20);
  cudaStream_t stream;
  if (cudaStreamCreate(&stream) != cudaSuccess) return 1;
  void *warm = nullptr;
  for (int i = 0; i < 1000; ++i) {  // warm the pool, the unwinder caches and the interned stack
    cudaMallocAsync(&warm, 1 << 20, stream);
    cudaFreeAsync(warm, stream);
  }
  std::vector<double> ns;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < pairs; ++i) {
      void *p = nullptr;
      if (cudaMallocAsync(&p, bytes, stream) != cudaSuccess) return 1;
      cudaFreeAsync(p, stream);
    }
    auto t1 = std::chrono::steady_clock::now();
    ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / pairs);
    cudaStreamSynchronize(stream);
  }
  std::sort(ns.begin(), ns.end());
  std::printf("pair_ns median=%.1f min=%.1f max=%.1f reps=%d pairs=%d bytes=%zu\n", ns[ns.size() / 2], ns.front(),
              ns.back(), reps, pairs, bytes);
  return 0;
}
