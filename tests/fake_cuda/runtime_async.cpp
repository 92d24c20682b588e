// Stream-ordered allocation and memory pools of the fake runtime. The _ptsz
// exports are what user code compiled with --default-stream per-thread (or
// -DCUDA_API_PER_THREAD_DEFAULT_STREAM) calls; they use the driver's _ptsz
// entry points, fetched with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM.
#include "runtime_internal.h"

using namespace fake_cudart;

namespace {
cudaError_t malloc_async(void** devPtr, size_t size, cudaMemPool_t pool, cudaStream_t s, bool ptsz) {
    if (!devPtr) return record(cudaErrorInvalidValue);
    const Driver* d;
    if (cudaError_t e = enter(&d)) return e;
    CUdeviceptr p = 0;
    CUresult rc;
    if (pool)
        rc = ptsz ? d->cuMemAllocFromPoolAsync_ptsz(&p, size, pool, s)
                  : d->cuMemAllocFromPoolAsync(&p, size, pool, s);
    else
        rc = ptsz ? d->cuMemAllocAsync_ptsz(&p, size, s) : d->cuMemAllocAsync(&p, size, s);
    if (rc == CUDA_SUCCESS) *devPtr = reinterpret_cast<void*>(p);
    return record(rc);
}

cudaError_t free_async(void* devPtr, cudaStream_t s, bool ptsz) {
    const Driver* d;
    if (cudaError_t e = enter(&d)) return e;
    CUdeviceptr p = reinterpret_cast<CUdeviceptr>(devPtr);
    return record(ptsz ? d->cuMemFreeAsync_ptsz(p, s) : d->cuMemFreeAsync(p, s));
}
}  // namespace

extern "C" {

cudaError_t CUDARTAPI cudaMallocAsync(void** devPtr, size_t size, cudaStream_t hStream) {
    return malloc_async(devPtr, size, nullptr, hStream, false);
}
cudaError_t CUDARTAPI cudaMallocAsync_ptsz(void** devPtr, size_t size, cudaStream_t hStream) {
    return malloc_async(devPtr, size, nullptr, hStream, true);
}

cudaError_t CUDARTAPI cudaFreeAsync(void* devPtr, cudaStream_t hStream) {
    return free_async(devPtr, hStream, false);
}
cudaError_t CUDARTAPI cudaFreeAsync_ptsz(void* devPtr, cudaStream_t hStream) {
    return free_async(devPtr, hStream, true);
}

cudaError_t CUDARTAPI cudaMallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t memPool,
                                              cudaStream_t stream) {
    if (!memPool) return record(cudaErrorInvalidValue);
    return malloc_async(ptr, size, memPool, stream, false);
}
cudaError_t CUDARTAPI cudaMallocFromPoolAsync_ptsz(void** ptr, size_t size, cudaMemPool_t memPool,
                                                   cudaStream_t stream) {
    if (!memPool) return record(cudaErrorInvalidValue);
    return malloc_async(ptr, size, memPool, stream, true);
}

// cudaMemPoolProps and CUmemPoolProps have the same fields; copy one by one.
cudaError_t CUDARTAPI cudaMemPoolCreate(cudaMemPool_t* memPool, const struct cudaMemPoolProps* p) {
    if (!memPool || !p) return record(cudaErrorInvalidValue);
    const Driver* d;
    if (cudaError_t e = enter(&d)) return e;
    CUmemPoolProps props{};
    props.allocType = static_cast<CUmemAllocationType>(p->allocType);
    props.handleTypes = static_cast<CUmemAllocationHandleType>(p->handleTypes);
    props.location.type = static_cast<CUmemLocationType>(p->location.type);
    props.location.id = p->location.id;
    props.win32SecurityAttributes = p->win32SecurityAttributes;
    props.maxSize = p->maxSize;
    props.usage = p->usage;
    return record(d->cuMemPoolCreate(memPool, &props));
}

cudaError_t CUDARTAPI cudaMemPoolDestroy(cudaMemPool_t memPool) {
    const Driver* d;
    if (cudaError_t e = enter(&d)) return e;
    return record(d->cuMemPoolDestroy(memPool));
}

cudaError_t CUDARTAPI cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep) {
    const Driver* d;
    if (cudaError_t e = enter(&d)) return e;
    return record(d->cuMemPoolTrimTo(memPool, minBytesToKeep));
}

}  // extern "C"
