// Driver loading and per-thread state of the fake runtime. This mirrors what
// the real libcudart does, which is why the gpuleak shim has to hook dlsym /
// cuGetProcAddress rather than rely on the PLT: the runtime never references
// a single cu* symbol directly.
#include "runtime_internal.h"

#include <dlfcn.h>

namespace fake_cudart {
namespace {

thread_local cudaError_t t_last_error = cudaSuccess;
thread_local int t_device = 0;
thread_local int t_ctx_device = -1;  // device whose primary ctx is current here

template <class Pfn>
bool resolve(PFN_cuGetProcAddress_v12000 gpa, const char* name, cuuint64_t flags, Pfn* out) {
    void* p = nullptr;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (gpa(name, &p, kRuntimeVersion, flags, &status) != CUDA_SUCCESS || !p ||
        status != CU_GET_PROC_ADDRESS_SUCCESS)
        return false;
    *out = reinterpret_cast<Pfn>(p);
    return true;
}

struct Loaded {
    Driver d{};
    cudaError_t err = cudaSuccess;
};

Loaded load() {
    Loaded l;
    // RTLD_GLOBAL like the real runtime; the handle is never closed.
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        l.err = cudaErrorInsufficientDriver;
        return l;
    }
    auto gpa = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(h, "cuGetProcAddress_v2"));
    if (!gpa) {
        l.err = cudaErrorInsufficientDriver;
        return l;
    }
    Driver& d = l.d;
    d.cuGetProcAddress = gpa;
    const cuuint64_t def = CU_GET_PROC_ADDRESS_DEFAULT;
    const cuuint64_t pt = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    bool ok = true;
#define RESOLVE(field, name, flags) ok = resolve(gpa, name, flags, &d.field) && ok
    RESOLVE(cuInit, "cuInit", def);
    RESOLVE(cuDriverGetVersion, "cuDriverGetVersion", def);
    RESOLVE(cuDeviceGetCount, "cuDeviceGetCount", def);
    RESOLVE(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", def);
    RESOLVE(cuDevicePrimaryCtxReset, "cuDevicePrimaryCtxReset", def);
    RESOLVE(cuCtxSetCurrent, "cuCtxSetCurrent", def);
    RESOLVE(cuCtxSynchronize, "cuCtxSynchronize", def);
    RESOLVE(cuMemGetInfo, "cuMemGetInfo", def);
    RESOLVE(cuMemAlloc, "cuMemAlloc", def);
    RESOLVE(cuMemFree, "cuMemFree", def);
    RESOLVE(cuMemAllocPitch, "cuMemAllocPitch", def);
    RESOLVE(cuMemAllocManaged, "cuMemAllocManaged", def);
    RESOLVE(cuMemAllocAsync, "cuMemAllocAsync", def);
    RESOLVE(cuMemAllocAsync_ptsz, "cuMemAllocAsync", pt);
    RESOLVE(cuMemFreeAsync, "cuMemFreeAsync", def);
    RESOLVE(cuMemFreeAsync_ptsz, "cuMemFreeAsync", pt);
    RESOLVE(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", def);
    RESOLVE(cuMemAllocFromPoolAsync_ptsz, "cuMemAllocFromPoolAsync", pt);
    RESOLVE(cuMemPoolCreate, "cuMemPoolCreate", def);
    RESOLVE(cuMemPoolDestroy, "cuMemPoolDestroy", def);
    RESOLVE(cuMemPoolTrimTo, "cuMemPoolTrimTo", def);
    RESOLVE(cuMemHostAlloc, "cuMemHostAlloc", def);
    RESOLVE(cuMemFreeHost, "cuMemFreeHost", def);
    RESOLVE(cuMemHostRegister, "cuMemHostRegister", def);
    RESOLVE(cuMemHostUnregister, "cuMemHostUnregister", def);
    RESOLVE(cuArray3DCreate, "cuArray3DCreate", def);
    RESOLVE(cuArrayDestroy, "cuArrayDestroy", def);
    RESOLVE(cuStreamCreate, "cuStreamCreate", def);
    RESOLVE(cuStreamDestroy, "cuStreamDestroy", def);
    RESOLVE(cuStreamSynchronize, "cuStreamSynchronize", def);
    RESOLVE(cuStreamSynchronize_ptsz, "cuStreamSynchronize", pt);
    RESOLVE(cuStreamBeginCapture, "cuStreamBeginCapture", def);
    RESOLVE(cuStreamBeginCapture_ptsz, "cuStreamBeginCapture", pt);
    RESOLVE(cuStreamEndCapture, "cuStreamEndCapture", def);
    RESOLVE(cuStreamEndCapture_ptsz, "cuStreamEndCapture", pt);
    RESOLVE(cuStreamIsCapturing, "cuStreamIsCapturing", def);
    RESOLVE(cuStreamIsCapturing_ptsz, "cuStreamIsCapturing", pt);
    RESOLVE(cuGraphDestroy, "cuGraphDestroy", def);
#undef RESOLVE
    if (!ok) {
        l.err = cudaErrorInsufficientDriver;
        return l;
    }
    int version = 0;
    if (d.cuDriverGetVersion(&version) != CUDA_SUCCESS || version < kRuntimeVersion) {
        l.err = cudaErrorInsufficientDriver;
        return l;
    }
    CUresult rc = d.cuInit(0);
    if (rc != CUDA_SUCCESS) l.err = to_cuda_error(rc);
    return l;
}

}  // namespace

const Driver* load_driver(cudaError_t* err) {
    static const Loaded loaded = load();  // magic static: once, thread-safe
    *err = loaded.err;
    return loaded.err == cudaSuccess ? &loaded.d : nullptr;
}

cudaError_t enter_no_context(const Driver** d) {
    cudaError_t err = cudaSuccess;
    *d = load_driver(&err);
    return record(err);
}

cudaError_t enter(const Driver** d) {
    if (cudaError_t e = enter_no_context(d)) return e;
    if (t_ctx_device == t_device) return cudaSuccess;
    CUcontext ctx = nullptr;
    CUresult rc = (*d)->cuDevicePrimaryCtxRetain(&ctx, t_device);
    if (rc == CUDA_SUCCESS) rc = (*d)->cuCtxSetCurrent(ctx);
    if (rc != CUDA_SUCCESS) return record(rc);
    t_ctx_device = t_device;
    return cudaSuccess;
}

cudaError_t to_cuda_error(CUresult r) {
    switch (r) {
        case CUDA_SUCCESS: return cudaSuccess;
        case CUDA_ERROR_INVALID_VALUE: return cudaErrorInvalidValue;
        case CUDA_ERROR_OUT_OF_MEMORY: return cudaErrorMemoryAllocation;
        case CUDA_ERROR_NOT_INITIALIZED: return cudaErrorInitializationError;
        case CUDA_ERROR_DEINITIALIZED: return cudaErrorCudartUnloading;
        case CUDA_ERROR_NO_DEVICE: return cudaErrorNoDevice;
        case CUDA_ERROR_INVALID_DEVICE: return cudaErrorInvalidDevice;
        case CUDA_ERROR_INVALID_CONTEXT: return cudaErrorDeviceUninitialized;
        case CUDA_ERROR_INVALID_HANDLE: return cudaErrorInvalidResourceHandle;
        case CUDA_ERROR_ILLEGAL_STATE: return cudaErrorIllegalState;
        case CUDA_ERROR_NOT_FOUND: return cudaErrorSymbolNotFound;
        case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED: return cudaErrorHostMemoryAlreadyRegistered;
        case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED: return cudaErrorHostMemoryNotRegistered;
        case CUDA_ERROR_NOT_SUPPORTED: return cudaErrorNotSupported;
        case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: return cudaErrorStreamCaptureUnsupported;
        case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: return cudaErrorStreamCaptureInvalidated;
        default: return cudaErrorUnknown;
    }
}

cudaError_t record(cudaError_t e) {
    if (e != cudaSuccess) t_last_error = e;
    return e;
}

int& thread_device() { return t_device; }
void forget_thread_context() { t_ctx_device = -1; }

}  // namespace fake_cudart

extern "C" {

cudaError_t CUDARTAPI cudaGetLastError(void) {
    cudaError_t e = fake_cudart::t_last_error;
    fake_cudart::t_last_error = cudaSuccess;
    return e;
}

cudaError_t CUDARTAPI cudaPeekAtLastError(void) { return fake_cudart::t_last_error; }

}  // extern "C"
