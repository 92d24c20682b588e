// reuse_race [THREADS=4] [ITERS=2000]: the address re-use race a recorder must order right. Run
// with FAKE_CUDA_REUSE=1 (every freed address is the next one handed out, to any thread) and
// FAKE_CUDA_REUSE_DELAY_US (cudaFree returns late, after another thread may have got its address).
// Each thread allocates a size that names it and the round, puts the pointer on a shared queue and
// frees the oldest pointer there, most often another thread's; all is freed by the end.
// EXPECT allocs=THREADS*ITERS frees=THREADS*ITERS.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "prog_common.h"

namespace {
std::mutex g_lock;
std::deque<void*> g_queue;

void worker(long t, long iters) {
    for (long i = 0; i < iters; ++i) {
        void* p = nullptr;
        CHECK_CUDA(cudaMalloc(&p, static_cast<size_t>(1024 + t * 64 + i % 16)));  // < 64 KiB: re-used
        void* oldest = nullptr;
        {
            std::lock_guard<std::mutex> lock(g_lock);
            g_queue.push_back(p);
            if (g_queue.size() > 2) {
                oldest = g_queue.front();
                g_queue.pop_front();
            }
        }
        if (oldest) CHECK_CUDA(cudaFree(oldest));
    }
}
}  // namespace

int main(int argc, char** argv) {
    const long threads = arg_or(argc, argv, 1, 4);
    const long iters = arg_or(argc, argv, 2, 2000);
    std::vector<std::thread> pool;
    for (long t = 0; t < threads; ++t) pool.emplace_back(worker, t, iters);
    for (auto& t : pool) t.join();
    for (void* p : g_queue) CHECK_CUDA(cudaFree(p));
    std::printf("EXPECT allocs=%ld frees=%ld\n", threads * iters, threads * iters);
    return 0;
}
