// The README's sample: a training-style loop that keeps 1 MiB of activations alive per step.
// Built with nvcc's defaults (static CUDA runtime), run under `gpuleak run` by scripts/demo.sh.
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void step_kernel(float *x, size_t n) {
  size_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 0.5f + 1.0f;
}

// The leak: a cache that is filled every step and never trimmed.
__attribute__((noinline)) void *cache_activation(std::vector<void *> &cache, size_t bytes) {
  void *p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) return nullptr;
  cache.push_back(p);
  return p;
}

int main(int argc, char **argv) {
  int steps = argc > 1 ? std::atoi(argv[1]) : 200;
  std::vector<void *> cache;
  for (int step = 0; step < steps; ++step) {
    float *workspace = nullptr;
    size_t n = (4u << 20) / sizeof(float);
    if (cudaMalloc(&workspace, n * sizeof(float)) != cudaSuccess) return 1;
    step_kernel<<<(n + 255) / 256, 256>>>(workspace, n);
    cache_activation(cache, 1u << 20);
    cudaFree(workspace);
  }
  cudaDeviceSynchronize();
  std::printf("ran %d steps, cache holds %zu buffers\n", steps, cache.size());
  return 0;
}
