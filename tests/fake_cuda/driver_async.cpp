// Stream-ordered allocation (cuMemAllocAsync & co.) and memory pools.
//
// While the stream is capturing, an allocation becomes a graph memory node:
// the fake hands out a valid pointer but does not charge the capacity (the
// real driver only reserves address space until the graph is launched). Such
// blocks are released by cuMemFreeAsync or, at the latest, by cuGraphDestroy.
#include "driver_internal.h"

#include <set>

using namespace fake;

namespace {
std::set<CUmemoryPool>& pools() {
    static auto* s = new std::set<CUmemoryPool>;
    return *s;
}
CUstream ptsz(CUstream s) { return s ? s : CU_STREAM_PER_THREAD; }
}  // namespace

namespace fake {
CUresult alloc_async(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool, CUstream s) {
    if (!dptr) return CUDA_ERROR_INVALID_VALUE;
    AllocRequest req;
    req.bytes = bytes;
    {
        std::lock_guard<std::mutex> lock(state_mutex());
        if (!valid_stream_locked(s)) return CUDA_ERROR_INVALID_HANDLE;
        if (pool && !pools().count(pool)) return CUDA_ERROR_INVALID_VALUE;
        req.device = pool ? pool->device : stream_device_locked(s);
        req.graph = capture_graph_locked(s);
        req.charge = req.graph == nullptr;
        req.pooled = true;
    }
    void* p = nullptr;
    CUresult rc = alloc_block(req, &p);
    if (rc == CUDA_SUCCESS) *dptr = reinterpret_cast<CUdeviceptr>(p);
    return rc;
}

CUresult free_async(CUdeviceptr dptr, CUstream s) {
    {
        std::lock_guard<std::mutex> lock(state_mutex());
        if (!valid_stream_locked(s)) return CUDA_ERROR_INVALID_HANDLE;
    }
    if (dptr == 0) return CUDA_SUCCESS;
    return free_block(reinterpret_cast<void*>(dptr), BlockKind::Device);
}
}  // namespace fake

extern "C" {

CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
    return alloc_async(dptr, bytesize, nullptr, hStream);
}
CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
    return alloc_async(dptr, bytesize, nullptr, ptsz(hStream));
}

CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
    return free_async(dptr, hStream);
}
CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
    return free_async(dptr, ptsz(hStream));
}

CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                         CUstream hStream) {
    if (!pool) return CUDA_ERROR_INVALID_VALUE;
    return alloc_async(dptr, bytesize, pool, hStream);
}
CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize,
                                              CUmemoryPool pool, CUstream hStream) {
    if (!pool) return CUDA_ERROR_INVALID_VALUE;
    return alloc_async(dptr, bytesize, pool, ptsz(hStream));
}

CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* poolProps) {
    if (!pool || !poolProps || poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(poolProps->location.id)) return CUDA_ERROR_INVALID_DEVICE;
    auto* p = new CUmemPoolHandle_st{poolProps->location.id};
    std::lock_guard<std::mutex> lock(state_mutex());
    pools().insert(p);
    *pool = p;
    return CUDA_SUCCESS;
}

// Outstanding allocations stay valid (and charged) until they are freed.
CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool) {
    std::lock_guard<std::mutex> lock(state_mutex());
    if (!pools().erase(pool)) return CUDA_ERROR_INVALID_VALUE;
    pool_trim_locked(pool->device, 0);  // what it kept goes back (the fake pools of a device share one count)
    delete pool;
    return CUDA_SUCCESS;
}

// Gives back what the pools of the pool's device keep beyond minBytesToKeep (FAKE_CUDA_POOL_KEEP).
CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
    std::lock_guard<std::mutex> lock(state_mutex());
    if (!pools().count(pool)) return CUDA_ERROR_INVALID_VALUE;
    pool_trim_locked(pool->device, minBytesToKeep);
    return CUDA_SUCCESS;
}

}  // extern "C"
