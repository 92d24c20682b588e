// async_pools: stream-ordered allocation, every driver entry point of it.
//   A. a created stream s:   4 x cudaMallocAsync / cudaFreeAsync          -> cuMemAllocAsync
//   B. cudaStreamPerThread:  2 x cudaMallocAsync / cudaFreeAsync          -> cuMemAllocAsync_ptsz
//                            (cudart routes the per-thread stream handle to the _ptsz entry)
//   C. an explicit pool (cudaMemPoolCreate) on s: 2 x cudaMallocFromPoolAsync / cudaFreeAsync
//                                                                          -> cuMemAllocFromPoolAsync
//   D. async_pools_ptsz.cu, compiled with --default-stream per-thread (cudart's *_ptsz functions):
//      2 x cudaMallocAsync + 1 x cudaMallocFromPoolAsync on stream 0, 3 x cudaFreeAsync
//                                    -> cuMemAllocAsync_ptsz, cuMemAllocFromPoolAsync_ptsz
//   then cudaMemPoolTrimTo(pool, 0) and cudaMemPoolDestroy(pool).
//
// Counted by hand: allocs = 4 + 2 + 2 + 3 = 11, frees = 11, all of kind async.
//   cuMemAllocAsync + cuMemAllocAsync_ptsz = 8 (A, B, D): at least 4 plain (A) and 2 _ptsz (D);
//   cuMemAllocFromPoolAsync = 2 (C), cuMemAllocFromPoolAsync_ptsz = 1 (D).
//   Pool operations (not allocations): pool_create 1, pool_trim 1, pool_destroy 1.
#include "gpu_common.h"

// async_pools_ptsz.cu: returns the number of allocations it made (all freed again).
int ptsz_round(cudaMemPool_t pool);

int main() {
    CHECK_CUDA(cudaSetDevice(0));
    cudaStream_t s;
    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    // A: a stream of our own.
    void* a[4];
    for (int i = 0; i < 4; ++i) CHECK_CUDA(cudaMallocAsync(&a[i], (1u << 20) + 4096u * i, s));
    launch_touch(a[0], 1u << 20, s);
    for (int i = 0; i < 4; ++i) CHECK_CUDA(cudaFreeAsync(a[i], s));
    CHECK_CUDA(cudaStreamSynchronize(s));

    // B: the per-thread default stream named explicitly from a legacy-stream translation unit.
    void* b[2];
    for (int i = 0; i < 2; ++i) CHECK_CUDA(cudaMallocAsync(&b[i], 2u << 20, cudaStreamPerThread));
    launch_touch(b[0], 2u << 20, cudaStreamPerThread);
    for (int i = 0; i < 2; ++i) CHECK_CUDA(cudaFreeAsync(b[i], cudaStreamPerThread));
    CHECK_CUDA(cudaStreamSynchronize(cudaStreamPerThread));

    // C: an explicit pool.
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaMemPool_t pool;
    CHECK_CUDA(cudaMemPoolCreate(&pool, &props));
    void* c[2];
    for (int i = 0; i < 2; ++i) CHECK_CUDA(cudaMallocFromPoolAsync(&c[i], 3u << 20, pool, s));
    launch_touch(c[1], 3u << 20, s);
    for (int i = 0; i < 2; ++i) CHECK_CUDA(cudaFreeAsync(c[i], s));
    CHECK_CUDA(cudaStreamSynchronize(s));

    // D: the per-thread-default-stream translation unit.
    const int d = ptsz_round(pool);

    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaMemPoolTrimTo(pool, 0));
    CHECK_CUDA(cudaMemPoolDestroy(pool));
    CHECK_CUDA(cudaStreamDestroy(s));

    const int total = 4 + 2 + 2 + d;
    std::printf("EXPECT allocs=%d frees=%d unknown_frees=0\n", total, total);
    std::printf("EXPECT_KIND async=%d\n", total);
    std::printf("EXPECT_API cuMemAllocAsync>=4 cuMemAllocAsync_ptsz>=2 cuMemAllocFromPoolAsync=2 "
                "cuMemAllocFromPoolAsync_ptsz=1 cuMemFreeAsync_ptsz>=3\n");
    std::printf("EXPECT_OP pool_create>=1 pool_trim>=1 pool_destroy>=1\n");
    std::printf("EXPECT_VERDICT clean|inconclusive\n");  // everything was freed: no leak
    return 0;
}
