// Host-pinned memory, arrays, stream-ordered pools, imported memory and context resets.
#include "shim/driver_handlers.h"
#include "shim/hook.h"

namespace gpuleak::shim {

namespace {
constexpr int16_t kHostDevice = -1;  // pinned host memory belongs to no device

uint64_t element_bytes(CUarray_format f) {
  switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
      return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
      return 4;
    default:
      return 1;  // 8-bit and block-compressed formats: a lower bound
  }
}
uint64_t array_bytes(size_t w, size_t h, size_t d, unsigned channels, CUarray_format f) {
  return static_cast<uint64_t>(w) * (h ? h : 1) * (d ? d : 1) * (channels ? channels : 1) * element_bytes(f);
}
}  // namespace

CUresult on_mem_host_alloc(PFN_cuMemHostAlloc_v2020 real, ApiId api, void **pp, size_t bytes, unsigned int flags) {
  Hook hook(api);
  if (!hook) return real(pp, bytes, flags);
  CUresult r = real(pp, bytes, flags);
  hook.alloc(r, Op::kAlloc, Kind::kHostPinned, Space::kHost, r == CUDA_SUCCESS && pp ? addr(*pp) : 0, bytes, 0, flags,
             kHostDevice);
  return r;
}

CUresult on_mem_alloc_host(PFN_cuMemAllocHost_v3020 real, ApiId api, void **pp, size_t bytes) {
  Hook hook(api);
  if (!hook) return real(pp, bytes);
  CUresult r = real(pp, bytes);
  hook.alloc(r, Op::kAlloc, Kind::kHostPinned, Space::kHost, r == CUDA_SUCCESS && pp ? addr(*pp) : 0, bytes, 0, 0,
             kHostDevice);
  return r;
}

CUresult on_mem_free_host(PFN_cuMemFreeHost_v2000 real, ApiId api, void *p) {
  Hook hook(api);
  if (!hook || !p) return real(p);
  hook.freeing(Space::kHost, addr(p));
  CUresult r = real(p);
  hook.freed(r, Kind::kHostPinned);
  return r;
}

CUresult on_mem_host_register(PFN_cuMemHostRegister_v6050 real, ApiId api, void *p, size_t bytes, unsigned int flags) {
  Hook hook(api);
  if (!hook) return real(p, bytes, flags);
  CUresult r = real(p, bytes, flags);
  hook.alloc(r, Op::kAlloc, Kind::kHostRegistered, Space::kHost, addr(p), bytes, 0, flags, kHostDevice);
  return r;
}

CUresult on_mem_host_unregister(PFN_cuMemHostUnregister_v4000 real, ApiId api, void *p) {
  Hook hook(api);
  if (!hook) return real(p);
  hook.freeing(Space::kHost, addr(p));
  CUresult r = real(p);
  hook.freed(r, Kind::kHostRegistered);
  return r;
}

CUresult on_array_create(PFN_cuArrayCreate_v3020 real, ApiId api, CUarray *array, const CUDA_ARRAY_DESCRIPTOR *desc) {
  Hook hook(api);
  if (!hook) return real(array, desc);
  CUresult r = real(array, desc);
  uint64_t bytes = desc ? array_bytes(desc->Width, desc->Height, 1, desc->NumChannels, desc->Format) : 0;
  hook.alloc(r, Op::kAlloc, Kind::kArray, Space::kArray, r == CUDA_SUCCESS && array ? handle(*array) : 0, bytes);
  return r;
}

CUresult on_array_3d_create(PFN_cuArray3DCreate_v3020 real, ApiId api, CUarray *array,
                            const CUDA_ARRAY3D_DESCRIPTOR *desc) {
  Hook hook(api);
  if (!hook) return real(array, desc);
  CUresult r = real(array, desc);
  uint64_t bytes = desc ? array_bytes(desc->Width, desc->Height, desc->Depth, desc->NumChannels, desc->Format) : 0;
  hook.alloc(r, Op::kAlloc, Kind::kArray, Space::kArray, r == CUDA_SUCCESS && array ? handle(*array) : 0, bytes);
  return r;
}

CUresult on_array_destroy(PFN_cuArrayDestroy_v2000 real, ApiId api, CUarray array) {
  Hook hook(api);
  if (!hook) return real(array);
  hook.freeing(Space::kArray, handle(array));
  CUresult r = real(array);
  hook.freed(r, Kind::kArray);
  return r;
}

