// Helpers shared by the test programs: abort the program (exit status 2)
// with a readable message when a CUDA call fails.
#pragma once

#include <cstdio>
#include <cstdlib>

#define CHECK_CUDA(call)                                                                  \
    do {                                                                                  \
        cudaError_t e_ = (call);                                                          \
        if (e_ != cudaSuccess) {                                                          \
            std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,     \
                         cudaGetErrorString(e_));                                         \
            std::exit(2);                                                                 \
        }                                                                                 \
    } while (0)

#define CHECK_CU(call)                                                                    \
    do {                                                                                  \
        CUresult r_ = (call);                                                             \
        if (r_ != CUDA_SUCCESS) {                                                         \
            std::fprintf(stderr, "%s:%d: %s failed: CUresult %d\n", __FILE__, __LINE__,   \
                         #call, static_cast<int>(r_));                                    \
            std::exit(2);                                                                 \
        }                                                                                 \
    } while (0)

// argv[i] as a positive integer, or the default.
inline long arg_or(int argc, char** argv, int i, long def) {
    if (argc <= i) return def;
    long v = std::strtol(argv[i], nullptr, 10);
    return v > 0 ? v : def;
}
