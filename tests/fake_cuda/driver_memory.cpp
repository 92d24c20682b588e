// Linear device memory of the fake driver: cuMemAlloc & co. Device pointers
// are host addresses (256-byte aligned) so programs may even touch them.
#include <chrono>
#include <cstdlib>
#include <thread>

#include "driver_internal.h"

using namespace fake;

namespace {
// FAKE_CUDA_SYNC_LATENCY_US=N: every cuMemAlloc_v2 / cuMemFree_v2 takes N microseconds more, as
// synchronous calls do on a real GPU (tens of microseconds), so that tests see allocation time.
void sync_latency() {
    static const long us = [] {
        const char* v = std::getenv("FAKE_CUDA_SYNC_LATENCY_US");
        return v ? std::atol(v) : 0L;
    }();
    if (us > 0) std::this_thread::sleep_for(std::chrono::microseconds(us));
}

CUresult alloc_device(CUdeviceptr* dptr, size_t bytes, bool low32 = false) {
    if (!dptr) return CUDA_ERROR_INVALID_VALUE;
    AllocRequest req;
    req.bytes = bytes;
    req.device = current_device();
    req.low32 = low32;
    void* p = nullptr;
    CUresult rc = alloc_block(req, &p);
    if (rc == CUDA_SUCCESS) *dptr = reinterpret_cast<CUdeviceptr>(p);  // untouched on error
    return rc;
}
}  // namespace

extern "C" {

CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
    sync_latency();
    return alloc_device(dptr, bytesize);
}

// FAKE_CUDA_REUSE_DELAY_US=N: cuMemFree_v2 returns N microseconds after the address became free,
// so that another thread's allocation (FAKE_CUDA_REUSE=1) gets it while the free is still in the
// driver: the race a profiler must order right.
void reuse_delay() {
    static const long us = [] {
        const char* v = std::getenv("FAKE_CUDA_REUSE_DELAY_US");
        return v ? std::atol(v) : 0L;
    }();
    if (us > 0) std::this_thread::sleep_for(std::chrono::microseconds(us));
}

CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr) {
    if (dptr == 0) return CUDA_SUCCESS;  // like the real driver
    sync_latency();
    CUresult rc = free_block(reinterpret_cast<void*>(dptr), BlockKind::Device);
    reuse_delay();
    return rc;
}

// Legacy (CUDA 2.0) ABI: 32-bit device pointers and sizes. The fake returns
// real addresses below 2 GiB (MAP_32BIT) so a caller using this signature
// gets a usable value, and a wrapper that writes a 64-bit CUdeviceptr into
// *dptr would clobber the 4 bytes after it.
CUresult CUDAAPI cuMemAlloc(CUdeviceptr_v1* dptr, unsigned int bytesize) {
    if (!dptr) return CUDA_ERROR_INVALID_VALUE;
    CUdeviceptr p = 0;
    CUresult rc = alloc_device(&p, bytesize, /*low32=*/true);
    if (rc == CUDA_SUCCESS) *dptr = static_cast<CUdeviceptr_v1>(p);
    return rc;
}

CUresult CUDAAPI cuMemFree(CUdeviceptr_v1 dptr) {
    return cuMemFree_v2(static_cast<CUdeviceptr>(dptr));
}

// Pitch is the width rounded up to 512 bytes; Height rows are charged.
CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes,
                                    size_t Height, unsigned int ElementSizeBytes) {
    if (!dptr || !pPitch || WidthInBytes == 0 || Height == 0) return CUDA_ERROR_INVALID_VALUE;
    if (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16)
        return CUDA_ERROR_INVALID_VALUE;
    size_t pitch = (WidthInBytes + 511) & ~size_t{511};
    if (Height > SIZE_MAX / pitch) return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = alloc_device(dptr, pitch * Height);
    if (rc == CUDA_SUCCESS) *pPitch = pitch;
    return rc;
}

CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
        return CUDA_ERROR_INVALID_VALUE;
    return alloc_device(dptr, bytesize);
}

CUresult CUDAAPI cuMemGetInfo_v2(size_t* free, size_t* total) {
    if (!free || !total) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(state_mutex());
    *total = device_capacity();
    *free = *total - used_locked(current_device());
    return CUDA_SUCCESS;
}

}  // extern "C"
