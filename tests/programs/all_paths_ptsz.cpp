// Per-thread-default-stream half of all_paths. This file is compiled with
// -DCUDA_API_PER_THREAD_DEFAULT_STREAM, so cuda_runtime_api.h turns
// cudaMallocAsync/cudaFreeAsync/cudaStreamSynchronize into the
// cudaMallocAsync_ptsz/... exports, exactly like nvcc --default-stream per-thread.
#include <cuda_runtime_api.h>

#include "prog_common.h"

// 1 allocation + 1 free on cudaStreamPerThread through the _ptsz entry points.
void alloc_on_per_thread_stream() {
    void* p = nullptr;
    CHECK_CUDA(cudaMallocAsync(&p, 1u << 20, cudaStreamPerThread));
    CHECK_CUDA(cudaFreeAsync(p, cudaStreamPerThread));
    CHECK_CUDA(cudaStreamSynchronize(cudaStreamPerThread));
}
