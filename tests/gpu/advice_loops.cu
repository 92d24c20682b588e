// advice_loops MODE [N=200]: the loops of the loop advice (docs/advice.md) on a real GPU, each in
// a "before" and an "after following the advice" version, timed by the program itself.
//   churn        scratch_buffer() cudaMallocs 64 MiB, a kernel fills it, cudaFree: every iteration
//   churn-fixed  the same buffer allocated once before the loop and reused
//   thrash       cache_refill() cudaMallocs 8 blocks of 64 MiB, kernels fill them, empty_cache()
//                cudaFrees them all: every iteration (torch.cuda.empty_cache() inside the loop)
//   thrash-fixed the cache filled once and kept
//   late         activation() cudaMallocs 256 MiB; the previous iteration's activation is freed
//                only after it (a reference kept one step too long)
//   late-fixed   each activation freed at the end of its own iteration
//   clean        every buffer allocated before the loop; the body only launches kernels
//   pool-reserve the default memory pool with its release threshold at UINT64_MAX; every iteration
//                cudaMallocAsync 64 MiB, a kernel fills it, cudaFreeAsync, synchronize, 10 ms of
//                host work; at iteration N/3 a one-off 2 GiB phase (allocated, filled, freed): the
//                pool keeps the 2 GiB to the end (N=300: about 3 s, the burst 1 s in, after a few of
//                gpuleak's NVML samples at the default 250 ms, which set the baseline)
//   pool-reserve-fixed the same with cudaMemPoolTrimTo(pool, 0) once, right after the 2 GiB phase
// 128 MiB of "weights" are allocated before the loop. Iterations are marked with gpuleak_iteration_begin("train") / gpuleak_iteration_end().
// Prints one line: TIMING mode=M iterations=N total_ms=T per_iteration_us=U (wall time of the
// loop, synchronized at both ends), which tests/gpu/run_advice.sh puts next to the advice.
#include <gpuleak/gpuleak.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "gpu_common.h"

static __global__ void fill_words(unsigned* p, size_t n, unsigned v) {
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<size_t>(gridDim.x) * blockDim.x)
        p[i] = v + static_cast<unsigned>(i);
}

static void fill(void* p, size_t bytes, unsigned v) {
    fill_words<<<264, 512>>>(static_cast<unsigned*>(p), bytes / sizeof(unsigned), v);
    CHECK_CUDA(cudaGetLastError());
}

static void* device_alloc(size_t bytes) {
    void* p = nullptr;
    CHECK_CUDA(cudaMalloc(&p, bytes));
    return p;
}

// Not inlined, extern "C": each site must show up by name in the report's stacks.
extern "C" __attribute__((noinline)) void* scratch_buffer(size_t bytes) {
    void* p = device_alloc(bytes);
    asm volatile("" ::: "memory");  // keep the frame (no tail call)
    return p;
}
extern "C" __attribute__((noinline)) void* activation(size_t bytes) {
    void* p = device_alloc(bytes);
    asm volatile("" ::: "memory");
    return p;
}
extern "C" __attribute__((noinline)) void cache_refill(std::vector<void*>* cache, size_t block) {
    while (cache->size() < 8) cache->push_back(device_alloc(block));
    asm volatile("" ::: "memory");
}
extern "C" __attribute__((noinline)) void empty_cache(std::vector<void*>* cache) {
    for (void* p : *cache) CHECK_CUDA(cudaFree(p));
    cache->clear();
    asm volatile("" ::: "memory");
}

// Stream-ordered: `bytes` from the stream's pool, filled, given back to it.
static void use_async(size_t bytes, cudaStream_t s, unsigned v) {
    void* p = nullptr;
    CHECK_CUDA(cudaMallocAsync(&p, bytes, s));
    fill_words<<<264, 512, 0, s>>>(static_cast<unsigned*>(p), bytes / sizeof(unsigned), v);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaFreeAsync(p, s));
}

