// leaky_loop [N=50]: N iterations of
//   cudaMalloc 4 MiB temp; cache_activation() -> cudaMalloc 1 MiB, kept; cudaFree temp.
// Expected: 2N allocations, N frees, N MiB (N x 1 MiB) live at exit, all from
// cache_activation. Built as prog_leaky_static and prog_leaky_shared.
// PROG_SLEEP_MS=M: stay M ms after the loop (what the shim samples meanwhile, GPULEAK_NVML_INTERVAL_MS).
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "prog_common.h"

// Not inlined, extern "C": the leak site must show up by name in stacks.
extern "C" __attribute__((noinline)) void* cache_activation(size_t bytes) {
    void* p = nullptr;
    CHECK_CUDA(cudaMalloc(&p, bytes));
    asm volatile("" ::: "memory");  // keep the frame (no tail call)
    return p;
}

int main(int argc, char** argv) {
    const long n = arg_or(argc, argv, 1, 50);
    std::vector<void*> cache;
    for (long i = 0; i < n; ++i) {
        void* tmp = nullptr;
        CHECK_CUDA(cudaMalloc(&tmp, 4u << 20));
        cache.push_back(cache_activation(1u << 20));
        CHECK_CUDA(cudaFree(tmp));
    }
    if (const char* ms = std::getenv("PROG_SLEEP_MS")) usleep(static_cast<useconds_t>(std::atoi(ms)) * 1000u);
    return 0;  // the cache is never freed
}
