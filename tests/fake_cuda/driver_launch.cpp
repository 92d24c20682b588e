// Kernels, copies and memsets of the fake driver: there is no GPU, so a "kernel" does nothing and
// takes a few microseconds, a copy is memcpy, a memset is memset. Each is reported to the fake
// CUPTI (fake_profiler.h), when one is loaded, as the callback API's entry/exit and one activity
// record, like the real driver does for a profiler.
#include "driver_internal.h"  // first: it sets up cuda.h for the fake's definitions

#include <cupti_driver_cbid.h>
#include <time.h>

#include <atomic>
#include <cstring>
#include <string>

#include "fake_profiler.h"

struct CUfunc_st {
    std::string name;
};
struct CUmod_st {
    int unused;
};

namespace {

std::atomic<const FakeProfiler*> g_profiler{nullptr};

uint64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// CUPTI's stream ids are small integers; the fake derives one from the handle.
uint32_t stream_id(CUstream s) {
    if (!s || s == CU_STREAM_LEGACY) return 7;
    if (s == CU_STREAM_PER_THREAD) return 8;
    return 13 + static_cast<uint32_t>((reinterpret_cast<uintptr_t>(s) >> 4) % 1000);
}

// One profiled call: enter, the GPU work (`fill` completes the activity record), exit.
template <typename Fill>
void profiled(unsigned cbid, const char* api, CUstream stream, Fill fill) {
    const FakeProfiler* p = g_profiler.load();
    uint32_t corr = p ? p->api_enter(cbid, api) : 0;
    FakeActivity a;
    a.device = fake::current_device();
    a.context = 1 + static_cast<uint32_t>(a.device);
    a.stream = stream_id(stream);
    a.correlation = corr;
    a.start_ns = now_ns() + 2000;  // queued behind the launch, like real GPU work
    fill(&a);
    if (p) {
        p->activity(a);
        p->api_exit(cbid, api, corr);
    }
}

}  // namespace

extern "C" {

void cuFakeSetProfiler(const FakeProfiler* profiler) { g_profiler.store(profiler); }

CUresult CUDAAPI cuModuleLoadData(CUmodule* module, const void* image) {
    if (!module || !image) return CUDA_ERROR_INVALID_VALUE;
    *module = new CUmod_st{0};
    return CUDA_SUCCESS;
}

// The function's name is whatever the program asks for: the fake has no real module to look in.
CUresult CUDAAPI cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
    if (!hfunc || !hmod || !name) return CUDA_ERROR_INVALID_VALUE;
    *hfunc = new CUfunc_st{name};
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int, unsigned int, unsigned int, unsigned int,
                                unsigned int, unsigned int, unsigned int, CUstream hStream, void**, void**) {
    if (!f) return CUDA_ERROR_INVALID_HANDLE;
    profiled(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel", hStream, [&](FakeActivity* a) {
        a->kind = fake_cupti::kKernel;
        a->name = f->name.c_str();
        a->end_ns = a->start_ns + 5000;
    });
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t bytes) {
    if (!dst || !src) return CUDA_ERROR_INVALID_VALUE;
    profiled(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, "cuMemcpyHtoD_v2", nullptr, [&](FakeActivity* a) {
        std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
        a->kind = fake_cupti::kMemcpy;
        a->bytes = bytes;
        a->copy_kind = fake_cupti::kHtoD;
        a->end_ns = a->start_ns + 1000 + bytes / 16;
    });
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t bytes) {
    if (!dst || !src) return CUDA_ERROR_INVALID_VALUE;
    profiled(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2, "cuMemcpyDtoH_v2", nullptr, [&](FakeActivity* a) {
        std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
        a->kind = fake_cupti::kMemcpy;
        a->bytes = bytes;
        a->copy_kind = fake_cupti::kDtoH;
        a->end_ns = a->start_ns + 1000 + bytes / 16;
    });
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t n) {
    if (!dst) return CUDA_ERROR_INVALID_VALUE;
    profiled(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2, "cuMemsetD8_v2", nullptr, [&](FakeActivity* a) {
        std::memset(reinterpret_cast<void*>(dst), value, n);
        a->kind = fake_cupti::kMemset;
        a->bytes = n;
        a->end_ns = a->start_ns + 1000 + n / 32;
    });
    return CUDA_SUCCESS;
}

}  // extern "C"
