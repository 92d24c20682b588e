// Synchronous allocation APIs of the fake runtime: each one is a thin
// translation to the driver call the real libcudart makes.
#include "runtime_internal.h"

using namespace fake_cudart;

namespace {
// cudaChannelFormatDesc -> (driver array format, channel count).
bool array_format(const cudaChannelFormatDesc& d, CUarray_format* fmt, unsigned* channels) {
    *channels = (d.x > 0) + (d.y > 0) + (d.z > 0) + (d.w > 0);
    switch (d.f) {
        case cudaChannelFormatKindFloat:
            if (d.x == 16) *fmt = CU_AD_FORMAT_HALF;
            else if (d.x == 32) *fmt = CU_AD_FORMAT_FLOAT;
            else return false;
            return true;
        case cudaChannelFormatKindSigned:
        case cudaChannelFormatKindUnsigned: {
            bool s = d.f == cudaChannelFormatKindSigned;
            if (d.x == 8) *fmt = s ? CU_AD_FORMAT_SIGNED_INT8 : CU_AD_FORMAT_UNSIGNED_INT8;
            else if (d.x == 16) *fmt = s ? CU_AD_FORMAT_SIGNED_INT16 : CU_AD_FORMAT_UNSIGNED_INT16;
            else if (d.x == 32) *fmt = s ? CU_AD_FORMAT_SIGNED_INT32 : CU_AD_FORMAT_UNSIGNED_INT32;
            else return false;
            return true;
        }
        default:
            return false;
    }
}
}  // namespace

extern "C" {

cudaError_t CUDARTAPI cudaMalloc(void** devPtr, size_t size) {
    if (!devPtr) return record(cudaErrorInvalidValue);
    const Driver* d;
    if (cudaError_t e = enter(&d)) return e;
    if (size == 0) {  // the runtime answers NULL without asking the driver
        *devPtr = nullptr;
        return cudaSuccess;
    }
    CUdeviceptr p = 0;
    CUresult rc = d->cuMemAlloc(&p, size);
    if (rc == CUDA_SUCCESS) *devPtr = reinterpret_cast<void*>(p);
    return record(rc);
}

// cudaFree(0) is the classic "initialize the context now" idiom.
cudaError_t CUDARTAPI cudaFree(void* devPtr) {
    const Driver* d;
    if (cudaError_t e = enter(&d)) return e;
    return record(d->cuMemFree(reinterpret_cast<CUdeviceptr>(devPtr)));
}

cudaError_t CUDARTAPI cudaMallocPitch(void** devPtr, size_t* pitch, size_t width, size_t height) {
    if (!devPtr || !pitch) return record(cudaErrorInvalidValue);
    const Driver* d;
    if (cudaError_t e = enter(&d)) return e;
    CUdeviceptr p = 0;
    CUresult rc = d->cuMemAllocPitch(&p, pitch, width, height, 4);
    if (rc == CUDA_SUCCESS) *devPtr = reinterpret_cast<void*>(p);
    return record(rc);
}

// One pitched allocation of height * depth rows: pitch * height * depth bytes.
cudaError_t CUDARTAPI cudaMalloc3D(struct cudaPitchedPtr* pitchedDevPtr, struct cudaExtent extent) {
    if (!pitchedDevPtr) return record(cudaErrorInvalidValue);
    const Driver* d;
    if (cudaError_t e = enter(&d)) return e;
    CUdeviceptr p = 0;
    size_t pitch = 0;
    CUresult rc = d->cuMemAllocPitch(&p, &pitch, extent.width, extent.height * extent.depth, 4);
    if (rc == CUDA_SUCCESS) {
        pitchedDevPtr->ptr = reinterpret_cast<void*>(p);
        pitchedDevPtr->pitch = pitch;
        pitchedDevPtr->xsize = extent.width;
        pitchedDevPtr->ysize = extent.height;
    }
    return record(rc);
}

cudaError_t CUDARTAPI cudaMallocManaged(void** devPtr, size_t size, unsigned int flags) {
    if (!devPtr) return record(cudaErrorInvalidValue);
    const Driver* d;
    if (cudaError_t e = enter(&d)) return e;
    CUdeviceptr p = 0;
    CUresult rc = d->cuMemAllocManaged(&p, size, flags);  // cudaMemAttach* == CU_MEM_ATTACH_*
    if (rc == CUDA_SUCCESS) *devPtr = reinterpret_cast<void*>(p);
    return record(rc);
}

cudaError_t CUDARTAPI cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
    const Driver* d;
    if (cudaError_t e = enter(&d)) return e;
    return record(d->cuMemHostAlloc(pHost, size, flags));  // cudaHostAlloc* == CU_MEMHOSTALLOC_*
}

cudaError_t CUDARTAPI cudaMallocHost(void** ptr, size_t size) {
    const Driver* d;
    if (cudaError_t e = enter(&d)) return e;
    return record(d->cuMemHostAlloc(ptr, size, 0));
}

cudaError_t CUDARTAPI cudaFreeHost(void* ptr) {
    const Driver* d;
    if (cudaError_t e = enter(&d)) return e;
    return record(d->cuMemFreeHost(ptr));
}

cudaError_t CUDARTAPI cudaHostRegister(void* ptr, size_t size, unsigned int flags) {
    const Driver* d;
    if (cudaError_t e = enter(&d)) return e;
    return record(d->cuMemHostRegister(ptr, size, flags));
}

cudaError_t CUDARTAPI cudaHostUnregister(void* ptr) {
    const Driver* d;
    if (cudaError_t e = enter(&d)) return e;
    return record(d->cuMemHostUnregister(ptr));
}

cudaError_t CUDARTAPI cudaMallocArray(cudaArray_t* array, const struct cudaChannelFormatDesc* desc,
                                      size_t width, size_t height, unsigned int flags) {
    CUDA_ARRAY3D_DESCRIPTOR ad{};
    if (!array || !desc || !array_format(*desc, &ad.Format, &ad.NumChannels))
        return record(cudaErrorInvalidValue);
    const Driver* d;
    if (cudaError_t e = enter(&d)) return e;
    ad.Width = width;
    ad.Height = height;
    ad.Depth = 0;
    ad.Flags = flags;
    CUarray a = nullptr;
    CUresult rc = d->cuArray3DCreate(&a, &ad);
    if (rc == CUDA_SUCCESS) *array = reinterpret_cast<cudaArray_t>(a);
    return record(rc);
}

cudaError_t CUDARTAPI cudaFreeArray(cudaArray_t array) {
    const Driver* d;
    if (cudaError_t e = enter(&d)) return e;
    if (!array) return cudaSuccess;
    return record(d->cuArrayDestroy(reinterpret_cast<CUarray>(array)));
}

cudaError_t CUDARTAPI cudaMemGetInfo(size_t* free, size_t* total) {
    const Driver* d;
    if (cudaError_t e = enter(&d)) return e;
    return record(d->cuMemGetInfo(free, total));
}

}  // extern "C"
