// oom: cudaMalloc 16 GiB chunks until the device runs out (an H200 has ~140 GiB: 8 succeed, the
// 9th fails with cudaErrorMemoryAllocation), then free everything.
//
// Counted by hand (K = the number of chunks that succeeded, 8 on an H200):
//   allocs = K, frees = K, failed_allocs >= 1 (the cuMemAlloc_v2 that returned
//   CUDA_ERROR_OUT_OF_MEMORY), ooms >= 1 (the OOM record written at that failure).
#include <vector>

#include "gpu_common.h"

int main() {
    CHECK_CUDA(cudaSetDevice(0));
    const size_t kChunk = 16ull << 30;
    std::vector<void*> chunks;
    bool oom = false;
    for (int i = 0; i < 64; ++i) {
        void* p = nullptr;
        cudaError_t e = cudaMalloc(&p, kChunk);
        if (e == cudaErrorMemoryAllocation) {
            (void)cudaGetLastError();  // clear it: out-of-memory is not sticky
            oom = true;
            break;
        }
        CHECK_CUDA(e);
        chunks.push_back(p);
    }
    if (!oom) {
        std::fprintf(stderr, "oom: never ran out of memory after %zu chunks of 16 GiB\n", chunks.size());
        return 3;
    }
    for (void* p : chunks) CHECK_CUDA(cudaFree(p));
    std::printf("# %zu chunks of 16 GiB before the out-of-memory\n", chunks.size());
    std::printf("EXPECT allocs=%zu frees=%zu unknown_frees=0 oom>=1 failed_allocs>=1\n", chunks.size(), chunks.size());
    std::printf("EXPECT_KIND device=%zu\n", chunks.size());
    return 0;
}
