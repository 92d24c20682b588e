// cuGetProcAddress / cuGetProcAddress_v2: the way the CUDA runtime (and
// PyTorch, via cudaGetDriverEntryPoint) reaches the driver. Like the real
// driver, callers pass the *base* name ("cuMemAlloc") plus the CUDA version
// whose ABI they were compiled against, and get the matching versioned
// function ("cuMemAlloc_v2" for >= 3020, the legacy "cuMemAlloc" below).
// With CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM the _ptsz flavour is
// returned when one exists.
//
// The table holds the library's own addresses: the library is linked with
// -Bsymbolic-functions, so an LD_PRELOADed interposer of cuMemAlloc_v2 is
// *not* what cuGetProcAddress hands out, exactly as with the real driver.
#include "driver_internal.h"

#include <cstring>

namespace {

struct Proc {
    const char* name;  // base name
    int version;       // CUDA version that introduced this ABI
    bool ptsz;         // per-thread-default-stream flavour
    void* fn;
};

template <class F>
void* fn_ptr(F* f) {
    return reinterpret_cast<void*>(f);
}

#define ENTRY(base, ver, fn) {base, ver, false, fn_ptr(&fn)}
#define PTSZ(base, ver, fn) {base, ver, true, fn_ptr(&fn)}

const Proc kProcs[] = {
    ENTRY("cuGetProcAddress", 11030, cuGetProcAddress),
    ENTRY("cuGetProcAddress", 12000, cuGetProcAddress_v2),
    ENTRY("cuInit", 2000, cuInit),
    ENTRY("cuDriverGetVersion", 2020, cuDriverGetVersion),
    ENTRY("cuDeviceGet", 2000, cuDeviceGet),
    ENTRY("cuDeviceGetCount", 2000, cuDeviceGetCount),
    ENTRY("cuDeviceGetName", 2000, cuDeviceGetName),
    ENTRY("cuDeviceTotalMem", 3020, cuDeviceTotalMem_v2),
    ENTRY("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
    ENTRY("cuDevicePrimaryCtxRelease", 7000, cuDevicePrimaryCtxRelease),
    ENTRY("cuDevicePrimaryCtxRelease", 11000, cuDevicePrimaryCtxRelease_v2),
    ENTRY("cuDevicePrimaryCtxReset", 7000, cuDevicePrimaryCtxReset),
    ENTRY("cuDevicePrimaryCtxReset", 11000, cuDevicePrimaryCtxReset_v2),
    ENTRY("cuCtxSetCurrent", 4000, cuCtxSetCurrent),
    ENTRY("cuCtxGetCurrent", 4000, cuCtxGetCurrent),
    ENTRY("cuCtxGetDevice", 2000, cuCtxGetDevice),
    ENTRY("cuCtxGetDevice", 13000, cuCtxGetDevice_v2),
    ENTRY("cuCtxSynchronize", 2000, cuCtxSynchronize),
    ENTRY("cuCtxSynchronize", 13000, cuCtxSynchronize_v2),
    ENTRY("cuGetErrorString", 6000, cuGetErrorString),
    ENTRY("cuGetErrorName", 6000, cuGetErrorName),
    ENTRY("cuMemGetInfo", 3020, cuMemGetInfo_v2),
    ENTRY("cuMemAlloc", 2000, cuMemAlloc),
    ENTRY("cuMemAlloc", 3020, cuMemAlloc_v2),
    ENTRY("cuMemFree", 2000, cuMemFree),
    ENTRY("cuMemFree", 3020, cuMemFree_v2),
    ENTRY("cuMemAllocPitch", 3020, cuMemAllocPitch_v2),
    ENTRY("cuMemAllocManaged", 6000, cuMemAllocManaged),
    ENTRY("cuMemAllocAsync", 11020, cuMemAllocAsync),
    PTSZ("cuMemAllocAsync", 11020, cuMemAllocAsync_ptsz),
    ENTRY("cuMemFreeAsync", 11020, cuMemFreeAsync),
    PTSZ("cuMemFreeAsync", 11020, cuMemFreeAsync_ptsz),
    ENTRY("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync),
    PTSZ("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync_ptsz),
    ENTRY("cuMemPoolCreate", 11020, cuMemPoolCreate),
    ENTRY("cuMemPoolDestroy", 11020, cuMemPoolDestroy),
    ENTRY("cuMemPoolTrimTo", 11020, cuMemPoolTrimTo),
    ENTRY("cuMemHostAlloc", 2020, cuMemHostAlloc),
    ENTRY("cuMemAllocHost", 3020, cuMemAllocHost_v2),
    ENTRY("cuMemFreeHost", 2000, cuMemFreeHost),
    ENTRY("cuMemHostRegister", 4000, cuMemHostRegister),
    ENTRY("cuMemHostRegister", 6050, cuMemHostRegister_v2),
    ENTRY("cuMemHostUnregister", 4000, cuMemHostUnregister),
    ENTRY("cuArrayCreate", 3020, cuArrayCreate_v2),
    ENTRY("cuArray3DCreate", 3020, cuArray3DCreate_v2),
    ENTRY("cuArrayDestroy", 2000, cuArrayDestroy),
    ENTRY("cuMipmappedArrayCreate", 5000, cuMipmappedArrayCreate),
    ENTRY("cuMipmappedArrayDestroy", 5000, cuMipmappedArrayDestroy),
    ENTRY("cuMemGetAllocationGranularity", 10020, cuMemGetAllocationGranularity),
    ENTRY("cuMemCreate", 10020, cuMemCreate),
    ENTRY("cuMemRelease", 10020, cuMemRelease),
    ENTRY("cuMemAddressReserve", 10020, cuMemAddressReserve),
    ENTRY("cuMemAddressFree", 10020, cuMemAddressFree),
    ENTRY("cuMemMap", 10020, cuMemMap),
    ENTRY("cuMemUnmap", 10020, cuMemUnmap),
    ENTRY("cuMemSetAccess", 10020, cuMemSetAccess),
    ENTRY("cuStreamCreate", 2000, cuStreamCreate),
    ENTRY("cuStreamDestroy", 2000, cuStreamDestroy),
    ENTRY("cuStreamDestroy", 4000, cuStreamDestroy_v2),
    ENTRY("cuStreamSynchronize", 2000, cuStreamSynchronize),
    PTSZ("cuStreamSynchronize", 7000, cuStreamSynchronize_ptsz),
    ENTRY("cuStreamBeginCapture", 10000, cuStreamBeginCapture),
    PTSZ("cuStreamBeginCapture", 10000, cuStreamBeginCapture_ptsz),
    ENTRY("cuStreamBeginCapture", 10010, cuStreamBeginCapture_v2),
    PTSZ("cuStreamBeginCapture", 10010, cuStreamBeginCapture_v2_ptsz),
    ENTRY("cuStreamEndCapture", 10000, cuStreamEndCapture),
    PTSZ("cuStreamEndCapture", 10000, cuStreamEndCapture_ptsz),
    ENTRY("cuStreamIsCapturing", 10000, cuStreamIsCapturing),
    PTSZ("cuStreamIsCapturing", 10000, cuStreamIsCapturing_ptsz),
    ENTRY("cuStreamGetCaptureInfo", 10010, cuStreamGetCaptureInfo),
    PTSZ("cuStreamGetCaptureInfo", 10010, cuStreamGetCaptureInfo_ptsz),
    ENTRY("cuStreamGetCaptureInfo", 11030, cuStreamGetCaptureInfo_v2),
    PTSZ("cuStreamGetCaptureInfo", 11030, cuStreamGetCaptureInfo_v2_ptsz),
    ENTRY("cuStreamGetCaptureInfo", 12030, cuStreamGetCaptureInfo_v3),
    PTSZ("cuStreamGetCaptureInfo", 12030, cuStreamGetCaptureInfo_v3_ptsz),
    ENTRY("cuGraphDestroy", 10000, cuGraphDestroy),
};

#undef ENTRY
#undef PTSZ

// Newest entry of the wanted flavour whose version is <= cudaVersion.
const Proc* pick(const char* symbol, int cudaVersion, bool ptsz, bool* name_known) {
    const Proc* best = nullptr;
    for (const Proc& p : kProcs) {
        if (std::strcmp(p.name, symbol) != 0) continue;
        *name_known = true;
        if (p.ptsz == ptsz && p.version <= cudaVersion && (!best || p.version > best->version))
            best = &p;
    }
    return best;
}

CUresult lookup(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                CUdriverProcAddressQueryResult* status) {
    if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
    const cuuint64_t known_flags =
        CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    if ((flags & ~known_flags) || cudaVersion > CUDA_VERSION) return CUDA_ERROR_INVALID_VALUE;
    *pfn = nullptr;
    bool known = false;
    const Proc* p = nullptr;
    if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
        p = pick(symbol, cudaVersion, true, &known);
    if (!p) p = pick(symbol, cudaVersion, false, &known);  // no _ptsz flavour: legacy one
    if (!p) {
        if (status)
            *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                            : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_ERROR_NOT_FOUND;
    }
    *pfn = p->fn;
    if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion,
                                     cuuint64_t flags, CUdriverProcAddressQueryResult* symbolStatus) {
    return lookup(symbol, pfn, cudaVersion, flags, symbolStatus);
}

// CUDA 11.3 ABI: no status out-parameter.
CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion,
                                  cuuint64_t flags) {
    return lookup(symbol, pfn, cudaVersion, flags, nullptr);
}

}  // extern "C"
