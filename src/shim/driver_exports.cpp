// libgpuleak's exported driver symbols, for programs linked with -lcuda that call the driver
// through the PLT (and for dlsym(RTLD_DEFAULT, ...) lookups). Each forwards to the row's handler
// with the next definition of the same name, libcuda's. Legacy un-suffixed exports (cuMemAlloc,
// cuMemFree, ... with 32-bit sizes) are deliberately absent: the program keeps calling libcuda's.
#include "shim/slots.h"

#define GPULEAK_API extern "C" __attribute__((visibility("default")))

using namespace gpuleak::shim;

// clang-format off
GPULEAK_API CUresult cuGetProcAddress_v2(const char *s, void **p, int v, cuuint64_t f, CUdriverProcAddressQueryResult *st) { return GPULEAK_EXPORTED(cuGetProcAddress_v2)(s, p, v, f, st); }
GPULEAK_API CUresult cuGetProcAddress(const char *s, void **p, int v, cuuint64_t f) { return GPULEAK_EXPORTED(cuGetProcAddress)(s, p, v, f); }
GPULEAK_API CUresult cuMemAlloc_v2(CUdeviceptr *d, size_t n) { return GPULEAK_EXPORTED(cuMemAlloc_v2)(d, n); }
GPULEAK_API CUresult cuMemAllocPitch_v2(CUdeviceptr *d, size_t *p, size_t w, size_t h, unsigned int e) { return GPULEAK_EXPORTED(cuMemAllocPitch_v2)(d, p, w, h, e); }
GPULEAK_API CUresult cuMemAllocManaged(CUdeviceptr *d, size_t n, unsigned int f) { return GPULEAK_EXPORTED(cuMemAllocManaged)(d, n, f); }
GPULEAK_API CUresult cuMemFree_v2(CUdeviceptr d) { return GPULEAK_EXPORTED(cuMemFree_v2)(d); }
GPULEAK_API CUresult cuMemAllocAsync(CUdeviceptr *d, size_t n, CUstream s) { return GPULEAK_EXPORTED(cuMemAllocAsync)(d, n, s); }
GPULEAK_API CUresult cuMemAllocAsync_ptsz(CUdeviceptr *d, size_t n, CUstream s) { return GPULEAK_EXPORTED(cuMemAllocAsync_ptsz)(d, n, s); }
GPULEAK_API CUresult cuMemAllocFromPoolAsync(CUdeviceptr *d, size_t n, CUmemoryPool p, CUstream s) { return GPULEAK_EXPORTED(cuMemAllocFromPoolAsync)(d, n, p, s); }
GPULEAK_API CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *d, size_t n, CUmemoryPool p, CUstream s) { return GPULEAK_EXPORTED(cuMemAllocFromPoolAsync_ptsz)(d, n, p, s); }
GPULEAK_API CUresult cuMemFreeAsync(CUdeviceptr d, CUstream s) { return GPULEAK_EXPORTED(cuMemFreeAsync)(d, s); }
GPULEAK_API CUresult cuMemFreeAsync_ptsz(CUdeviceptr d, CUstream s) { return GPULEAK_EXPORTED(cuMemFreeAsync_ptsz)(d, s); }
GPULEAK_API CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t n, const CUmemAllocationProp *p, unsigned long long f) { return GPULEAK_EXPORTED(cuMemCreate)(h, n, p, f); }
GPULEAK_API CUresult cuMemRelease(CUmemGenericAllocationHandle h) { return GPULEAK_EXPORTED(cuMemRelease)(h); }
GPULEAK_API CUresult cuMemMap(CUdeviceptr d, size_t n, size_t o, CUmemGenericAllocationHandle h, unsigned long long f) { return GPULEAK_EXPORTED(cuMemMap)(d, n, o, h, f); }
GPULEAK_API CUresult cuMemUnmap(CUdeviceptr d, size_t n) { return GPULEAK_EXPORTED(cuMemUnmap)(d, n); }
GPULEAK_API CUresult cuMemAddressReserve(CUdeviceptr *d, size_t n, size_t a, CUdeviceptr at, unsigned long long f) { return GPULEAK_EXPORTED(cuMemAddressReserve)(d, n, a, at, f); }
GPULEAK_API CUresult cuMemAddressFree(CUdeviceptr d, size_t n) { return GPULEAK_EXPORTED(cuMemAddressFree)(d, n); }
GPULEAK_API CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *h, void *os, CUmemAllocationHandleType t) { return GPULEAK_EXPORTED(cuMemImportFromShareableHandle)(h, os, t); }
GPULEAK_API CUresult cuMemHostAlloc(void **p, size_t n, unsigned int f) { return GPULEAK_EXPORTED(cuMemHostAlloc)(p, n, f); }
GPULEAK_API CUresult cuMemAllocHost_v2(void **p, size_t n) { return GPULEAK_EXPORTED(cuMemAllocHost_v2)(p, n); }
GPULEAK_API CUresult cuMemFreeHost(void *p) { return GPULEAK_EXPORTED(cuMemFreeHost)(p); }
GPULEAK_API CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned int f) { return GPULEAK_EXPORTED(cuMemHostRegister_v2)(p, n, f); }
GPULEAK_API CUresult cuMemHostUnregister(void *p) { return GPULEAK_EXPORTED(cuMemHostUnregister)(p); }
GPULEAK_API CUresult cuArrayCreate_v2(CUarray *a, const CUDA_ARRAY_DESCRIPTOR *d) { return GPULEAK_EXPORTED(cuArrayCreate_v2)(a, d); }
GPULEAK_API CUresult cuArray3DCreate_v2(CUarray *a, const CUDA_ARRAY3D_DESCRIPTOR *d) { return GPULEAK_EXPORTED(cuArray3DCreate_v2)(a, d); }
GPULEAK_API CUresult cuArrayDestroy(CUarray a) { return GPULEAK_EXPORTED(cuArrayDestroy)(a); }
GPULEAK_API CUresult cuMipmappedArrayCreate(CUmipmappedArray *a, const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned int l) { return GPULEAK_EXPORTED(cuMipmappedArrayCreate)(a, d, l); }
GPULEAK_API CUresult cuMipmappedArrayDestroy(CUmipmappedArray a) { return GPULEAK_EXPORTED(cuMipmappedArrayDestroy)(a); }
GPULEAK_API CUresult cuMemPoolCreate(CUmemoryPool *p, const CUmemPoolProps *props) { return GPULEAK_EXPORTED(cuMemPoolCreate)(p, props); }
GPULEAK_API CUresult cuMemPoolDestroy(CUmemoryPool p) { return GPULEAK_EXPORTED(cuMemPoolDestroy)(p); }
GPULEAK_API CUresult cuMemPoolTrimTo(CUmemoryPool p, size_t keep) { return GPULEAK_EXPORTED(cuMemPoolTrimTo)(p, keep); }
GPULEAK_API CUresult cuMemPoolImportPointer(CUdeviceptr *d, CUmemoryPool p, CUmemPoolPtrExportData *e) { return GPULEAK_EXPORTED(cuMemPoolImportPointer)(d, p, e); }
GPULEAK_API CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *d, CUipcMemHandle h, unsigned int f) { return GPULEAK_EXPORTED(cuIpcOpenMemHandle_v2)(d, h, f); }
GPULEAK_API CUresult cuIpcCloseMemHandle(CUdeviceptr d) { return GPULEAK_EXPORTED(cuIpcCloseMemHandle)(d); }
GPULEAK_API CUresult cuCtxDestroy_v2(CUcontext c) { return GPULEAK_EXPORTED(cuCtxDestroy_v2)(c); }
GPULEAK_API CUresult cuDevicePrimaryCtxReset_v2(CUdevice d) { return GPULEAK_EXPORTED(cuDevicePrimaryCtxReset_v2)(d); }
GPULEAK_API CUresult cuStreamBeginCapture(CUstream s) { return GPULEAK_EXPORTED(cuStreamBeginCapture)(s); }
GPULEAK_API CUresult cuStreamBeginCapture_ptsz(CUstream s) { return GPULEAK_EXPORTED(cuStreamBeginCapture_ptsz)(s); }
GPULEAK_API CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode m) { return GPULEAK_EXPORTED(cuStreamBeginCapture_v2)(s, m); }
GPULEAK_API CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode m) { return GPULEAK_EXPORTED(cuStreamBeginCapture_v2_ptsz)(s, m); }
GPULEAK_API CUresult cuStreamBeginCaptureToGraph(CUstream s, CUgraph g, const CUgraphNode *d, const CUgraphEdgeData *e, size_t n, CUstreamCaptureMode m) { return GPULEAK_EXPORTED(cuStreamBeginCaptureToGraph)(s, g, d, e, n, m); }
GPULEAK_API CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream s, CUgraph g, const CUgraphNode *d, const CUgraphEdgeData *e, size_t n, CUstreamCaptureMode m) { return GPULEAK_EXPORTED(cuStreamBeginCaptureToGraph_ptsz)(s, g, d, e, n, m); }
GPULEAK_API CUresult cuStreamEndCapture(CUstream s, CUgraph *g) { return GPULEAK_EXPORTED(cuStreamEndCapture)(s, g); }
GPULEAK_API CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph *g) { return GPULEAK_EXPORTED(cuStreamEndCapture_ptsz)(s, g); }
// clang-format on
