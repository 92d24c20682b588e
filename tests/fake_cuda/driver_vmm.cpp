// Virtual memory management (cuMemCreate/cuMemMap ...), as used by PyTorch's
// expandable segments. Physical handles are opaque increasing integers whose
// size counts against the capacity; as in the driver, the memory is given
// back only when the handle is released *and* no mapping uses it any more.
// Reserved VA ranges are real PROT_NONE host mappings; cuMemSetAccess makes
// the mapped part readable/writable so tests may touch it.
#include "driver_internal.h"

#include <sys/mman.h>

#include <iterator>
#include <map>

using namespace fake;

namespace {
struct Physical {
    size_t size;
    int device;
    bool released;
    unsigned maps;
};
struct Reservation {
    size_t size;
    void* raw;
    size_t raw_len;
};
struct Mapping {
    size_t size;
    CUmemGenericAllocationHandle handle;
};
struct Vmm {
    std::map<CUmemGenericAllocationHandle, Physical> handles;
    std::map<uintptr_t, Reservation> reserved;
    std::map<uintptr_t, Mapping> mapped;
    CUmemGenericAllocationHandle next_handle = 0;
};
Vmm& vmm() {
    static auto* v = new Vmm;
    return *v;
}

bool valid_prop(const CUmemAllocationProp* prop) {
    return prop && prop->type == CU_MEM_ALLOCATION_TYPE_PINNED &&
           prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE && valid_device(prop->location.id);
}

// Drops the physical memory once it is both released and unmapped.
void settle_locked(CUmemGenericAllocationHandle h) {
    auto it = vmm().handles.find(h);
    if (it != vmm().handles.end() && it->second.released && it->second.maps == 0) {
        uncharge_locked(it->second.device, it->second.size);
        vmm().handles.erase(it);
    }
}

// The reservation that contains [p, p + size), or end().
std::map<uintptr_t, Reservation>::iterator find_reservation_locked(uintptr_t p, size_t size) {
    auto& r = vmm().reserved;
    auto it = r.upper_bound(p);
    if (it == r.begin()) return r.end();
    --it;
    return p + size <= it->first + it->second.size ? it : r.end();
}

// True if [p, p + size) is covered by consecutive mappings.
bool fully_mapped_locked(uintptr_t p, size_t size) {
    auto& m = vmm().mapped;
    auto it = m.upper_bound(p);
    if (it == m.begin()) return false;
    --it;
    uintptr_t end = p + size, cursor = p;
    for (; it != m.end() && it->first <= cursor && cursor < end; ++it)
        cursor = it->first + it->second.size;
    return cursor >= end;
}

void unmap_locked(std::map<uintptr_t, Mapping>::iterator it) {
    void* addr = reinterpret_cast<void*>(it->first);
    mprotect(addr, it->second.size, PROT_NONE);
    madvise(addr, it->second.size, MADV_DONTNEED);
    CUmemGenericAllocationHandle h = it->second.handle;
    vmm().handles[h].maps--;
    vmm().mapped.erase(it);
    settle_locked(h);
}
}  // namespace

