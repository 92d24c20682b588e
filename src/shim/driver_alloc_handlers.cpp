// Device memory: plain, pitched, managed and stream-ordered allocations and their frees.
#include "shim/driver_handlers.h"
#include "shim/driver_probe.h"
#include "shim/hook.h"

namespace gpuleak::shim {

namespace {
bool ok(CUresult r, const void *out) { return r == CUDA_SUCCESS && out; }
bool is_ptsz(ApiId api) {
  return api == Api::cuMemAllocAsync_ptsz || api == Api::cuMemAllocFromPoolAsync_ptsz ||
         api == Api::cuMemFreeAsync_ptsz;
}
// Stream-ordered calls made while the stream captures a graph reserve graph memory; they are not
// live memory of the program (DESIGN.md).
inline uint16_t capture_flags(CUstream stream, ApiId api) {
  if (__builtin_expect(!capture_may_be_open(), 1)) return 0;  // no driver call while no stream captures
  return detail::ask_driver_capturing(stream, is_ptsz(api)) ? format::kFlagGraphReservation : 0;
}
}  // namespace

CUresult on_mem_alloc(PFN_cuMemAlloc_v3020 real, ApiId api, CUdeviceptr *dptr, size_t bytes) {
  Hook hook(api);
  if (!hook) return real(dptr, bytes);
  CUresult r = real(dptr, bytes);
  hook.alloc(r, Op::kAlloc, Kind::kDevice, Space::kDevicePtr, ok(r, dptr) ? *dptr : 0, bytes);
  return r;
}

CUresult on_mem_alloc_pitch(PFN_cuMemAllocPitch_v3020 real, ApiId api, CUdeviceptr *dptr, size_t *pitch, size_t width,
                            size_t height, unsigned int element_size) {
  Hook hook(api);
  if (!hook) return real(dptr, pitch, width, height, element_size);
  CUresult r = real(dptr, pitch, width, height, element_size);
  size_t p = ok(r, pitch) ? *pitch : width;
  hook.alloc(r, Op::kAlloc, Kind::kPitched, Space::kDevicePtr, ok(r, dptr) ? *dptr : 0, p * height, 0, p);
  return r;
}

CUresult on_mem_alloc_managed(PFN_cuMemAllocManaged_v6000 real, ApiId api, CUdeviceptr *dptr, size_t bytes,
                              unsigned int flags) {
  Hook hook(api);
  if (!hook) return real(dptr, bytes, flags);
  CUresult r = real(dptr, bytes, flags);
  hook.alloc(r, Op::kAlloc, Kind::kManaged, Space::kDevicePtr, ok(r, dptr) ? *dptr : 0, bytes, 0, flags);
  return r;
}

CUresult on_mem_free(PFN_cuMemFree_v3020 real, ApiId api, CUdeviceptr dptr) {
  Hook hook(api);
  if (!hook || dptr == 0) return real(dptr);  // cudaFree(0) is the context-init idiom, not a free
  hook.freeing(Space::kDevicePtr, dptr);
  CUresult r = real(dptr);
  hook.freed(r, Kind::kDevice);
  return r;
}

CUresult on_mem_alloc_async(PFN_cuMemAllocAsync_v11020 real, ApiId api, CUdeviceptr *dptr, size_t bytes,
                            CUstream stream) {
  Hook hook(api, core::Timing::kEnd);
  if (!hook) return real(dptr, bytes, stream);
  CUresult r = real(dptr, bytes, stream);
  hook.alloc(r, Op::kAlloc, Kind::kAsync, Space::kDevicePtr, ok(r, dptr) ? *dptr : 0, bytes, handle(stream), 0,
             core::CallFacts::kQueryDevice, capture_flags(stream, api));
  return r;
}

CUresult on_mem_alloc_from_pool(PFN_cuMemAllocFromPoolAsync_v11020 real, ApiId api, CUdeviceptr *dptr, size_t bytes,
                                CUmemoryPool pool, CUstream stream) {
  Hook hook(api, core::Timing::kEnd);
  if (!hook) return real(dptr, bytes, pool, stream);
  CUresult r = real(dptr, bytes, pool, stream);
  hook.alloc(r, Op::kAlloc, Kind::kAsync, Space::kDevicePtr, ok(r, dptr) ? *dptr : 0, bytes, handle(stream),
             handle(pool), core::CallFacts::kQueryDevice, capture_flags(stream, api));
  return r;
}

CUresult on_mem_free_async(PFN_cuMemFreeAsync_v11020 real, ApiId api, CUdeviceptr dptr, CUstream stream) {
  Hook hook(api, core::Timing::kStart);
  if (!hook || dptr == 0) return real(dptr, stream);
  hook.freeing(Space::kDevicePtr, dptr);
  // Only a pointer never counted can be a graph reservation: the drain clears the flag when the
  // live table knows it (drain_settle.cpp). Asks the driver only while some stream captures.
  uint16_t flags = capture_flags(stream, api);
  CUresult r = real(dptr, stream);
  hook.freed(r, Kind::kAsync, handle(stream), flags);
  return r;
}

}  // namespace gpuleak::shim
