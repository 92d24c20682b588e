// Virtual memory management (PyTorch's expandable segments): physical memory is live from
// cuMemCreate to cuMemRelease; reservations and mappings are recorded so that the analysis can
// attribute a handle to the site that mapped it.
#include "shim/driver_handlers.h"
#include "shim/hook.h"

namespace gpuleak::shim {

CUresult on_mem_create(PFN_cuMemCreate_v10020 real, ApiId api, CUmemGenericAllocationHandle *h, size_t size,
                       const CUmemAllocationProp *prop, unsigned long long flags) {
  Hook hook(api);
  if (!hook) return real(h, size, prop, flags);
  CUresult r = real(h, size, prop, flags);
  int16_t device = prop && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? static_cast<int16_t>(prop->location.id)
                                                                              : core::CallFacts::kQueryDevice;
  Kind kind = prop && prop->type == CU_MEM_ALLOCATION_TYPE_MANAGED ? Kind::kManaged : Kind::kVmm;
  hook.alloc(r, Op::kAlloc, kind, Space::kVmm, r == CUDA_SUCCESS && h ? *h : 0, size, 0, 0, device);
  return r;
}

CUresult on_mem_release(PFN_cuMemRelease_v10020 real, ApiId api, CUmemGenericAllocationHandle h) {
  Hook hook(api);
  if (!hook) return real(h);
  hook.freeing(Space::kVmm, h);
  CUresult r = real(h);
  hook.freed(r, Kind::kVmm);
  return r;
}

CUresult on_mem_map(PFN_cuMemMap_v10020 real, ApiId api, CUdeviceptr ptr, size_t size, size_t offset,
                    CUmemGenericAllocationHandle h, unsigned long long flags) {
  Hook hook(api);
  if (!hook) return real(ptr, size, offset, h, flags);
  CUresult r = real(ptr, size, offset, h, flags);
  hook.alloc(r, Op::kMap, Kind::kVmm, Space::kDevicePtr, ptr, size, 0, h);
  return r;
}

CUresult on_mem_unmap(PFN_cuMemUnmap_v10020 real, ApiId api, CUdeviceptr ptr, size_t size) {
  Hook hook(api);
  if (!hook) return real(ptr, size);
  CUresult r = real(ptr, size);
  hook.event(r, Op::kUnmap, Kind::kVmm, ptr, size);
  return r;
}

CUresult on_mem_address_reserve(PFN_cuMemAddressReserve_v10020 real, ApiId api, CUdeviceptr *ptr, size_t size,
                                size_t alignment, CUdeviceptr addr, unsigned long long flags) {
  Hook hook(api);
  if (!hook) return real(ptr, size, alignment, addr, flags);
  CUresult r = real(ptr, size, alignment, addr, flags);
  hook.alloc(r, Op::kReserve, Kind::kVirtual, Space::kVirtual, r == CUDA_SUCCESS && ptr ? *ptr : 0, size);
  return r;
}

CUresult on_mem_address_free(PFN_cuMemAddressFree_v10020 real, ApiId api, CUdeviceptr ptr, size_t size) {
  Hook hook(api);
  if (!hook) return real(ptr, size);
  hook.freeing(Space::kVirtual, ptr);
  CUresult r = real(ptr, size);
  hook.freed(r, Kind::kVirtual, 0, 0, Op::kReleaseVa);
  return r;
}

CUresult on_mem_import_shareable(PFN_cuMemImportFromShareableHandle_v10020 real, ApiId api,
                                 CUmemGenericAllocationHandle *h, void *os_handle, CUmemAllocationHandleType type) {
  Hook hook(api);
  if (!hook) return real(h, os_handle, type);
  CUresult r = real(h, os_handle, type);
  // Another process's memory: tagged, not owned (DESIGN.md "Accounting").
  hook.alloc(r, Op::kAlloc, Kind::kImported, Space::kVmm, r == CUDA_SUCCESS && h ? *h : 0, 0);
  return r;
}

}  // namespace gpuleak::shim