extern "C" {

CUresult CUDAAPI cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                               CUmemAllocationGranularity_flags /*option*/) {
    if (!granularity || !valid_prop(prop)) return CUDA_ERROR_INVALID_VALUE;
    *granularity = kVmmGranularity;  // minimum == recommended
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                             const CUmemAllocationProp* prop, unsigned long long flags) {
    if (!handle || !valid_prop(prop) || flags != 0 || size == 0 || size % kVmmGranularity)
        return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(state_mutex());
    CUresult rc = charge_locked(prop->location.id, size);
    if (rc != CUDA_SUCCESS) return rc;
    CUmemGenericAllocationHandle h = ++vmm().next_handle;
    vmm().handles[h] = Physical{size, prop->location.id, false, 0};
    *handle = h;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle) {
    std::lock_guard<std::mutex> lock(state_mutex());
    auto it = vmm().handles.find(handle);
    if (it == vmm().handles.end() || it->second.released) return CUDA_ERROR_INVALID_VALUE;
    it->second.released = true;
    settle_locked(handle);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment,
                                     CUdeviceptr /*addr*/, unsigned long long /*flags*/) {
    if (!ptr || size == 0) return CUDA_ERROR_INVALID_VALUE;
    if (alignment == 0) alignment = kVmmGranularity;
    if (alignment & (alignment - 1)) return CUDA_ERROR_INVALID_VALUE;
    size_t raw_len = size + alignment;
    void* raw = mmap(nullptr, raw_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    uintptr_t base = (reinterpret_cast<uintptr_t>(raw) + alignment - 1) & ~(alignment - 1);
    std::lock_guard<std::mutex> lock(state_mutex());
    vmm().reserved[base] = Reservation{size, raw, raw_len};
    *ptr = base;
    return CUDA_SUCCESS;
}

// Mappings still inside the range are dropped (the driver requires the
// caller to unmap first; the fake is lenient).
CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size) {
    std::lock_guard<std::mutex> lock(state_mutex());
    auto it = vmm().reserved.find(ptr);
    if (it == vmm().reserved.end() || it->second.size != size) return CUDA_ERROR_INVALID_VALUE;
    auto& m = vmm().mapped;
    for (auto mi = m.lower_bound(ptr); mi != m.end() && mi->first < ptr + size;) unmap_locked(mi++);
    munmap(it->second.raw, it->second.raw_len);
    vmm().reserved.erase(it);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                          CUmemGenericAllocationHandle handle, unsigned long long flags) {
    if (flags != 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(state_mutex());
    auto h = vmm().handles.find(handle);
    if (h == vmm().handles.end() || h->second.released) return CUDA_ERROR_INVALID_VALUE;
    if (offset > h->second.size || size > h->second.size - offset) return CUDA_ERROR_INVALID_VALUE;
    if (find_reservation_locked(ptr, size) == vmm().reserved.end()) return CUDA_ERROR_INVALID_VALUE;
    auto& m = vmm().mapped;
    auto next = m.lower_bound(ptr);
    if (next != m.end() && next->first < ptr + size) return CUDA_ERROR_INVALID_VALUE;
    if (next != m.begin() && std::prev(next)->first + std::prev(next)->second.size > ptr)
        return CUDA_ERROR_INVALID_VALUE;
    m[ptr] = Mapping{size, handle};
    h->second.maps++;
    return CUDA_SUCCESS;
}

// The range must consist of whole mappings.
CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size) {
    std::lock_guard<std::mutex> lock(state_mutex());
    auto& m = vmm().mapped;
    auto first = m.lower_bound(ptr);
    if (first != m.begin() && std::prev(first)->first + std::prev(first)->second.size > ptr)
        return CUDA_ERROR_INVALID_VALUE;  // would split a mapping
    auto last = first;
    for (; last != m.end() && last->first < ptr + size; ++last)
        if (last->first + last->second.size > ptr + size) return CUDA_ERROR_INVALID_VALUE;
    if (first == last) return CUDA_ERROR_INVALID_VALUE;  // nothing mapped there
    while (first != last) unmap_locked(first++);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc,
                                size_t count) {
    if (!desc || count == 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(state_mutex());
    if (!fully_mapped_locked(ptr, size)) return CUDA_ERROR_INVALID_VALUE;
    int prot = PROT_NONE;
    for (size_t i = 0; i < count; ++i) {
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || !valid_device(desc[i].location.id))
            return CUDA_ERROR_INVALID_DEVICE;
        if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE) prot = PROT_READ | PROT_WRITE;
        else if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READ && prot == PROT_NONE) prot = PROT_READ;
    }
    mprotect(reinterpret_cast<void*>(ptr), size, prot);  // best effort (page alignment)
    return CUDA_SUCCESS;
}

}  // extern "C"
