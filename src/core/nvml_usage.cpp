// NvmlSession and nvml_read (nvml_usage.h): the few NVML entry points gpuleak needs, declared here
// with their stable C ABI (nvml.h is not needed to build): nvmlInit_v2, nvmlShutdown,
// nvmlDeviceGetHandleByPciBusId_v2, nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetCount_v2,
// nvmlDeviceGetComputeRunningProcesses_v3 (else _v2: same nvmlProcessInfo_t layout),
// nvmlDeviceGetMemoryInfo.
#include "core/nvml_usage.h"

#include <dlfcn.h>

#include "log/log.h"

namespace gpuleak::core {

namespace {

using Return = int;  // nvmlReturn_t
constexpr Return kSuccess = 0;
constexpr Return kInsufficientSize = 7;
constexpr unsigned long long kNotAvailable = ~0ull;  // NVML_VALUE_NOT_AVAILABLE
using Device = void *;                               // nvmlDevice_t

struct Memory {  // nvmlMemory_t
  unsigned long long total, free, used;
};
struct ProcessInfo {  // nvmlProcessInfo_t (v2 layout, taken by _v2 and _v3)
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

}  // namespace

struct NvmlSession::Api {
  Return (*init)() = nullptr;
  Return (*shutdown)() = nullptr;
  Return (*by_bus_id)(const char *, Device *) = nullptr;
  Return (*by_index)(unsigned int, Device *) = nullptr;
  Return (*count)(unsigned int *) = nullptr;
  Return (*processes)(Device, unsigned int *, ProcessInfo *) = nullptr;
  Return (*memory)(Device, Memory *) = nullptr;
};

namespace {

using Api = NvmlSession::Api;

template <typename Fn>
void bind(void *lib, const char *name, Fn *out) {
  *out = reinterpret_cast<Fn>(dlsym(lib, name));
}

bool find_device(const Api &api, const NvmlQuery &q, int cuda_device_count, Device *out) {
  if (q.pci_bus_id && *q.pci_bus_id) return api.by_bus_id && api.by_bus_id(q.pci_bus_id, out) == kSuccess;
  // No bus id: only an unambiguous single device can be matched.
  unsigned int n = 0;
  if (cuda_device_count != 1 || q.device != 0 || !api.count || !api.by_index) return false;
  return api.count(&n) == kSuccess && n == 1 && api.by_index(0, out) == kSuccess;
}

// This pid's used bytes on the device; false when NVML failed. *known is false when the pid is not
// listed or NVML has no value for it.
bool process_usage(const Api &api, Device device, pid_t pid, bool *known, uint64_t *bytes) {
  std::vector<ProcessInfo> infos(64);
  unsigned int n = static_cast<unsigned int>(infos.size());
  Return r = api.processes(device, &n, infos.data());
  for (int tries = 0; r == kInsufficientSize && tries < 3 && n <= 65536; ++tries) {
    infos.resize(n + 16);
    n = static_cast<unsigned int>(infos.size());
    r = api.processes(device, &n, infos.data());
  }
  if (r != kSuccess || n > infos.size()) return false;
  *known = false;
  *bytes = 0;
  for (unsigned int i = 0; i < n; ++i) {
    if (infos[i].pid != static_cast<unsigned int>(pid) || infos[i].usedGpuMemory == kNotAvailable) continue;
    *known = true;
    *bytes += infos[i].usedGpuMemory;
  }
  return true;
}

}  // namespace

bool NvmlSession::open() {
  if (lib_) return true;
  void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    GPULEAK_LOG_DEBUG("NVML: libnvidia-ml.so.1 not loaded (%s); no driver-side usage", dlerror());
    return false;
  }
  auto *api = new Api;
  bind(lib, "nvmlInit_v2", &api->init);
  bind(lib, "nvmlShutdown", &api->shutdown);
  bind(lib, "nvmlDeviceGetHandleByPciBusId_v2", &api->by_bus_id);
  bind(lib, "nvmlDeviceGetHandleByIndex_v2", &api->by_index);
  bind(lib, "nvmlDeviceGetCount_v2", &api->count);
  bind(lib, "nvmlDeviceGetComputeRunningProcesses_v3", &api->processes);
  if (!api->processes) bind(lib, "nvmlDeviceGetComputeRunningProcesses_v2", &api->processes);
  bind(lib, "nvmlDeviceGetMemoryInfo", &api->memory);
  if (!api->init || !api->shutdown || !api->processes || !api->memory || api->init() != kSuccess) {
    GPULEAK_LOG_DEBUG("NVML: %s; no driver-side usage", api->init && api->shutdown && api->processes && api->memory
                                                            ? "nvmlInit_v2 failed"
                                                            : "entry points missing");
    delete api;
    dlclose(lib);
    return false;
  }
  lib_ = lib;
  api_ = api;
  return true;
}

void NvmlSession::close() {
  if (!lib_) return;
  api_->shutdown();
  dlclose(lib_);
  delete api_;
  lib_ = nullptr;
  api_ = nullptr;
}

std::vector<NvmlAnswer> NvmlSession::read(pid_t pid, const std::vector<NvmlQuery> &devices,
                                          int cuda_device_count) const {
  std::vector<NvmlAnswer> answers;
  if (!lib_) return answers;
  for (const NvmlQuery &q : devices) {
    Device device = nullptr;
    NvmlAnswer a;
    a.device = q.device;
    Memory mem{};
    if (!find_device(*api_, q, cuda_device_count, &device)) continue;
    if (api_->memory(device, &mem) != kSuccess) continue;
    if (!process_usage(*api_, device, pid, &a.process_known, &a.process_used_bytes)) continue;
    a.device_used_bytes = mem.used;
    a.device_total_bytes = mem.total;
    GPULEAK_LOG_DEBUG("NVML sample: device %d, this process %s%llu bytes, device %llu of %llu bytes used", q.device,
                      a.process_known ? "" : "(not listed) ", static_cast<unsigned long long>(a.process_used_bytes),
                      static_cast<unsigned long long>(mem.used), static_cast<unsigned long long>(mem.total));
    answers.push_back(a);
  }
  return answers;
}

std::vector<NvmlAnswer> nvml_read(pid_t pid, const std::vector<NvmlQuery> &devices, int cuda_device_count) {
  if (devices.empty()) return {};
  NvmlSession session;
  if (!session.open()) return {};
  return session.read(pid, devices, cuda_device_count);
}

}  // namespace gpuleak::core
