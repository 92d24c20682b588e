// stack_shapes [N=200]: allocation call paths built to share stack pointers, for the stack memo
// (src/core/stack_memo.h): the same leaf reached through two callers with equal frames, through
// two different outer callers, at recursion depths 0-4, and alternating in every order. Each
// iteration allocates 8 blocks and frees them. Built with and without frame pointers.
// Prints "EXPECT allocs=8N frees=8N".
#include <cuda_runtime_api.h>

#include <cstdio>

#include "prog_common.h"

namespace {

__attribute__((noinline)) void *leaf(size_t bytes) {
    void *p = nullptr;
    CHECK_CUDA(cudaMalloc(&p, bytes));
    asm volatile("" ::: "memory");  // keep the frame (no tail call)
    return p;
}

// Twins: equal frames, so leaf() runs at the same stack pointer from either.
__attribute__((noinline)) void *twin_a(size_t bytes) {
    void *p = leaf(bytes);
    asm volatile("" ::: "memory");
    return p;
}
__attribute__((noinline)) void *twin_b(size_t bytes) {
    void *p = leaf(bytes + 1);
    asm volatile("" ::: "memory");
    return p;
}

__attribute__((noinline)) void *outer_1(void *(*inner)(size_t), size_t bytes) {
    void *p = inner(bytes);
    asm volatile("" ::: "memory");
    return p;
}
__attribute__((noinline)) void *outer_2(void *(*inner)(size_t), size_t bytes) {
    void *p = inner(bytes);
    asm volatile("" ::: "memory");
    return p;
}

__attribute__((noinline)) void *recurse(int depth, size_t bytes) {
    void *p = depth == 0 ? leaf(bytes) : recurse(depth - 1, bytes + 2);
    asm volatile("" ::: "memory");
    return p;
}

}  // namespace

int main(int argc, char **argv) {
    const long n = arg_or(argc, argv, 1, 200);
    void *(*const twins[2])(size_t) = {twin_a, twin_b};
    void *(*const outers[2])(void *(*)(size_t), size_t) = {outer_1, outer_2};
    for (long i = 0; i < n; ++i) {
        void *p[8];
        p[0] = twins[i % 2](1024);                   // alternates A B A B
        p[1] = twins[(i / 3) % 2](2048);             // runs of three
        p[2] = outers[i % 2](twins[(i / 2) % 2], 4096);  // four combinations, one leaf stack pointer
        p[3] = recurse(static_cast<int>(i % 5), 8192);
        p[4] = recurse(static_cast<int>((i * 7) % 5), 8192);
        p[5] = leaf(512);
        p[6] = outers[(i / 5) % 2](leaf, 256);
        p[7] = twins[(i * i) % 3 == 0](128);
        for (void *q : p) CHECK_CUDA(cudaFree(q));
    }
    std::printf("EXPECT allocs=%ld frees=%ld\n", 8 * n, 8 * n);
    return 0;
}
