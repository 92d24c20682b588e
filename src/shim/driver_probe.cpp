#include "shim/driver_probe.h"

#include <dlfcn.h>

#include <atomic>
#include <cstring>

#include "shim/real_symbols.h"

namespace gpuleak::shim {

namespace {

struct Driver {
  PFN_cuCtxGetDevice_v2000 ctx_get_device = nullptr;
  PFN_cuStreamIsCapturing_v10000 is_capturing = nullptr;
  PFN_cuStreamIsCapturing_v10000_ptsz is_capturing_ptsz = nullptr;
  PFN_cuMemGetInfo_v3020 mem_get_info = nullptr;
  PFN_cuDeviceGetCount_v2000 device_get_count = nullptr;
  PFN_cuDeviceGet_v2000 device_get = nullptr;
  PFN_cuDeviceGetName_v2000 device_get_name = nullptr;
  PFN_cuDeviceTotalMem_v3020 device_total_mem = nullptr;
  PFN_cuDriverGetVersion_v2020 driver_get_version = nullptr;
  PFN_cuCtxSetCurrent_v4000 ctx_set_current = nullptr;
  PFN_cuDevicePrimaryCtxRetain_v7000 primary_ctx_retain = nullptr;
  CUresult (*device_get_pci_bus_id)(char *, int, CUdevice) = nullptr;
};

// Resolved once libcuda.so.1 is in the process (it is, by the time any hook runs).
const Driver *driver() {
  static std::atomic<const Driver *> cached{nullptr};
  const Driver *d = cached.load(std::memory_order_acquire);
  if (d) return d;
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!lib) return nullptr;
  auto *fresh = new Driver;
  auto sym = [lib](const char *name) { return real_dlsym(lib, name); };
  fresh->ctx_get_device = reinterpret_cast<PFN_cuCtxGetDevice_v2000>(sym("cuCtxGetDevice"));
  fresh->is_capturing = reinterpret_cast<PFN_cuStreamIsCapturing_v10000>(sym("cuStreamIsCapturing"));
  fresh->is_capturing_ptsz = reinterpret_cast<PFN_cuStreamIsCapturing_v10000_ptsz>(sym("cuStreamIsCapturing_ptsz"));
  fresh->mem_get_info = reinterpret_cast<PFN_cuMemGetInfo_v3020>(sym("cuMemGetInfo_v2"));
  fresh->device_get_count = reinterpret_cast<PFN_cuDeviceGetCount_v2000>(sym("cuDeviceGetCount"));
  fresh->device_get = reinterpret_cast<PFN_cuDeviceGet_v2000>(sym("cuDeviceGet"));
  fresh->device_get_name = reinterpret_cast<PFN_cuDeviceGetName_v2000>(sym("cuDeviceGetName"));
  fresh->device_total_mem = reinterpret_cast<PFN_cuDeviceTotalMem_v3020>(sym("cuDeviceTotalMem_v2"));
  fresh->driver_get_version = reinterpret_cast<PFN_cuDriverGetVersion_v2020>(sym("cuDriverGetVersion"));
  fresh->ctx_set_current = reinterpret_cast<PFN_cuCtxSetCurrent_v4000>(sym("cuCtxSetCurrent"));
  fresh->primary_ctx_retain = reinterpret_cast<PFN_cuDevicePrimaryCtxRetain_v7000>(sym("cuDevicePrimaryCtxRetain"));
  fresh->device_get_pci_bus_id = reinterpret_cast<CUresult (*)(char *, int, CUdevice)>(sym("cuDeviceGetPCIBusId"));
  const Driver *expected = nullptr;
  if (!cached.compare_exchange_strong(expected, fresh)) {
    delete fresh;
    return expected;
  }
  detail::g_ctx_get_device.store(fresh->ctx_get_device, std::memory_order_release);
  return fresh;
}

}  // namespace

namespace detail {
std::atomic<PFN_cuCtxGetDevice_v2000> g_ctx_get_device{nullptr};

int current_device_slow() {
  const Driver *d = driver();
  CUdevice dev = -1;
  if (!d || !d->ctx_get_device || d->ctx_get_device(&dev) != CUDA_SUCCESS) return -1;
  return dev;
}
}  // namespace detail

namespace {

bool mem_info(int device, uint64_t *free_bytes, uint64_t *total_bytes) {
  const Driver *d = driver();
  size_t f = 0, t = 0;
  (void)device;  // cuMemGetInfo answers for the calling thread's current context: the failing one
  if (!d || !d->mem_get_info || d->mem_get_info(&f, &t) != CUDA_SUCCESS) return false;
  *free_bytes = f;
  *total_bytes = t;
  return true;
}

int device_count() {
  const Driver *d = driver();
  int n = 0;
  if (!d || !d->device_get_count || d->device_get_count(&n) != CUDA_SUCCESS) return 0;
  return n;
}

bool device_info(int index, char *name, size_t name_size, uint64_t *total) {
  const Driver *d = driver();
  CUdevice dev;
  size_t bytes = 0;
  if (!d || !d->device_get || !d->device_get_name || !d->device_total_mem) return false;
  if (d->device_get(&dev, index) != CUDA_SUCCESS) return false;
  if (d->device_get_name(name, static_cast<int>(name_size), dev) != CUDA_SUCCESS) name[0] = '\0';
  if (d->device_total_mem(&bytes, dev) != CUDA_SUCCESS) return false;
  *total = bytes;
  return true;
}

// "0000:41:00.0": how NVML finds the same device whatever CUDA_VISIBLE_DEVICES renumbered.
bool pci_bus_id(int index, char *buf, size_t size) {
  const Driver *d = driver();
  CUdevice dev;
  if (!d || !d->device_get || !d->device_get_pci_bus_id || size < 16) return false;
  if (d->device_get(&dev, index) != CUDA_SUCCESS) return false;
  if (d->device_get_pci_bus_id(buf, static_cast<int>(size), dev) != CUDA_SUCCESS) return false;
  buf[size - 1] = '\0';
  return true;
}

int driver_version() {
  const Driver *d = driver();
  int v = 0;
  if (!d || !d->driver_get_version || d->driver_get_version(&v) != CUDA_SUCCESS) return 0;
  return v;
}

}  // namespace

bool detail::ask_driver_capturing(CUstream stream, bool ptsz) {
  const Driver *d = driver();
  if (!d) return false;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  auto fn = ptsz && d->is_capturing_ptsz ? d->is_capturing_ptsz : d->is_capturing;
  if (!fn || fn(stream, &status) != CUDA_SUCCESS) return false;
  return status == CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

core::DriverProbe driver_probe() {
  core::DriverProbe p;
  p.mem_info = mem_info;
  p.device_count = device_count;
  p.device_info = device_info;
  p.driver_version = driver_version;
  p.pci_bus_id = pci_bus_id;
  return p;
}

}  // namespace gpuleak::shim
