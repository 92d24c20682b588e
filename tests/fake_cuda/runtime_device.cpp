// Device management, versions, error strings and driver entry points of the
// fake runtime.
#include "runtime_internal.h"

using namespace fake_cudart;

namespace {
struct ErrorText {
    cudaError_t code;
    const char* name;
    const char* text;
};
#define FAKE_ERR(code, text) {code, #code, text}
const ErrorText kErrors[] = {
    FAKE_ERR(cudaSuccess, "no error"),
    FAKE_ERR(cudaErrorInvalidValue, "invalid argument"),
    FAKE_ERR(cudaErrorMemoryAllocation, "out of memory"),
    FAKE_ERR(cudaErrorInitializationError, "initialization error"),
    FAKE_ERR(cudaErrorCudartUnloading, "driver shutting down"),
    FAKE_ERR(cudaErrorInsufficientDriver, "CUDA driver version is insufficient for CUDA runtime version"),
    FAKE_ERR(cudaErrorNoDevice, "no CUDA-capable device is detected"),
    FAKE_ERR(cudaErrorInvalidDevice, "invalid device ordinal"),
    FAKE_ERR(cudaErrorDeviceUninitialized, "invalid device context"),
    FAKE_ERR(cudaErrorInvalidResourceHandle, "invalid resource handle"),
    FAKE_ERR(cudaErrorIllegalState, "the operation cannot be performed in the present state"),
    FAKE_ERR(cudaErrorSymbolNotFound, "named symbol not found"),
    FAKE_ERR(cudaErrorHostMemoryAlreadyRegistered,
             "part or all of the requested memory range is already mapped"),
    FAKE_ERR(cudaErrorHostMemoryNotRegistered,
             "pointer does not correspond to a registered memory region"),
    FAKE_ERR(cudaErrorNotSupported, "operation not supported"),
    FAKE_ERR(cudaErrorStreamCaptureUnsupported, "operation not permitted when stream is capturing"),
    FAKE_ERR(cudaErrorStreamCaptureInvalidated,
             "operation failed due to a previous error during capture"),
    FAKE_ERR(cudaErrorUnknown, "unknown error"),
};
#undef FAKE_ERR

const ErrorText* find_error(cudaError_t e) {
    for (const ErrorText& t : kErrors)
        if (t.code == e) return &t;
    return nullptr;
}

cudaError_t entry_point(const char* symbol, void** funcPtr, unsigned int cudaVersion,
                        unsigned long long flags, cudaDriverEntryPointQueryResult* status) {
    if (!symbol || !funcPtr) return record(cudaErrorInvalidValue);
    const Driver* d;
    if (cudaError_t e = enter_no_context(&d)) return e;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    // cudaEnable* flags have the CU_GET_PROC_ADDRESS_* values.
    CUresult rc = d->cuGetProcAddress(symbol, funcPtr, static_cast<int>(cudaVersion), flags, &st);
    if (rc == CUDA_ERROR_NOT_FOUND) {  // documented: success, NULL pointer, status says why
        *funcPtr = nullptr;
        rc = CUDA_SUCCESS;
    }
    if (status && rc == CUDA_SUCCESS) *status = static_cast<cudaDriverEntryPointQueryResult>(st);
    return record(rc);
}

unsigned long long ptsz_flags(unsigned long long flags) {
    if (flags == cudaEnableDefault) return cudaEnablePerThreadDefaultStream;
    return flags;
}
}  // namespace

extern "C" {

cudaError_t CUDARTAPI cudaGetDeviceCount(int* count) {
    if (!count) return record(cudaErrorInvalidValue);
    const Driver* d;
    if (cudaError_t e = enter_no_context(&d)) {
        *count = 0;
        return e;
    }
    return record(d->cuDeviceGetCount(count));
}

cudaError_t CUDARTAPI cudaSetDevice(int device) {
    int count = 0;
    if (cudaError_t e = cudaGetDeviceCount(&count)) return e;
    if (device < 0 || device >= count) return record(cudaErrorInvalidDevice);
    thread_device() = device;
    const Driver* d;
    return enter(&d);  // makes the new device's primary context current
}

cudaError_t CUDARTAPI cudaGetDevice(int* device) {
    if (!device) return record(cudaErrorInvalidValue);
    *device = thread_device();
    return cudaSuccess;
}

// Destroys the primary context: the driver frees everything allocated in it.
cudaError_t CUDARTAPI cudaDeviceReset(void) {
    const Driver* d;
    if (cudaError_t e = enter_no_context(&d)) return e;
    forget_thread_context();
    return record(d->cuDevicePrimaryCtxReset(thread_device()));
}

cudaError_t CUDARTAPI cudaDriverGetVersion(int* driverVersion) {
    if (!driverVersion) return record(cudaErrorInvalidValue);
    const Driver* d;
    if (enter_no_context(&d) != cudaSuccess) {
        *driverVersion = 0;  // no driver: 0, like the real runtime
        return cudaSuccess;
    }
    return record(d->cuDriverGetVersion(driverVersion));
}

cudaError_t CUDARTAPI cudaRuntimeGetVersion(int* runtimeVersion) {
    if (!runtimeVersion) return record(cudaErrorInvalidValue);
    *runtimeVersion = kRuntimeVersion;
    return cudaSuccess;
}

const char* CUDARTAPI cudaGetErrorString(cudaError_t error) {
    const ErrorText* t = find_error(error);
    return t ? t->text : "unrecognized error code";
}

const char* CUDARTAPI cudaGetErrorName(cudaError_t error) {
    const ErrorText* t = find_error(error);
    return t ? t->name : "cudaErrorUnknown";
}

// How PyTorch (expandable segments) and others reach cuMemCreate/cuMemMap.
cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion(const char* symbol, void** funcPtr,
                                                       unsigned int cudaVersion,
                                                       unsigned long long flags,
                                                       enum cudaDriverEntryPointQueryResult* driverStatus) {
    return entry_point(symbol, funcPtr, cudaVersion, flags, driverStatus);
}
cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion_ptsz(
    const char* symbol, void** funcPtr, unsigned int cudaVersion, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult* driverStatus) {
    return entry_point(symbol, funcPtr, cudaVersion, ptsz_flags(flags), driverStatus);
}

// Deprecated flavour: the ABI version is the runtime's own (13.0).
cudaError_t CUDARTAPI cudaGetDriverEntryPoint(const char* symbol, void** funcPtr,
                                              unsigned long long flags,
                                              enum cudaDriverEntryPointQueryResult* driverStatus) {
    return entry_point(symbol, funcPtr, kRuntimeVersion, flags, driverStatus);
}
cudaError_t CUDARTAPI cudaGetDriverEntryPoint_ptsz(const char* symbol, void** funcPtr,
                                                   unsigned long long flags,
                                                   enum cudaDriverEntryPointQueryResult* driverStatus) {
    return entry_point(symbol, funcPtr, kRuntimeVersion, ptsz_flags(flags), driverStatus);
}

}  // extern "C"
