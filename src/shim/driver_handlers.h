// The handlers behind every wrapped driver entry point (hook_table.h lists them). Each receives
// the real function it wraps: one handler serves the exported symbol and every pointer that
// cuGetProcAddress handed out for it (slots.h).
#pragma once

#include "format/capture_format.h"
#include "shim/cuda_headers.h"

namespace gpuleak::shim {

using ApiId = format::Api;

CUresult on_get_proc_address_v2(PFN_cuGetProcAddress_v12000 real, ApiId, const char *symbol, void **pfn, int version,
                                cuuint64_t flags, CUdriverProcAddressQueryResult *status);
CUresult on_get_proc_address_v1(PFN_cuGetProcAddress_v11030 real, ApiId, const char *symbol, void **pfn, int version,
                                cuuint64_t flags);

// Device memory (driver_alloc_handlers.cpp).
CUresult on_mem_alloc(PFN_cuMemAlloc_v3020 real, ApiId, CUdeviceptr *dptr, size_t bytes);
CUresult on_mem_alloc_pitch(PFN_cuMemAllocPitch_v3020 real, ApiId, CUdeviceptr *dptr, size_t *pitch, size_t width,
                            size_t height, unsigned int element_size);
CUresult on_mem_alloc_managed(PFN_cuMemAllocManaged_v6000 real, ApiId, CUdeviceptr *dptr, size_t bytes,
                              unsigned int flags);
CUresult on_mem_free(PFN_cuMemFree_v3020 real, ApiId, CUdeviceptr dptr);
CUresult on_mem_alloc_async(PFN_cuMemAllocAsync_v11020 real, ApiId, CUdeviceptr *dptr, size_t bytes, CUstream stream);
CUresult on_mem_alloc_from_pool(PFN_cuMemAllocFromPoolAsync_v11020 real, ApiId, CUdeviceptr *dptr, size_t bytes,
                                CUmemoryPool pool, CUstream stream);
CUresult on_mem_free_async(PFN_cuMemFreeAsync_v11020 real, ApiId, CUdeviceptr dptr, CUstream stream);

// Virtual memory management (driver_vmm_handlers.cpp).
CUresult on_mem_create(PFN_cuMemCreate_v10020 real, ApiId, CUmemGenericAllocationHandle *handle, size_t size,
                       const CUmemAllocationProp *prop, unsigned long long flags);
CUresult on_mem_release(PFN_cuMemRelease_v10020 real, ApiId, CUmemGenericAllocationHandle handle);
CUresult on_mem_map(PFN_cuMemMap_v10020 real, ApiId, CUdeviceptr ptr, size_t size, size_t offset,
                    CUmemGenericAllocationHandle handle, unsigned long long flags);
CUresult on_mem_unmap(PFN_cuMemUnmap_v10020 real, ApiId, CUdeviceptr ptr, size_t size);
CUresult on_mem_address_reserve(PFN_cuMemAddressReserve_v10020 real, ApiId, CUdeviceptr *ptr, size_t size,
                                size_t alignment, CUdeviceptr addr, unsigned long long flags);
CUresult on_mem_address_free(PFN_cuMemAddressFree_v10020 real, ApiId, CUdeviceptr ptr, size_t size);
CUresult on_mem_import_shareable(PFN_cuMemImportFromShareableHandle_v10020 real, ApiId,
                                 CUmemGenericAllocationHandle *handle, void *os_handle, CUmemAllocationHandleType type);

// Host memory, arrays, pools, IPC, contexts (driver_other_handlers.cpp).
CUresult on_mem_host_alloc(PFN_cuMemHostAlloc_v2020 real, ApiId, void **pp, size_t bytes, unsigned int flags);
CUresult on_mem_alloc_host(PFN_cuMemAllocHost_v3020 real, ApiId, void **pp, size_t bytes);
CUresult on_mem_free_host(PFN_cuMemFreeHost_v2000 real, ApiId, void *p);
CUresult on_mem_host_register(PFN_cuMemHostRegister_v6050 real, ApiId, void *p, size_t bytes, unsigned int flags);
CUresult on_mem_host_unregister(PFN_cuMemHostUnregister_v4000 real, ApiId, void *p);
CUresult on_array_create(PFN_cuArrayCreate_v3020 real, ApiId, CUarray *array, const CUDA_ARRAY_DESCRIPTOR *desc);
CUresult on_array_3d_create(PFN_cuArray3DCreate_v3020 real, ApiId, CUarray *array, const CUDA_ARRAY3D_DESCRIPTOR *desc);
CUresult on_array_destroy(PFN_cuArrayDestroy_v2000 real, ApiId, CUarray array);
CUresult on_mipmapped_array_create(PFN_cuMipmappedArrayCreate_v5000 real, ApiId, CUmipmappedArray *array,
                                   const CUDA_ARRAY3D_DESCRIPTOR *desc, unsigned int levels);
CUresult on_mipmapped_array_destroy(PFN_cuMipmappedArrayDestroy_v5000 real, ApiId, CUmipmappedArray array);
CUresult on_mem_pool_create(PFN_cuMemPoolCreate_v11020 real, ApiId, CUmemoryPool *pool, const CUmemPoolProps *props);
CUresult on_mem_pool_destroy(PFN_cuMemPoolDestroy_v11020 real, ApiId, CUmemoryPool pool);
CUresult on_mem_pool_trim(PFN_cuMemPoolTrimTo_v11020 real, ApiId, CUmemoryPool pool, size_t keep);
CUresult on_mem_pool_import_pointer(PFN_cuMemPoolImportPointer_v11020 real, ApiId, CUdeviceptr *dptr, CUmemoryPool pool,
                                    CUmemPoolPtrExportData *data);
CUresult on_ipc_open(PFN_cuIpcOpenMemHandle_v11000 real, ApiId, CUdeviceptr *dptr, CUipcMemHandle handle,
                     unsigned int flags);
CUresult on_ipc_close(PFN_cuIpcCloseMemHandle_v4010 real, ApiId, CUdeviceptr dptr);
CUresult on_ctx_destroy(PFN_cuCtxDestroy_v4000 real, ApiId, CUcontext ctx);
CUresult on_primary_ctx_reset(PFN_cuDevicePrimaryCtxReset_v11000 real, ApiId, CUdevice dev);

// Stream capture (stream_capture_handlers.cpp): counted so that stream-ordered allocations ask
// the driver whether their stream is capturing only while some stream may be.
CUresult on_begin_capture_v1(PFN_gpuleak_cuStreamBeginCapture_v10000 real, ApiId, CUstream stream);
CUresult on_begin_capture(PFN_cuStreamBeginCapture_v10010 real, ApiId, CUstream stream, CUstreamCaptureMode mode);
CUresult on_begin_capture_to_graph(PFN_cuStreamBeginCaptureToGraph_v12030 real, ApiId, CUstream stream, CUgraph graph,
                                   const CUgraphNode *dependencies, const CUgraphEdgeData *edge_data,
                                   size_t dependency_count, CUstreamCaptureMode mode);
CUresult on_end_capture(PFN_cuStreamEndCapture_v10000 real, ApiId, CUstream stream, CUgraph *graph);

}  // namespace gpuleak::shim
