// How the fake libcupti.so.13 (cupti_fake.cpp) sees the fake driver's GPU work: the driver calls
// these hooks, which the fake CUPTI installs with cuFakeSetProfiler() when it is loaded. Test
// fixture only; no real CUDA library has this entry point.
#pragma once

#include <cstdint>

// CUpti_ActivityKind / CUpti_ActivityMemcpyKind values, spelled out because the driver's sources
// cannot include cupti.h next to cuda.h's internal declarations (cupti_fake.cpp checks them).
namespace fake_cupti {
constexpr int kKernel = 10;  // CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
constexpr int kMemcpy = 1;   // CUPTI_ACTIVITY_KIND_MEMCPY
constexpr int kMemset = 2;   // CUPTI_ACTIVITY_KIND_MEMSET
constexpr uint8_t kHtoD = 1;  // CUPTI_ACTIVITY_MEMCPY_KIND_HTOD
constexpr uint8_t kDtoH = 2;  // CUPTI_ACTIVITY_MEMCPY_KIND_DTOH
}  // namespace fake_cupti

struct FakeActivity {
    int kind = 0;            // fake_cupti::kKernel, kMemcpy or kMemset
    uint64_t start_ns = 0;   // CLOCK_MONOTONIC (the fake CUPTI moves it onto its own clock)
    uint64_t end_ns = 0;
    int device = 0;
    uint32_t context = 0;
    uint32_t stream = 0;
    uint32_t correlation = 0;
    const char* name = nullptr;  // kernels
    uint64_t bytes = 0;          // memcpy/memset
    uint8_t copy_kind = 0;       // CUpti_ActivityMemcpyKind
};

struct FakeProfiler {
    // A driver API call begins: returns its correlation id (0 = none) after the callback API ran.
    uint32_t (*api_enter)(unsigned cbid, const char* name);
    void (*api_exit)(unsigned cbid, const char* name, uint32_t correlation);
    void (*activity)(const FakeActivity& a);
};

extern "C" void cuFakeSetProfiler(const FakeProfiler* profiler);
