// Fake libnvidia-ml.so.1: the handful of NVML entry points gpuleak's shim asks at exit
// (src/core/nvml_usage.cpp), answering for the fake driver's devices (FAKE_CUDA_DEVICES, found by
// the bus ids the fake cuDeviceGetPCIBusId hands out). Found like the fake libcuda, through
// LD_LIBRARY_PATH. Controlled by the environment:
//   FAKE_NVML_PROCESS_BYTES  this process's usedGpuMemory on every device (default 300 MiB)
//   FAKE_NVML_FOLLOW_DRIVER  1: FAKE_NVML_PROCESS_BYTES is only the base (the context); added to it,
//                            the fake libcuda's charged bytes on that device and what its pools keep
//                            (FAKE_CUDA_POOL_KEEP), read at each call, as a real driver's usage moves
//   FAKE_NVML_FAIL           init: nvmlInit_v2 fails; memory: nvmlDeviceGetMemoryInfo fails;
//                            not_listed: the process list holds only other pids
// Every call is counted in FAKE_NVML_LOG (a file, appended) when set, so tests can see what ran.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

using Return = int;
constexpr Return kSuccess = 0, kUninitialized = 1, kInvalidArgument = 2, kNotFound = 6, kInsufficientSize = 7,
                 kUnknown = 999;

struct Memory {
  unsigned long long total, free, used;
};
struct ProcessInfo {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
struct Device {
  int index;
};
Device g_devices[16];
bool g_initialized = false;

bool failing(const char *what) {
  const char *f = std::getenv("FAKE_NVML_FAIL");
  return f && std::strcmp(f, what) == 0;
}
int device_count() {
  const char *d = std::getenv("FAKE_CUDA_DEVICES");
  int n = d ? std::atoi(d) : 1;
  return n < 0 ? 0 : n > 16 ? 16 : n;
}
// The fake libcuda's own count (driver_state.cpp), when the program has loaded it.
unsigned long long driver_bytes(int device) {
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!cuda) return 0;
  auto bytes = reinterpret_cast<size_t (*)(int)>(dlsym(cuda, "fake_cuda_process_bytes"));
  unsigned long long n = bytes ? bytes(device) : 0;
  dlclose(cuda);
  return n;
}
unsigned long long process_bytes(int device) {
  const char *b = std::getenv("FAKE_NVML_PROCESS_BYTES");
  const char *follow = std::getenv("FAKE_NVML_FOLLOW_DRIVER");
  unsigned long long base = b ? std::strtoull(b, nullptr, 10) : 300ull << 20;
  return follow && std::strcmp(follow, "1") == 0 ? base + driver_bytes(device) : base;
}
void log(const char *call) {
  const char *path = std::getenv("FAKE_NVML_LOG");
  if (!path) return;
  if (FILE *f = std::fopen(path, "a")) {
    std::fprintf(f, "%s\n", call);
    std::fclose(f);
  }
}

Return processes(void *device, unsigned int *count, ProcessInfo *infos) {
  if (!g_initialized) return kUninitialized;
  if (!device || !count) return kInvalidArgument;
  if (*count < 2) {
    *count = 2;
    return kInsufficientSize;
  }
  *count = 2;
  const int index = static_cast<Device *>(device)->index;
  infos[0] = ProcessInfo{static_cast<unsigned int>(getpid()) + (failing("not_listed") ? 100000u : 0u),
                         process_bytes(index), 0, 0};
  infos[1] = ProcessInfo{1, 123ull << 20, 0, 0};  // another process on the same device
  return kSuccess;
}

}  // namespace

extern "C" {

Return nvmlInit_v2() {
  log("nvmlInit_v2");
  if (failing("init")) return kUnknown;
  g_initialized = true;
  return kSuccess;
}

Return nvmlShutdown() {
  log("nvmlShutdown");
  if (!g_initialized) return kUninitialized;
  g_initialized = false;
  return kSuccess;
}

Return nvmlDeviceGetCount_v2(unsigned int *count) {
  if (!g_initialized) return kUninitialized;
  *count = static_cast<unsigned int>(device_count());
  return kSuccess;
}

Return nvmlDeviceGetHandleByIndex_v2(unsigned int index, void **device) {
  if (!g_initialized) return kUninitialized;
  if (static_cast<int>(index) >= device_count()) return kInvalidArgument;
  g_devices[index].index = static_cast<int>(index);
  *device = &g_devices[index];
  return kSuccess;
}

Return nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id, void **device) {
  log("nvmlDeviceGetHandleByPciBusId_v2");
  if (!g_initialized) return kUninitialized;
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  if (!bus_id || std::sscanf(bus_id, "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4) return kInvalidArgument;
  int index = static_cast<int>(bus) - 0x10;
  if (index < 0 || index >= device_count()) return kNotFound;
  g_devices[index].index = index;
  *device = &g_devices[index];
  return kSuccess;
}

Return nvmlDeviceGetComputeRunningProcesses_v2(void *device, unsigned int *count, ProcessInfo *infos) {
  log("nvmlDeviceGetComputeRunningProcesses_v2");
  return processes(device, count, infos);
}

Return nvmlDeviceGetComputeRunningProcesses_v3(void *device, unsigned int *count, ProcessInfo *infos) {
  log("nvmlDeviceGetComputeRunningProcesses_v3");
  return processes(device, count, infos);
}

Return nvmlDeviceGetMemoryInfo(void *device, Memory *memory) {
  log("nvmlDeviceGetMemoryInfo");
  if (!g_initialized) return kUninitialized;
  if (!device || !memory) return kInvalidArgument;
  if (failing("memory")) return kUnknown;
  memory->total = 1ull << 30;
  memory->used = process_bytes(static_cast<Device *>(device)->index) + (123ull << 20);
  memory->free = memory->total > memory->used ? memory->total - memory->used : 0;
  return kSuccess;
}

}  // extern "C"
