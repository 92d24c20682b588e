// abort_midway: allocates 5 x 1 MiB, prints EXPECT allocs=5 frees=0, then
// abort()s (SIGABRT: no atexit handlers, no destructors).
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>

#include "prog_common.h"

int main() {
    for (int i = 0; i < 5; ++i) {
        void* p = nullptr;
        CHECK_CUDA(cudaMalloc(&p, 1u << 20));
    }
    std::printf("EXPECT allocs=5 frees=0\n");
    std::fflush(stdout);
    std::abort();
}
