// Page-locked host memory of the fake driver. Pinned allocations are tracked
// (so bad frees fail) but never count against the device capacity, and
// FAKE_CUDA_FAIL_AFTER does not apply to them.
#include "driver_internal.h"

#include <iterator>
#include <map>

using namespace fake;

namespace {
std::map<uintptr_t, size_t>& registered() {  // cuMemHostRegister ranges
    static auto* m = new std::map<uintptr_t, size_t>;
    return *m;
}
}  // namespace

extern "C" {

CUresult CUDAAPI cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
    if (!pp) return CUDA_ERROR_INVALID_VALUE;
    if (Flags & ~(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED))
        return CUDA_ERROR_INVALID_VALUE;
    AllocRequest req;
    req.bytes = bytesize;
    req.device = current_device();
    req.kind = BlockKind::Pinned;
    req.charge = false;
    return alloc_block(req, pp);
}

CUresult CUDAAPI cuMemAllocHost_v2(void** pp, size_t bytesize) {
    return cuMemHostAlloc(pp, bytesize, 0);
}

CUresult CUDAAPI cuMemFreeHost(void* p) {
    return free_block(p, BlockKind::Pinned);
}

CUresult CUDAAPI cuMemHostRegister_v2(void* p, size_t bytesize, unsigned int Flags) {
    if (!p || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
    (void)Flags;
    uintptr_t lo = reinterpret_cast<uintptr_t>(p), hi = lo + bytesize;
    std::lock_guard<std::mutex> lock(state_mutex());
    auto& m = registered();
    auto it = m.lower_bound(lo);
    if (it != m.end() && it->first < hi) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    if (it != m.begin() && std::prev(it)->first + std::prev(it)->second > lo)
        return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    m[lo] = bytesize;
    return CUDA_SUCCESS;
}

// The CUDA 4.0 ABI had the same prototype.
CUresult CUDAAPI cuMemHostRegister(void* p, size_t bytesize, unsigned int Flags) {
    return cuMemHostRegister_v2(p, bytesize, Flags);
}

CUresult CUDAAPI cuMemHostUnregister(void* p) {
    std::lock_guard<std::mutex> lock(state_mutex());
    return registered().erase(reinterpret_cast<uintptr_t>(p)) ? CUDA_SUCCESS
                                                               : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

}  // extern "C"
