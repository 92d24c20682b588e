// marked_loop MODE [N=20]: the loop of leaky_loop, with its iterations marked, plus irregular
// allocations that would defeat automatic period detection (a different count per iteration):
//   MODE nvtx: each iteration is an NVTX range "step <i>" (nvtxRangePushA / nvtxRangePop), with a
//              nested range "forward" inside; reaches gpuleak as the NVTX injection library.
//   MODE api:  gpuleak_iteration_begin("train") / gpuleak_iteration_end() from gpuleak.h.
// Expected: N iterations of the named source, a leak of 1 MiB per iteration at cache_activation.
#include <cuda_runtime_api.h>
#include <gpuleak/gpuleak.h>
#include <nvtx3/nvToolsExt.h>

#include <cstring>
#include <string>
#include <vector>

#include "prog_common.h"

extern "C" __attribute__((noinline)) void* cache_activation(size_t bytes) {
    void* p = nullptr;
    CHECK_CUDA(cudaMalloc(&p, bytes));
    asm volatile("" ::: "memory");
    return p;
}

int main(int argc, char** argv) {
    const bool nvtx = argc > 1 && std::strcmp(argv[1], "nvtx") == 0;
    const long n = arg_or(argc, argv, 2, 20);
    std::vector<void*> cache;
    for (long i = 0; i < n; ++i) {
        std::string name = "step " + std::to_string(i);
        if (nvtx) nvtxRangePushA(name.c_str());
        else gpuleak_iteration_begin("train");
        if (nvtx) nvtxRangePushA("forward");
        std::vector<void*> temps;
        for (long k = 0; k < 1 + (i * 7) % 5; ++k) {  // 1..5 temporaries: no fixed period
            void* t = nullptr;
            CHECK_CUDA(cudaMalloc(&t, (1u << 20) + 4096u * k));
            temps.push_back(t);
        }
        if (nvtx) nvtxRangePop();
        cache.push_back(cache_activation(1u << 20));
        for (void* t : temps) CHECK_CUDA(cudaFree(t));
        if (nvtx) nvtxRangePop();
        else gpuleak_iteration_end();
    }
    return 0;
}
