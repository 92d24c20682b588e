// leaky_loop [N=50]: N iterations of
//   tmp = cudaMalloc(4 MiB); kernel launch on tmp; cache_activation() -> cudaMalloc(1 MiB), kept;
//   cudaFree(tmp).
// Built twice by build.sh: gpu_leaky_static (nvcc's default, static cudart: cudart reaches the driver
// through dlsym(libcuda) + cuGetProcAddress) and gpu_leaky_shared (-cudart shared: libcudart.so.13,
// whose exported cudaMalloc/cudaFree the shim also labels).
//
// Counted by hand (N = 50):
//   allocs: N x 4 MiB temp (cuMemAlloc_v2)  +  N x 1 MiB from cache_activation  = 2N = 100
//   frees:  N x cudaFree(tmp)                                                   =  N =  50
//   by kind: device = 100.  cudaFree(0) is not called; the cache is never freed (the leak).
//   The report: a leak of 1 MiB per iteration whose innermost frame is cache_activation.
#include <vector>

#include "gpu_common.h"

// Not inlined, extern "C": the leak site must show up by name in the report's stack.
extern "C" __attribute__((noinline)) void* cache_activation(size_t bytes) {
    void* p = nullptr;
    CHECK_CUDA(cudaMalloc(&p, bytes));
    asm volatile("" ::: "memory");  // keep the frame (no tail call)
    return p;
}

int main(int argc, char** argv) {
    long n = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 50;
    if (n <= 0) n = 50;
    std::vector<void*> cache;
    for (long i = 0; i < n; ++i) {
        void* tmp = nullptr;
        CHECK_CUDA(cudaMalloc(&tmp, 4u << 20));
        launch_touch(tmp, 4u << 20);
        cache.push_back(cache_activation(1u << 20));
        CHECK_CUDA(cudaDeviceSynchronize());
        CHECK_CUDA(cudaFree(tmp));
    }
    std::printf("EXPECT allocs=%ld frees=%ld unknown_frees=0\n", 2 * n, n);
    std::printf("EXPECT_KIND device=%ld\n", 2 * n);
    std::printf("EXPECT_API cuMemAlloc_v2=%ld\n", 2 * n);
#ifdef GPU_TEST_SHARED_CUDART
    std::printf("EXPECT_LABEL cudaMalloc=%ld cudaFree=%ld\n", 2 * n, n);
#endif
    // frame=0: the leak's innermost frame is the code that called cudaMalloc (CUDA's frames dropped).
    std::printf("EXPECT_LEAK function=cache_activation bytes_per_iteration=%d frame=0\n", 1 << 20);
    return 0;  // the cache is never freed
}
