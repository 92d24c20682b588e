// Helpers shared by the GPU conformance programs (tests/gpu/*.cu): stop with exit status 2 and a
// readable message when a CUDA call fails, and print the EXPECT lines that run_matrix.sh checks.
//
// The lines a program prints (one per line, on stdout; check_case.py reads them):
//   EXPECT allocs=N frees=M [key=N | key>=N | key<=N ...]  keys of `gpuleak stats`: allocs, frees,
//                              failed_allocs, graph_reservations, unknown_frees, oom (= ooms), ...
//   EXPECT_KIND kind=N ...     by_kind (device, async, vmm, managed, pitched, host_pinned, ...)
//   EXPECT_API name=N ...      by_api (driver entry actually called: cuMemAllocAsync_ptsz, ...)
//   EXPECT_OP op=N ...         by_op (map, unmap, reserve, release_va, pool_trim, ...)
//   EXPECT_LABEL name=N ...    runtime_labels (programs built with -cudart shared only)
//   EXPECT_GRAPH >=N           graph_reservations
//   EXPECT_LEAK function=F bytes_per_iteration=B   the report names a leak of ~B bytes per
//                              iteration (within 5%) whose stack holds function F
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>

#define CHECK_CUDA(call)                                                                    \
    do {                                                                                    \
        cudaError_t e_ = (call);                                                            \
        if (e_ != cudaSuccess) {                                                            \
            std::fprintf(stderr, "%s:%d: %s failed: %s (%d)\n", __FILE__, __LINE__, #call,  \
                         cudaGetErrorString(e_), static_cast<int>(e_));                     \
            std::exit(2);                                                                   \
        }                                                                                   \
    } while (0)

#define CHECK_CU(call)                                                                      \
    do {                                                                                    \
        CUresult r_ = (call);                                                               \
        if (r_ != CUDA_SUCCESS) {                                                           \
            std::fprintf(stderr, "%s:%d: %s failed: CUresult %d\n", __FILE__, __LINE__,     \
                         #call, static_cast<int>(r_));                                      \
            std::exit(2);                                                                   \
        }                                                                                   \
    } while (0)

#ifdef __CUDACC__  // .cu files only: driver_api.cpp is plain C++ linked with -lcuda and no cudart
// A trivial kernel: every test launches one so that the module is loaded as in real programs.
// static: several translation units of one program include this header.
static __global__ void gpu_test_touch(unsigned char* p, size_t n) {
    size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i < n) p[i] = static_cast<unsigned char>(i);
}

static inline void launch_touch(void* p, size_t n, cudaStream_t s = 0) {
    gpu_test_touch<<<1, 128, 0, s>>>(static_cast<unsigned char*>(p), n < 128 ? n : 128);
    CHECK_CUDA(cudaGetLastError());
}
#endif
