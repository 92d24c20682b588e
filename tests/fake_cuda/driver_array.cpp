// CUDA arrays of the fake driver. Arrays are device memory, so their size
// (width * height * depth * channels * element size) counts against the
// capacity and consumes a FAKE_CUDA_FAIL_AFTER call; they have no backing
// storage because arrays are not addressable.
#include "driver_internal.h"

#include <set>

using namespace fake;

namespace {
std::set<const void*>& live_arrays() {  // CUarray and CUmipmappedArray handles
    static auto* s = new std::set<const void*>;
    return *s;
}

size_t format_bytes(CUarray_format f) {
    switch (f) {
        case CU_AD_FORMAT_UNSIGNED_INT8: case CU_AD_FORMAT_SIGNED_INT8: return 1;
        case CU_AD_FORMAT_UNSIGNED_INT16: case CU_AD_FORMAT_SIGNED_INT16:
        case CU_AD_FORMAT_HALF: return 2;
        default: return 4;  // 32-bit formats and anything exotic
    }
}

// Bytes of one level; 0 for an invalid descriptor.
size_t level_bytes(size_t w, size_t h, size_t d, CUarray_format f, unsigned channels) {
    if (w == 0 || (channels != 1 && channels != 2 && channels != 4)) return 0;
    return w * (h ? h : 1) * (d ? d : 1) * channels * format_bytes(f);
}

template <class Handle>
CUresult create(Handle** out, size_t bytes) {
    if (!out || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(state_mutex());
    int dev = current_device();
    CUresult rc = charge_locked(dev, bytes);
    if (rc != CUDA_SUCCESS) return rc;
    *out = new Handle{bytes, dev};
    live_arrays().insert(*out);
    return CUDA_SUCCESS;
}

template <class Handle>
CUresult destroy(Handle* h) {
    std::lock_guard<std::mutex> lock(state_mutex());
    if (!live_arrays().erase(h)) return CUDA_ERROR_INVALID_HANDLE;
    uncharge_locked(h->device, h->bytes);
    delete h;
    return CUDA_SUCCESS;
}
}  // namespace

extern "C" {

CUresult CUDAAPI cuArrayCreate_v2(CUarray* pHandle, const CUDA_ARRAY_DESCRIPTOR* d) {
    if (!d) return CUDA_ERROR_INVALID_VALUE;
    return create(pHandle, level_bytes(d->Width, d->Height, 1, d->Format, d->NumChannels));
}

CUresult CUDAAPI cuArray3DCreate_v2(CUarray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR* d) {
    if (!d) return CUDA_ERROR_INVALID_VALUE;
    return create(pHandle, level_bytes(d->Width, d->Height, d->Depth, d->Format, d->NumChannels));
}

CUresult CUDAAPI cuArrayDestroy(CUarray hArray) { return destroy(hArray); }

// All levels are charged: each one halves every non-zero extent.
CUresult CUDAAPI cuMipmappedArrayCreate(CUmipmappedArray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR* d,
                                        unsigned int numMipmapLevels) {
    if (!d || numMipmapLevels == 0) return CUDA_ERROR_INVALID_VALUE;
    size_t w = d->Width, h = d->Height, z = d->Depth, total = 0;
    for (unsigned i = 0; i < numMipmapLevels; ++i) {
        size_t b = level_bytes(w, h, z, d->Format, d->NumChannels);
        if (b == 0) return CUDA_ERROR_INVALID_VALUE;
        total += b;
        w = w > 1 ? w / 2 : 1;
        h = h > 1 ? h / 2 : h;
        z = z > 1 ? z / 2 : z;
    }
    return create(pHandle, total);
}

CUresult CUDAAPI cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray) {
    return destroy(hMipmappedArray);
}

}  // extern "C"
