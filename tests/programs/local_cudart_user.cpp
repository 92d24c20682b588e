// A library that depends on libcudart.so.13 and is itself loaded with dlopen(RTLD_LOCAL), the way
// Python loads an extension module: its cudaMalloc binds to the preloaded shim's export, and the
// real runtime is not in the global scope (prog_local_loader).
#include <cuda_runtime_api.h>

extern "C" int local_alloc_and_free(void) {
    void* p = nullptr;
    if (cudaMalloc(&p, 1u << 20) != cudaSuccess) return 1;
    if (cudaFree(p) != cudaSuccess) return 2;
    return 0;
}
