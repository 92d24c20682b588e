// NVML's per-process view of GPU memory, for the report's reconciliation line (DESIGN.md
// "Accounting": what nvidia-smi shows versus what gpuleak tracked). libnvidia-ml.so.1 is loaded
// with dlopen, never linked: a machine without it loses only this line.
//
// Called at the end of a capture from recorder_shutdown (outside every hook, on the exiting
// thread), and every GPULEAK_NVML_INTERVAL_MS by the writer thread through an NvmlSession kept open
// for the whole capture; never in a hook nor at an out-of-memory record: nvmlInit can take a second
// without persistence mode, and dlopen inside a hook may deadlock against a program that is itself
// inside the loader.
// Any NVML failure (no library, init error, a device NVML cannot find) means no answer for that
// device, never an error for the program.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <vector>

namespace gpuleak::core {

struct NvmlQuery {
  int device = 0;          // CUDA ordinal (for the record)
  const char *pci_bus_id;  // cuDeviceGetPCIBusId's answer ("0000:41:00.0"); "" when unknown
};

struct NvmlAnswer {
  int device = 0;
  bool process_known = false;       // this pid was listed with a value
  uint64_t process_used_bytes = 0;  // summed over this pid's entries (MIG may list several)
  uint64_t device_used_bytes = 0;
  uint64_t device_total_bytes = 0;
};

// libnvidia-ml.so.1 loaded and initialized once, read many times (the writer thread's samples).
// Not thread-safe: one owner. The destructor shuts NVML down and unloads it.
class NvmlSession {
 public:
  NvmlSession() = default;
  ~NvmlSession() { close(); }
  NvmlSession(const NvmlSession &) = delete;
  NvmlSession &operator=(const NvmlSession &) = delete;

  // Loads and initializes NVML; false (and nothing held) when either fails. May take a second.
  bool open();
  void close();
  bool is_open() const { return lib_ != nullptr; }
  // One answer per device NVML could read; none when the session is not open.
  std::vector<NvmlAnswer> read(pid_t pid, const std::vector<NvmlQuery> &devices, int cuda_device_count) const;

  struct Api;  // the entry points, defined in nvml_usage.cpp

 private:
  void *lib_ = nullptr;
  Api *api_ = nullptr;
};

// A session opened, read once and closed: one answer per device NVML could read.
// `cuda_device_count`: how many CUDA devices the process sees; when a bus id is unknown and both
// CUDA and NVML see exactly one device, that one is used (NvmlSession::read likewise).
std::vector<NvmlAnswer> nvml_read(pid_t pid, const std::vector<NvmlQuery> &devices, int cuda_device_count);

}  // namespace gpuleak::core
