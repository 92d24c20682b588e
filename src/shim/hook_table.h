// Every driver entry point gpuleak wraps, listed once (STYLE.md lesson 2).
// driver_exports.cpp, driver_handlers.h, runtime_labels.cpp and the symbols libgpuleak.so exports
// (gpuleak.map) are checked against these rows by tests/unit/hook_list_check.py.
//
//   X(export name, base name for cuGetProcAddress, min ABI version, max version (0 = none),
//     per-thread-stream variant?, exact PFN typedef, handler)
//
// The export name is what libcuda.so.1 exports and what dlsym() is asked for; the base name plus
// a version is what cuGetProcAddress is asked for. A cuGetProcAddress request below the minimum
// version returns an older ABI (32-bit sizes of the legacy cuMemAlloc, cuMemFree ...) which is
// never given a 64-bit wrapper. `_ptsz` rows are chosen when the caller passes
// CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM: the driver hands out a distinct pointer for them.
#pragma once

#include "shim/cuda_headers.h"
#include "shim/driver_handlers.h"

// clang-format off
#define GPULEAK_DRIVER_HOOKS(X)                                                                    \
  X(cuGetProcAddress_v2, "cuGetProcAddress", 12000, 0, false, PFN_cuGetProcAddress_v12000, on_get_proc_address_v2) \
  X(cuGetProcAddress, "cuGetProcAddress", 11030, 12000, false, PFN_cuGetProcAddress_v11030, on_get_proc_address_v1) \
  X(cuMemAlloc_v2, "cuMemAlloc", 3020, 0, false, PFN_cuMemAlloc_v3020, on_mem_alloc)                \
  X(cuMemAllocPitch_v2, "cuMemAllocPitch", 3020, 0, false, PFN_cuMemAllocPitch_v3020, on_mem_alloc_pitch) \
  X(cuMemAllocManaged, "cuMemAllocManaged", 6000, 0, false, PFN_cuMemAllocManaged_v6000, on_mem_alloc_managed) \
  X(cuMemFree_v2, "cuMemFree", 3020, 0, false, PFN_cuMemFree_v3020, on_mem_free)                    \
  X(cuMemAllocAsync, "cuMemAllocAsync", 11020, 0, false, PFN_cuMemAllocAsync_v11020, on_mem_alloc_async) \
  X(cuMemAllocAsync_ptsz, "cuMemAllocAsync", 11020, 0, true, PFN_cuMemAllocAsync_v11020_ptsz, on_mem_alloc_async) \
  X(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", 11020, 0, false, PFN_cuMemAllocFromPoolAsync_v11020, on_mem_alloc_from_pool) \
  X(cuMemAllocFromPoolAsync_ptsz, "cuMemAllocFromPoolAsync", 11020, 0, true, PFN_cuMemAllocFromPoolAsync_v11020_ptsz, on_mem_alloc_from_pool) \
  X(cuMemFreeAsync, "cuMemFreeAsync", 11020, 0, false, PFN_cuMemFreeAsync_v11020, on_mem_free_async) \
  X(cuMemFreeAsync_ptsz, "cuMemFreeAsync", 11020, 0, true, PFN_cuMemFreeAsync_v11020_ptsz, on_mem_free_async) \
  X(cuMemCreate, "cuMemCreate", 10020, 0, false, PFN_cuMemCreate_v10020, on_mem_create)             \
  X(cuMemRelease, "cuMemRelease", 10020, 0, false, PFN_cuMemRelease_v10020, on_mem_release)         \
  X(cuMemMap, "cuMemMap", 10020, 0, false, PFN_cuMemMap_v10020, on_mem_map)                         \
  X(cuMemUnmap, "cuMemUnmap", 10020, 0, false, PFN_cuMemUnmap_v10020, on_mem_unmap)                 \
  X(cuMemAddressReserve, "cuMemAddressReserve", 10020, 0, false, PFN_cuMemAddressReserve_v10020, on_mem_address_reserve) \
  X(cuMemAddressFree, "cuMemAddressFree", 10020, 0, false, PFN_cuMemAddressFree_v10020, on_mem_address_free) \
  X(cuMemImportFromShareableHandle, "cuMemImportFromShareableHandle", 10020, 0, false, PFN_cuMemImportFromShareableHandle_v10020, on_mem_import_shareable) \
  X(cuMemHostAlloc, "cuMemHostAlloc", 2020, 0, false, PFN_cuMemHostAlloc_v2020, on_mem_host_alloc)  \
  X(cuMemAllocHost_v2, "cuMemAllocHost", 3020, 0, false, PFN_cuMemAllocHost_v3020, on_mem_alloc_host) \
  X(cuMemFreeHost, "cuMemFreeHost", 2000, 0, false, PFN_cuMemFreeHost_v2000, on_mem_free_host)      \
  X(cuMemHostRegister_v2, "cuMemHostRegister", 6050, 0, false, PFN_cuMemHostRegister_v6050, on_mem_host_register) \
  X(cuMemHostUnregister, "cuMemHostUnregister", 4000, 0, false, PFN_cuMemHostUnregister_v4000, on_mem_host_unregister) \
  X(cuArrayCreate_v2, "cuArrayCreate", 3020, 0, false, PFN_cuArrayCreate_v3020, on_array_create)    \
  X(cuArray3DCreate_v2, "cuArray3DCreate", 3020, 0, false, PFN_cuArray3DCreate_v3020, on_array_3d_create) \
  X(cuArrayDestroy, "cuArrayDestroy", 2000, 0, false, PFN_cuArrayDestroy_v2000, on_array_destroy)   \
  X(cuMipmappedArrayCreate, "cuMipmappedArrayCreate", 5000, 0, false, PFN_cuMipmappedArrayCreate_v5000, on_mipmapped_array_create) \
  X(cuMipmappedArrayDestroy, "cuMipmappedArrayDestroy", 5000, 0, false, PFN_cuMipmappedArrayDestroy_v5000, on_mipmapped_array_destroy) \
  X(cuMemPoolCreate, "cuMemPoolCreate", 11020, 0, false, PFN_cuMemPoolCreate_v11020, on_mem_pool_create) \
  X(cuMemPoolDestroy, "cuMemPoolDestroy", 11020, 0, false, PFN_cuMemPoolDestroy_v11020, on_mem_pool_destroy) \
  X(cuMemPoolTrimTo, "cuMemPoolTrimTo", 11020, 0, false, PFN_cuMemPoolTrimTo_v11020, on_mem_pool_trim) \
  X(cuMemPoolImportPointer, "cuMemPoolImportPointer", 11020, 0, false, PFN_cuMemPoolImportPointer_v11020, on_mem_pool_import_pointer) \
  X(cuIpcOpenMemHandle_v2, "cuIpcOpenMemHandle", 11000, 0, false, PFN_cuIpcOpenMemHandle_v11000, on_ipc_open) \
  X(cuIpcCloseMemHandle, "cuIpcCloseMemHandle", 4010, 0, false, PFN_cuIpcCloseMemHandle_v4010, on_ipc_close) \
  X(cuCtxDestroy_v2, "cuCtxDestroy", 4000, 0, false, PFN_cuCtxDestroy_v4000, on_ctx_destroy)         \
  X(cuDevicePrimaryCtxReset_v2, "cuDevicePrimaryCtxReset", 11000, 0, false, PFN_cuDevicePrimaryCtxReset_v11000, on_primary_ctx_reset) \
  X(cuStreamBeginCapture, "cuStreamBeginCapture", 10000, 10010, false, PFN_gpuleak_cuStreamBeginCapture_v10000, on_begin_capture_v1) \
  X(cuStreamBeginCapture_ptsz, "cuStreamBeginCapture", 10000, 10010, true, PFN_gpuleak_cuStreamBeginCapture_v10000, on_begin_capture_v1) \
  X(cuStreamBeginCapture_v2, "cuStreamBeginCapture", 10010, 0, false, PFN_cuStreamBeginCapture_v10010, on_begin_capture) \
  X(cuStreamBeginCapture_v2_ptsz, "cuStreamBeginCapture", 10010, 0, true, PFN_cuStreamBeginCapture_v10010_ptsz, on_begin_capture) \
  X(cuStreamBeginCaptureToGraph, "cuStreamBeginCaptureToGraph", 12030, 0, false, PFN_cuStreamBeginCaptureToGraph_v12030, on_begin_capture_to_graph) \
  X(cuStreamBeginCaptureToGraph_ptsz, "cuStreamBeginCaptureToGraph", 12030, 0, true, PFN_cuStreamBeginCaptureToGraph_v12030_ptsz, on_begin_capture_to_graph) \
  X(cuStreamEndCapture, "cuStreamEndCapture", 10000, 0, false, PFN_cuStreamEndCapture_v10000, on_end_capture) \
  X(cuStreamEndCapture_ptsz, "cuStreamEndCapture", 10000, 0, true, PFN_cuStreamEndCapture_v10000_ptsz, on_end_capture)
// clang-format on
