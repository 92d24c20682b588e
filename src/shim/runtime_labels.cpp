// cudart's memory functions, exported so that programs using the shared runtime (libcudart.so.13)
// come through here first. These hooks record nothing: the driver hooks underneath are the source
// of truth (DESIGN.md); the runtime only labels the driver call with the function the program
// wrote (cudaMallocHost -> cuMemHostAlloc). Programs built with the static runtime never reach
// these, and lose only the label.
#include <cuda_runtime_api.h>

#include <atomic>

#include "core/recorder.h"
#include "shim/real_symbols.h"

#define GPULEAK_API extern "C" __attribute__((visibility("default")))

namespace {

using gpuleak::format::Api;

template <Api A, typename Fn>
struct Runtime;

template <Api A, typename... Args>
struct Runtime<A, cudaError_t (*)(Args...)> {
  static cudaError_t call(const char *name, Args... a) {
    static std::atomic<void *> next{nullptr};
    void *fn = next.load(std::memory_order_acquire);
    if (!fn) {
      fn = gpuleak::shim::next_symbol(name);
      next.store(fn, std::memory_order_release);
    }
    if (!fn) return cudaErrorInitializationError;
    uint16_t outer = gpuleak::core::runtime_label_swap(static_cast<uint16_t>(A));
    cudaError_t r = reinterpret_cast<cudaError_t (*)(Args...)>(fn)(a...);
    gpuleak::core::runtime_label_swap(outer);
    return r;
  }
};

#define LABEL(API, NAME) Runtime<Api::API, decltype(&::NAME)>::call(#NAME

}  // namespace

// clang-format off
GPULEAK_API cudaError_t cudaMalloc(void **p, size_t n) { return LABEL(cudaMalloc, cudaMalloc), p, n); }
GPULEAK_API cudaError_t cudaFree(void *p) { return LABEL(cudaFree, cudaFree), p); }
GPULEAK_API cudaError_t cudaMallocAsync(void **p, size_t n, cudaStream_t s) { return LABEL(cudaMallocAsync, cudaMallocAsync), p, n, s); }
GPULEAK_API cudaError_t cudaMallocAsync_ptsz(void **p, size_t n, cudaStream_t s) { return Runtime<Api::cudaMallocAsync, cudaError_t (*)(void **, size_t, cudaStream_t)>::call("cudaMallocAsync_ptsz", p, n, s); }
GPULEAK_API cudaError_t cudaFreeAsync(void *p, cudaStream_t s) { return LABEL(cudaFreeAsync, cudaFreeAsync), p, s); }
GPULEAK_API cudaError_t cudaFreeAsync_ptsz(void *p, cudaStream_t s) { return Runtime<Api::cudaFreeAsync, cudaError_t (*)(void *, cudaStream_t)>::call("cudaFreeAsync_ptsz", p, s); }
GPULEAK_API cudaError_t cudaMallocFromPoolAsync(void **p, size_t n, cudaMemPool_t m, cudaStream_t s) { return LABEL(cudaMallocFromPoolAsync, cudaMallocFromPoolAsync), p, n, m, s); }
GPULEAK_API cudaError_t cudaMallocFromPoolAsync_ptsz(void **p, size_t n, cudaMemPool_t m, cudaStream_t s) { return Runtime<Api::cudaMallocFromPoolAsync, cudaError_t (*)(void **, size_t, cudaMemPool_t, cudaStream_t)>::call("cudaMallocFromPoolAsync_ptsz", p, n, m, s); }
GPULEAK_API cudaError_t cudaMallocManaged(void **p, size_t n, unsigned int f) { return LABEL(cudaMallocManaged, cudaMallocManaged), p, n, f); }
GPULEAK_API cudaError_t cudaMallocPitch(void **p, size_t *pitch, size_t w, size_t h) { return LABEL(cudaMallocPitch, cudaMallocPitch), p, pitch, w, h); }
GPULEAK_API cudaError_t cudaMalloc3D(cudaPitchedPtr *p, cudaExtent e) { return LABEL(cudaMalloc3D, cudaMalloc3D), p, e); }
GPULEAK_API cudaError_t cudaMallocArray(cudaArray_t *a, const cudaChannelFormatDesc *d, size_t w, size_t h, unsigned int f) { return LABEL(cudaMallocArray, cudaMallocArray), a, d, w, h, f); }
GPULEAK_API cudaError_t cudaMalloc3DArray(cudaArray_t *a, const cudaChannelFormatDesc *d, cudaExtent e, unsigned int f) { return LABEL(cudaMalloc3DArray, cudaMalloc3DArray), a, d, e, f); }
GPULEAK_API cudaError_t cudaMallocMipmappedArray(cudaMipmappedArray_t *a, const cudaChannelFormatDesc *d, cudaExtent e, unsigned int l, unsigned int f) { return LABEL(cudaMallocMipmappedArray, cudaMallocMipmappedArray), a, d, e, l, f); }
GPULEAK_API cudaError_t cudaFreeArray(cudaArray_t a) { return LABEL(cudaFreeArray, cudaFreeArray), a); }
GPULEAK_API cudaError_t cudaFreeMipmappedArray(cudaMipmappedArray_t a) { return LABEL(cudaFreeMipmappedArray, cudaFreeMipmappedArray), a); }
GPULEAK_API cudaError_t cudaMallocHost(void **p, size_t n) { return Runtime<Api::cudaMallocHost, cudaError_t (*)(void **, size_t)>::call("cudaMallocHost", p, n); }
GPULEAK_API cudaError_t cudaHostAlloc(void **p, size_t n, unsigned int f) { return LABEL(cudaHostAlloc, cudaHostAlloc), p, n, f); }
GPULEAK_API cudaError_t cudaFreeHost(void *p) { return LABEL(cudaFreeHost, cudaFreeHost), p); }
GPULEAK_API cudaError_t cudaHostRegister(void *p, size_t n, unsigned int f) { return LABEL(cudaHostRegister, cudaHostRegister), p, n, f); }
GPULEAK_API cudaError_t cudaHostUnregister(void *p) { return LABEL(cudaHostUnregister, cudaHostUnregister), p); }
GPULEAK_API cudaError_t cudaDeviceReset(void) { return LABEL(cudaDeviceReset, cudaDeviceReset)); }
// clang-format on
