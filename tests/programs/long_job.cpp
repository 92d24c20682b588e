// long_job MODE STEPS [OUT_FILE]: a long job on the fake CUDA, for the capture budget (issue #25).
// Each step is one iteration of the loop "train" (gpuleak_iteration_begin/end), cheap enough that
// a million of them take seconds:
//   MODE leak:  two temporaries allocated and freed, a buffer kept for one step (freed in the
//               next), and 64 bytes kept for good at leak_site: a leak of 64 bytes per step.
//   MODE clean: the same without leak_site.
//   MODE storm: four threads allocate and free in a tight loop while the main thread runs STEPS
//               steps, each keeping 4096 bytes at leak_site: a leak of 4096 bytes per step in a
//               storm of unmarked pairs.
//   MODE hoard: STEPS steps each keeping 64 bytes at leak_site, then one step that frees them all
//               (every free as large a record as its allocation).
// With OUT_FILE, the program then writes 256 KiB of its own to OUT_FILE and exits 5 when any
// write, flush or close fails (a full disk), else 0.
#include <cuda_runtime_api.h>
#include <gpuleak/gpuleak.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "prog_common.h"

extern "C" __attribute__((noinline)) void* leak_site(size_t bytes) {
    void* p = nullptr;
    CHECK_CUDA(cudaMalloc(&p, bytes));
    asm volatile("" ::: "memory");
    return p;
}

extern "C" __attribute__((noinline)) void* temporary(size_t bytes) {
    void* p = nullptr;
    CHECK_CUDA(cudaMalloc(&p, bytes));
    asm volatile("" ::: "memory");
    return p;
}

namespace {

std::atomic<bool> g_stop{false};

void churn() {
    while (!g_stop.load(std::memory_order_relaxed)) {
        void* p = temporary(512);
        CHECK_CUDA(cudaFree(p));
    }
}

int write_output(const char* path) {
    FILE* f = std::fopen(path, "w");
    if (!f) return 5;
    std::vector<char> block(4096, 'x');
    for (int i = 0; i < 64; ++i)
        if (std::fwrite(block.data(), 1, block.size(), f) != block.size()) {
            std::fclose(f);
            return 5;
        }
    if (std::fflush(f) != 0) {
        std::fclose(f);
        return 5;
    }
    return std::fclose(f) == 0 ? 0 : 5;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "leak";
    const long steps = arg_or(argc, argv, 2, 1000);
    std::vector<std::thread> storm;
    if (mode == "storm")
        for (int t = 0; t < 4; ++t) storm.emplace_back(churn);
    void* kept = nullptr;
    std::vector<void*> hoard;
    for (long i = 0; i < steps; ++i) {
        gpuleak_iteration_begin("train");
        if (mode == "storm") {
            leak_site(4096);
        } else if (mode == "hoard") {
            hoard.push_back(leak_site(64));
        } else {
            void* a = temporary(1u << 20);
            void* b = temporary(3u << 19);
            CHECK_CUDA(cudaFree(a));
            CHECK_CUDA(cudaFree(b));
            void* next = temporary(1u << 16);  // kept one step
            if (kept) CHECK_CUDA(cudaFree(kept));
            kept = next;
            if (mode == "leak") leak_site(64);
        }
        gpuleak_iteration_end();
    }
    if (!hoard.empty()) {
        gpuleak_iteration_begin("train");
        for (void* p : hoard) CHECK_CUDA(cudaFree(p));
        gpuleak_iteration_end();
    }
    g_stop = true;
    for (auto& t : storm) t.join();
    if (kept) CHECK_CUDA(cudaFree(kept));
    int status = 0;
    if (argc > 3) status = write_output(argv[3]);
    std::printf("long_job %s: %ld steps, exit %d\n", mode.c_str(), steps, status);
    return status;
}