CUresult on_mipmapped_array_create(PFN_cuMipmappedArrayCreate_v5000 real, ApiId api, CUmipmappedArray *array,
                                   const CUDA_ARRAY3D_DESCRIPTOR *desc, unsigned int levels) {
  Hook hook(api);
  if (!hook) return real(array, desc, levels);
  CUresult r = real(array, desc, levels);
  // Estimate: the base level plus the geometric series of the smaller levels (at most 4/3 of it).
  uint64_t base = desc ? array_bytes(desc->Width, desc->Height, desc->Depth, desc->NumChannels, desc->Format) : 0;
  uint64_t bytes = levels > 1 ? base + base / 3 : base;
  hook.alloc(r, Op::kAlloc, Kind::kMipmappedArray, Space::kArray, r == CUDA_SUCCESS && array ? handle(*array) : 0,
             bytes, 0, levels);
  return r;
}

CUresult on_mipmapped_array_destroy(PFN_cuMipmappedArrayDestroy_v5000 real, ApiId api, CUmipmappedArray array) {
  Hook hook(api);
  if (!hook) return real(array);
  hook.freeing(Space::kArray, handle(array));
  CUresult r = real(array);
  hook.freed(r, Kind::kMipmappedArray);
  return r;
}

CUresult on_mem_pool_create(PFN_cuMemPoolCreate_v11020 real, ApiId api, CUmemoryPool *pool,
                            const CUmemPoolProps *props) {
  Hook hook(api);
  if (!hook) return real(pool, props);
  CUresult r = real(pool, props);
  int16_t device = props && props->location.type == CU_MEM_LOCATION_TYPE_DEVICE
                       ? static_cast<int16_t>(props->location.id)
                       : core::CallFacts::kQueryDevice;
  hook.alloc(r, Op::kPoolCreate, Kind::kAsync, Space::kPool, r == CUDA_SUCCESS && pool ? handle(*pool) : 0, 0, 0, 0,
             device);
  return r;
}

CUresult on_mem_pool_destroy(PFN_cuMemPoolDestroy_v11020 real, ApiId api, CUmemoryPool pool) {
  Hook hook(api);
  if (!hook) return real(pool);
  hook.freeing(Space::kPool, handle(pool));
  CUresult r = real(pool);
  hook.freed(r, Kind::kAsync, 0, 0, Op::kPoolDestroy);
  return r;
}

CUresult on_mem_pool_trim(PFN_cuMemPoolTrimTo_v11020 real, ApiId api, CUmemoryPool pool, size_t keep) {
  Hook hook(api);
  if (!hook) return real(pool, keep);
  CUresult r = real(pool, keep);
  hook.event(r, Op::kPoolTrim, Kind::kAsync, 0, keep, handle(pool));
  return r;
}

CUresult on_mem_pool_import_pointer(PFN_cuMemPoolImportPointer_v11020 real, ApiId api, CUdeviceptr *dptr,
                                    CUmemoryPool pool, CUmemPoolPtrExportData *data) {
  Hook hook(api);
  if (!hook) return real(dptr, pool, data);
  CUresult r = real(dptr, pool, data);
  hook.alloc(r, Op::kAlloc, Kind::kImported, Space::kDevicePtr, r == CUDA_SUCCESS && dptr ? *dptr : 0, 0, 0,
             handle(pool));
  return r;
}

CUresult on_ipc_open(PFN_cuIpcOpenMemHandle_v11000 real, ApiId api, CUdeviceptr *dptr, CUipcMemHandle h,
                     unsigned int flags) {
  Hook hook(api);
  if (!hook) return real(dptr, h, flags);
  CUresult r = real(dptr, h, flags);
  hook.alloc(r, Op::kAlloc, Kind::kImported, Space::kDevicePtr, r == CUDA_SUCCESS && dptr ? *dptr : 0, 0);
  return r;
}

CUresult on_ipc_close(PFN_cuIpcCloseMemHandle_v4010 real, ApiId api, CUdeviceptr dptr) {
  Hook hook(api);
  if (!hook) return real(dptr);
  hook.freeing(Space::kDevicePtr, dptr);
  CUresult r = real(dptr);
  hook.freed(r, Kind::kImported);
  return r;
}

CUresult on_ctx_destroy(PFN_cuCtxDestroy_v4000 real, ApiId api, CUcontext ctx) {
  Hook hook(api);
  if (!hook) return real(ctx);
  CUresult r = real(ctx);
  // The device is that of the calling thread's context (the usual case: destroying the current
  // one); cuCtxGetDevice on a destroyed context would fail.
  hook.event(r, Op::kContextReset, Kind::kDevice, handle(ctx), 0);
  return r;
}

CUresult on_primary_ctx_reset(PFN_cuDevicePrimaryCtxReset_v11000 real, ApiId api, CUdevice dev) {
  Hook hook(api);
  if (!hook) return real(dev);
  CUresult r = real(dev);
  hook.event(r, Op::kContextReset, Kind::kDevice, 0, 0, 0, static_cast<int16_t>(dev));
  return r;
}

}  // namespace gpuleak::shim
