// oom [CHUNK_MIB=1]: allocates CHUNK_MIB chunks with cudaMalloc until one fails
// with cudaErrorMemoryAllocation, frees one chunk and retries once, which
// must succeed (a "recovered" OOM). Then frees everything and prints
// EXPECT oom=1.
//
// Capacity: run with a small FAKE_CUDA_CAPACITY, e.g. FAKE_CUDA_CAPACITY=64M
// (64 x 1 MiB chunks fit, the 65th fails). If the variable is unset the
// program sets FAKE_CUDA_CAPACITY=64M itself before the first CUDA call
// (the fake driver reads it when it is loaded); with a real GPU it would
// simply fill the device.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "prog_common.h"

int main(int argc, char** argv) {
    setenv("FAKE_CUDA_CAPACITY", "64M", /*overwrite=*/0);
    const size_t chunk = static_cast<size_t>(arg_or(argc, argv, 1, 1)) << 20;
    std::vector<void*> chunks;
    int ooms = 0;
    for (int i = 0; i < 1000000; ++i) {
        void* p = nullptr;
        cudaError_t e = cudaMalloc(&p, chunk);
        if (e == cudaErrorMemoryAllocation) {
            ++ooms;
            break;
        }
        CHECK_CUDA(e);
        chunks.push_back(p);
    }
    if (ooms != 1 || chunks.empty()) {
        std::fprintf(stderr, "never ran out of memory (or nothing fit)\n");
        return 1;
    }
    if (cudaGetLastError() != cudaErrorMemoryAllocation) {  // OOM is not sticky
        std::fprintf(stderr, "cudaGetLastError did not report the OOM\n");
        return 1;
    }
    CHECK_CUDA(cudaFree(chunks.back()));
    chunks.pop_back();
    void* p = nullptr;
    CHECK_CUDA(cudaMalloc(&p, chunk));  // recovered
    chunks.push_back(p);
    for (void* c : chunks) CHECK_CUDA(cudaFree(c));
    std::printf("EXPECT oom=1\n");
    return 0;
}