// pool-reserve, pool-reserve-fixed: one iteration on stream s, the one-off phase when `burst`.
static void pool_step(bool fixed, cudaMemPool_t pool, cudaStream_t s, bool burst, unsigned v) {
    if (burst) {
        use_async(size_t{2} << 30, s, v);
        CHECK_CUDA(cudaStreamSynchronize(s));
        if (fixed) CHECK_CUDA(cudaMemPoolTrimTo(pool, 0));  // once, after the phase that needed it
    }
    use_async(64u << 20, s, v);
    CHECK_CUDA(cudaStreamSynchronize(s));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // the host's share of the step
}

int main(int argc, char** argv) {
    const char* mode = argc > 1 ? argv[1] : "clean";
    long n = argc > 2 ? std::strtol(argv[2], nullptr, 10) : 200;
    if (n <= 0) n = 200;
    auto is = [&](const char* m) { return std::strcmp(mode, m) == 0; };
    const bool pooled = is("pool-reserve") || is("pool-reserve-fixed");
    if (!(is("churn") || is("churn-fixed") || is("thrash") || is("thrash-fixed") || is("late") ||
          is("late-fixed") || is("clean") || pooled)) {
        std::fprintf(stderr,
                     "usage: %s churn|churn-fixed|thrash|thrash-fixed|late|late-fixed|clean|pool-reserve|"
                     "pool-reserve-fixed [N]\n",
                     argv[0]);
        return 2;
    }
    const size_t kScratch = 64u << 20, kBlock = 64u << 20, kAct = 256u << 20, kWeights = 128u << 20;
    // Smaller than the cache, as a caching allocator's cache usually is next to the model: the
    // thrash rule wants a burst releasing at least half of what is live.
    void* weights = device_alloc(kWeights);
    fill(weights, kWeights, 1);
    void* scratch = is("churn-fixed") || is("clean") ? device_alloc(kScratch) : nullptr;
    std::vector<void*> cache;
    if (is("thrash-fixed")) cache_refill(&cache, kBlock);
    void* prev = nullptr;
    cudaMemPool_t pool = nullptr;
    cudaStream_t stream = nullptr;
    if (pooled) {
        CHECK_CUDA(cudaDeviceGetDefaultMemPool(&pool, 0));
        uint64_t keep_all = UINT64_MAX;  // the pool never gives memory back on its own
        CHECK_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
        CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    }
    CHECK_CUDA(cudaDeviceSynchronize());

    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < n; ++i) {
        gpuleak_iteration_begin("train");
        unsigned v = static_cast<unsigned>(i);
        if (is("churn")) {
            void* tmp = scratch_buffer(kScratch);
            fill(tmp, kScratch, v);
            CHECK_CUDA(cudaFree(tmp));
        } else if (is("churn-fixed") || is("clean")) {
            fill(scratch, kScratch, v);
        } else if (is("thrash") || is("thrash-fixed")) {
            cache_refill(&cache, kBlock);
            for (void* b : cache) fill(b, kBlock, v);
            if (is("thrash")) empty_cache(&cache);
        } else if (pooled) {
            pool_step(is("pool-reserve-fixed"), pool, stream, i == n / 3, v);
        } else {  // late, late-fixed
            void* act = activation(kAct);
            fill(act, kAct, v);
            if (prev) CHECK_CUDA(cudaFree(prev));  // late: the previous step's, only now
            prev = act;
            if (is("late-fixed")) {
                CHECK_CUDA(cudaFree(act));  // released at the end of its own iteration
                prev = nullptr;
            }
        }
        fill(weights, 1u << 20, v);  // some work on the weights too
        gpuleak_iteration_end();
    }
    CHECK_CUDA(cudaDeviceSynchronize());
    auto t1 = std::chrono::steady_clock::now();
    double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    std::printf("TIMING mode=%s iterations=%ld total_ms=%.3f per_iteration_us=%.2f\n", mode, n, ms,
                ms * 1000.0 / static_cast<double>(n));

    if (prev) CHECK_CUDA(cudaFree(prev));
    if (!cache.empty()) empty_cache(&cache);
    if (scratch) CHECK_CUDA(cudaFree(scratch));
    if (stream) CHECK_CUDA(cudaStreamDestroy(stream));
    CHECK_CUDA(cudaFree(weights));
    return 0;
}
