// Initialization, devices, contexts and error strings of the fake driver.
#include "driver_internal.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

using namespace fake;

extern "C" {

// Like the real driver: the first cuInit loads CUDA_INJECTION64_PATH and calls its
// InitializeInjection (how CUPTI-based tools attach).
static void load_injection() {
    const char* path = std::getenv("CUDA_INJECTION64_PATH");
    if (!path || !*path) return;
    void* lib = dlopen(path, RTLD_NOW);
    if (!lib) return;
    auto init = reinterpret_cast<int (*)()>(dlsym(lib, "InitializeInjection"));
    if (init) init();
}

CUresult CUDAAPI cuInit(unsigned int Flags) {
    if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
    static std::once_flag injected;
    std::call_once(injected, load_injection);
    // Like a machine without GPUs when FAKE_CUDA_DEVICES=0.
    return device_count() > 0 ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

CUresult CUDAAPI cuDriverGetVersion(int* driverVersion) {
    if (!driverVersion) return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = CUDA_VERSION;  // 13000
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
    if (!device) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int* count) {
    if (!count) return CUDA_ERROR_INVALID_VALUE;
    *count = device_count();
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char* name, int len, CUdevice dev) {
    if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    std::strncpy(name, "Fake CUDA Device", static_cast<size_t>(len) - 1);
    name[len - 1] = '\0';
    return CUDA_SUCCESS;
}

// "00000000:1N:00.0" for device N: the fake libnvidia-ml.so.1 finds the device by it.
CUresult CUDAAPI cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev) {
  if (!pciBusId || len < 17) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(pciBusId, static_cast<size_t>(len), "00000000:%02X:00.0", 0x10 + dev);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
    if (!bytes) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    *bytes = device_capacity();
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    *pctx = primary_ctx(dev);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
    return valid_device(dev) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) { return cuDevicePrimaryCtxRelease_v2(dev); }

// Destroying the primary context frees everything allocated in it (pointer
// allocations and arrays are dropped; VMM handles survive, as they do for real).
CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev) {
    if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    free_device_blocks(dev);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev) { return cuDevicePrimaryCtxReset_v2(dev); }

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
    if (ctx) {  // only primary contexts exist; compare addresses, never deref
        bool known = false;
        for (int d = 0; d < device_count(); ++d) known = known || ctx == primary_ctx(d);
        if (!known) return CUDA_ERROR_INVALID_CONTEXT;
    }
    set_current_ctx(ctx);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext* pctx) {
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    *pctx = current_ctx();
    return CUDA_SUCCESS;
}

// Without a current context the fake answers device 0 (simpler for tests).
CUresult CUDAAPI cuCtxGetDevice(CUdevice* device) {
    if (!device) return CUDA_ERROR_INVALID_VALUE;
    *device = current_device();
    return CUDA_SUCCESS;
}

// CUDA 13.0 added cuCtxGetDevice_v2/cuCtxSynchronize_v2 as *separate* ABI
// names: cuGetProcAddress("cuCtxGetDevice", 13000) returns the _v2 one.
CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice* device, CUcontext ctx) {
    if (!device) return CUDA_ERROR_INVALID_VALUE;
    *device = ctx ? ctx->device : current_device();
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSynchronize(void) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext /*ctx*/) { return CUDA_SUCCESS; }

// ---- error strings -------------------------------------------------------

namespace {
struct ErrorText {
    CUresult code;
    const char* name;
    const char* text;
};
#define FAKE_ERR(code, text) {code, #code, text}
const ErrorText kErrors[] = {
    FAKE_ERR(CUDA_SUCCESS, "no error"),
    FAKE_ERR(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    FAKE_ERR(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    FAKE_ERR(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
    FAKE_ERR(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
    FAKE_ERR(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
    FAKE_ERR(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
    FAKE_ERR(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
    FAKE_ERR(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
    FAKE_ERR(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state"),
    FAKE_ERR(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    FAKE_ERR(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
             "part or all of the requested memory range is already mapped"),
    FAKE_ERR(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
             "pointer does not correspond to a registered memory region"),
    FAKE_ERR(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
    FAKE_ERR(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
             "operation not permitted when stream is capturing"),
    FAKE_ERR(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
             "operation failed due to a previous error during capture"),
    FAKE_ERR(CUDA_ERROR_UNKNOWN, "unknown error"),
};
#undef FAKE_ERR

const ErrorText* find_error(CUresult e) {
    for (const ErrorText& t : kErrors)
        if (t.code == e) return &t;
    return nullptr;
}
}  // namespace

CUresult CUDAAPI cuGetErrorString(CUresult error, const char** pStr) {
    if (!pStr) return CUDA_ERROR_INVALID_VALUE;
    const ErrorText* t = find_error(error);
    *pStr = t ? t->text : nullptr;
    return t ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** pStr) {
    if (!pStr) return CUDA_ERROR_INVALID_VALUE;
    const ErrorText* t = find_error(error);
    *pStr = t ? t->name : nullptr;
    return t ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // extern "C"
