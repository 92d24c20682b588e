// Part D of async_pools (see async_pools.cu). build.sh compiles this file with
// --default-stream per-thread, so stream 0 is the per-thread default stream and cudart's
// cudaMallocAsync_ptsz / cudaFreeAsync_ptsz / cudaMallocFromPoolAsync_ptsz are the functions called;
// they reach the driver's cuMemAllocAsync_ptsz / cuMemFreeAsync_ptsz / cuMemAllocFromPoolAsync_ptsz.
#include "gpu_common.h"

int ptsz_round(cudaMemPool_t pool) {
    void* p[3];
    CHECK_CUDA(cudaMallocAsync(&p[0], 1u << 20, 0));
    CHECK_CUDA(cudaMallocAsync(&p[1], 5u << 20, 0));
    CHECK_CUDA(cudaMallocFromPoolAsync(&p[2], 1u << 20, pool, 0));
    launch_touch(p[1], 5u << 20, 0);
    for (void* q : p) CHECK_CUDA(cudaFreeAsync(q, 0));
    CHECK_CUDA(cudaStreamSynchronize(0));
    return 3;
}
