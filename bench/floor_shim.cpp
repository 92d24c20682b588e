// The floor under gpuleak's stack-less hook (issue #15, goal 3): the least an interposer of the
// stream-ordered pair can do and still record it. It takes the same path into the program as
// libgpuleak (the dlsym trampoline, then cuGetProcAddress), wraps cuMemAllocAsync and
// cuMemFreeAsync, and per call does only this: call the real function through the pointer the
// driver handed out, read the TSC once, and append one 32-byte record to the calling thread's
// ring. Nothing drains the ring (it wraps), nothing is written; no re-entry guard, no live table,
// no device, no stack.
//
// bench/pair_cost.py times alloc_pair_bench plain, under this shim and under libgpuleak in the
// same rounds, and compares what each adds. Built by CMake (bench/CMakeLists.txt) from this file
// and the shim's own trampoline, so it cannot drift from the tree the way a patch would.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <x86intrin.h>

#include <cstdint>
#include <cstring>

namespace {

using DlsymFn = void *(*)(void *, const char *);

struct Record {  // 32 bytes: what the floor keeps of one call
  uint64_t ts;
  uint64_t address;
  uint64_t size;
  uint64_t api;
};
static_assert(sizeof(Record) == 32);

constexpr uint32_t kRing = 2048;  // records per thread (64 KiB), overwritten when full
thread_local __attribute__((tls_model("initial-exec"))) Record t_ring[kRing];
thread_local __attribute__((tls_model("initial-exec"))) uint32_t t_next = 0;

inline void record(uint64_t api, uint64_t address, uint64_t size) {
  Record &r = t_ring[t_next++ & (kRing - 1)];
  r = Record{__rdtsc(), address, size, api};
}

// One real pointer per (entry point, per-thread default stream or not), as cuGetProcAddress gives.
PFN_cuGetProcAddress_v12000 g_real_gpa = nullptr;
PFN_cuMemAllocAsync_v11020 g_alloc[2] = {};
PFN_cuMemFreeAsync_v11020 g_free[2] = {};

template <int I>
CUresult alloc_async(CUdeviceptr *dptr, size_t bytes, CUstream stream) {
  CUresult r = g_alloc[I](dptr, bytes, stream);
  record(1, r == CUDA_SUCCESS ? *dptr : 0, bytes);
  return r;
}

template <int I>
CUresult free_async(CUdeviceptr dptr, CUstream stream) {
  CUresult r = g_free[I](dptr, stream);
  record(2, dptr, 0);
  return r;
}

CUresult get_proc_address(const char *symbol, void **pfn, int version, cuuint64_t flags,
                          CUdriverProcAddressQueryResult *status) {
  CUresult r = g_real_gpa(symbol, pfn, version, flags, status);
  if (r != CUDA_SUCCESS || !symbol || !pfn || !*pfn) return r;
  int pt = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) ? 1 : 0;
  if (std::strcmp(symbol, "cuMemAllocAsync") == 0) {
    g_alloc[pt] = reinterpret_cast<PFN_cuMemAllocAsync_v11020>(*pfn);
    *pfn = reinterpret_cast<void *>(pt ? &alloc_async<1> : &alloc_async<0>);
  } else if (std::strcmp(symbol, "cuMemFreeAsync") == 0) {
    g_free[pt] = reinterpret_cast<PFN_cuMemFreeAsync_v11020>(*pfn);
    *pfn = reinterpret_cast<void *>(pt ? &free_async<1> : &free_async<0>);
  }
  return r;
}

}  // namespace

// The names the trampoline (src/shim/dlsym_trampoline.S) calls and reads.
extern "C" {
__attribute__((visibility("hidden"))) DlsymFn gpuleak_real_dlsym_ptr = nullptr;

__attribute__((visibility("hidden"))) DlsymFn gpuleak_resolve_real_dlsym() {
  if (gpuleak_real_dlsym_ptr) return gpuleak_real_dlsym_ptr;
  void *fn = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (!fn) fn = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  __atomic_store_n(&gpuleak_real_dlsym_ptr, reinterpret_cast<DlsymFn>(fn), __ATOMIC_RELEASE);
  return gpuleak_real_dlsym_ptr;
}

__attribute__((visibility("hidden"))) void *gpuleak_dlsym_dispatch(void *handle, const char *name) {
  DlsymFn real = gpuleak_resolve_real_dlsym();
  void *fn = real ? real(handle, name) : nullptr;
  if (!fn || !name || std::strcmp(name, "cuGetProcAddress_v2") != 0) return fn;
  g_real_gpa = reinterpret_cast<PFN_cuGetProcAddress_v12000>(fn);
  return reinterpret_cast<void *>(&get_proc_address);
}
}
