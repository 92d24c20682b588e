// long_free: one thread's cudaFree takes long (run with FAKE_CUDA_SYNC_LATENCY_US, as a real
// synchronous free waits for the device) while another thread keeps allocating and freeing
// stream-ordered memory. A recorder that held every thread's records until the slow free returned
// would fill the busy thread's buffer and drop records, or make it wait.
// EXPECT allocs=PAIRS+1 frees=PAIRS+1.
#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "prog_common.h"

int main() {
    std::atomic<int> stage{0};  // 1: the slow free is about to begin, 2: it returned
    std::thread slow([&] {
        void* p = nullptr;
        CHECK_CUDA(cudaMalloc(&p, 1 << 20));
        stage = 1;
        CHECK_CUDA(cudaFree(p));
        stage = 2;
    });
    cudaStream_t stream;
    CHECK_CUDA(cudaStreamCreate(&stream));
    while (stage.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    long pairs = 0;
    while (stage.load() != 2) {
        void* p = nullptr;
        CHECK_CUDA(cudaMallocAsync(&p, 4096, stream));
        CHECK_CUDA(cudaFreeAsync(p, stream));
        ++pairs;
    }
    slow.join();
    std::printf("EXPECT allocs=%ld frees=%ld\n", pairs + 1, pairs + 1);
    return 0;
}
