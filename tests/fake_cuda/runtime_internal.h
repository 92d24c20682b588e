// Internal header of the fake CUDA runtime (libcudart.so.13 and
// libcudart_static.a are built from the same sources).
//
// Like the real runtime, it never links against libcuda: on first use it
// dlopen()s libcuda.so.1, dlsym()s cuGetProcAddress_v2 and fetches every
// driver entry point through it (base name + CUDA 13.0 ABI + stream flavour).
// The driver is called ONLY through the pointers in fake_cudart::Driver.
//
// __CUDA_API_VERSION_INTERNAL makes cuda_runtime_api.h declare both the plain
// and the _ptsz names (cudaMallocAsync and cudaMallocAsync_ptsz), so every
// definition is checked against the real 13.0 prototypes; it also exposes the
// legacy PFN typedefs in cudaTypedefs.h.
#pragma once

#ifndef __CUDA_API_VERSION_INTERNAL
#define __CUDA_API_VERSION_INTERNAL 1
#endif
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

namespace fake_cudart {

constexpr int kRuntimeVersion = 13000;  // ABI version asked of cuGetProcAddress

// Driver entry points, typed with the PFN of the ABI that version 13000
// selects (e.g. "cuCtxSynchronize" is cuCtxSynchronize_v2 since CUDA 13.0).
struct Driver {
    PFN_cuGetProcAddress_v12000 cuGetProcAddress;
    PFN_cuInit_v2000 cuInit;
    PFN_cuDriverGetVersion_v2020 cuDriverGetVersion;
    PFN_cuDeviceGetCount_v2000 cuDeviceGetCount;
    PFN_cuDevicePrimaryCtxRetain_v7000 cuDevicePrimaryCtxRetain;
    PFN_cuDevicePrimaryCtxReset_v11000 cuDevicePrimaryCtxReset;
    PFN_cuCtxSetCurrent_v4000 cuCtxSetCurrent;
    PFN_cuCtxSynchronize_v13000 cuCtxSynchronize;
    PFN_cuMemGetInfo_v3020 cuMemGetInfo;
    PFN_cuMemAlloc_v3020 cuMemAlloc;
    PFN_cuMemFree_v3020 cuMemFree;
    PFN_cuMemAllocPitch_v3020 cuMemAllocPitch;
    PFN_cuMemAllocManaged_v6000 cuMemAllocManaged;
    PFN_cuMemAllocAsync_v11020 cuMemAllocAsync;
    PFN_cuMemAllocAsync_v11020_ptsz cuMemAllocAsync_ptsz;
    PFN_cuMemFreeAsync_v11020 cuMemFreeAsync;
    PFN_cuMemFreeAsync_v11020_ptsz cuMemFreeAsync_ptsz;
    PFN_cuMemAllocFromPoolAsync_v11020 cuMemAllocFromPoolAsync;
    PFN_cuMemAllocFromPoolAsync_v11020_ptsz cuMemAllocFromPoolAsync_ptsz;
    PFN_cuMemPoolCreate_v11020 cuMemPoolCreate;
    PFN_cuMemPoolDestroy_v11020 cuMemPoolDestroy;
    PFN_cuMemPoolTrimTo_v11020 cuMemPoolTrimTo;
    PFN_cuMemHostAlloc_v2020 cuMemHostAlloc;
    PFN_cuMemFreeHost_v2000 cuMemFreeHost;
    PFN_cuMemHostRegister_v6050 cuMemHostRegister;
    PFN_cuMemHostUnregister_v4000 cuMemHostUnregister;
    PFN_cuArray3DCreate_v3020 cuArray3DCreate;
    PFN_cuArrayDestroy_v2000 cuArrayDestroy;
    PFN_cuStreamCreate_v2000 cuStreamCreate;
    PFN_cuStreamDestroy_v4000 cuStreamDestroy;
    PFN_cuStreamSynchronize_v2000 cuStreamSynchronize;
    PFN_cuStreamSynchronize_v7000_ptsz cuStreamSynchronize_ptsz;
    PFN_cuStreamBeginCapture_v10010 cuStreamBeginCapture;
    PFN_cuStreamBeginCapture_v10010_ptsz cuStreamBeginCapture_ptsz;
    PFN_cuStreamEndCapture_v10000 cuStreamEndCapture;
    PFN_cuStreamEndCapture_v10000_ptsz cuStreamEndCapture_ptsz;
    PFN_cuStreamIsCapturing_v10000 cuStreamIsCapturing;
    PFN_cuStreamIsCapturing_v10000_ptsz cuStreamIsCapturing_ptsz;
    PFN_cuGraphDestroy_v10000 cuGraphDestroy;
};

// Loads the driver once (thread-safe). nullptr on failure, with *err set.
const Driver* load_driver(cudaError_t* err);

// Loads the driver and makes the calling thread's device primary context
// current (the runtime's lazy context creation). Records failures as the
// thread's last error. Use: `const Driver* d; if (auto e = enter(&d)) return e;`
cudaError_t enter(const Driver** d);

// Loads the driver without touching contexts (device queries, entry points).
cudaError_t enter_no_context(const Driver** d);

cudaError_t to_cuda_error(CUresult r);

// Sets the thread's last error when e != cudaSuccess; returns e.
cudaError_t record(cudaError_t e);
inline cudaError_t record(CUresult r) { return record(to_cuda_error(r)); }

int& thread_device();         // cudaSetDevice target of this thread
void forget_thread_context();  // after cudaDeviceReset

}  // namespace fake_cudart
