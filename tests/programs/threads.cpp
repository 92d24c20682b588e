// threads_static [THREADS=8] [ITERS=1000]: every thread does ITERS rounds of
// cudaMalloc(4096 + i) / cudaFree, then keeps 3 more allocations alive.
// EXPECT allocs=THREADS*(ITERS+3) frees=THREADS*ITERS (8024 / 8000 by default).
#include <cuda_runtime_api.h>

#include <cstdio>
#include <thread>
#include <vector>

#include "prog_common.h"

namespace {
void worker(long iters) {
    for (long i = 0; i < iters; ++i) {
        void* p = nullptr;
        CHECK_CUDA(cudaMalloc(&p, 4096 + static_cast<size_t>(i)));
        CHECK_CUDA(cudaFree(p));
    }
    for (int k = 0; k < 3; ++k) {
        void* kept = nullptr;
        CHECK_CUDA(cudaMalloc(&kept, 64u << 10));  // live at exit
    }
}
}  // namespace

int main(int argc, char** argv) {
    const long threads = arg_or(argc, argv, 1, 8);
    const long iters = arg_or(argc, argv, 2, 1000);
    std::vector<std::thread> pool;
    for (long t = 0; t < threads; ++t) pool.emplace_back(worker, iters);
    for (auto& t : pool) t.join();
    std::printf("EXPECT allocs=%ld frees=%ld\n", threads * (iters + 3), threads * iters);
    return 0;
}
