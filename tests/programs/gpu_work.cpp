// gpu_work [N=6] [--profile K] [--no-leak]: N iterations (gpuleak_iteration_begin/end) on the driver API, each:
//   cuMemAlloc 1 MiB, kept (a leak at keep_buffer); cuMemcpyHtoD 4 KiB; two kernel launches (one
//   named with quotes, control bytes, invalid UTF-8 and "</script>": kernel names are untrusted
//   text); cuMemsetD8 64 KiB; cuMemcpyDtoH 4 KiB.
// With --profile K the program subscribes to CUPTI itself after K iterations, like torch.profiler
// does, and prints "profiler callbacks: C" at the end (C > 0 when it got the slot).
// With --no-leak each buffer is freed at the end of its iteration (a rank that stays flat).
// Prints "EXPECT kernels=2N copies=2N memsets=N".
#include <cuda.h>
#include <cupti.h>
#include <gpuleak/gpuleak.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <vector>

#include "prog_common.h"

namespace {

std::atomic<int> g_callbacks{0};

void CUPTIAPI count_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) { ++g_callbacks; }

extern "C" __attribute__((noinline)) CUdeviceptr keep_buffer(size_t bytes) {
    CUdeviceptr p = 0;
    CHECK_CU(cuMemAlloc(&p, bytes));
    asm volatile("" ::: "memory");
    return p;
}

}  // namespace

int main(int argc, char** argv) {
    const long n = arg_or(argc, argv, 1, 6);
    long profile_at = -1;
    bool leak = true;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--profile") == 0 && i + 1 < argc) profile_at = std::strtol(argv[i + 1], nullptr, 10);
        if (std::strcmp(argv[i], "--no-leak") == 0) leak = false;
    }
    CHECK_CU(cuInit(0));
    CUdevice dev;
    CHECK_CU(cuDeviceGet(&dev, 0));
    CUcontext ctx;
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK_CU(cuCtxSetCurrent(ctx));
    CUmodule mod;
    CHECK_CU(cuModuleLoadData(&mod, "fake module"));
    CUfunction scale, hostile;
    CHECK_CU(cuModuleGetFunction(&scale, mod, "void scale<float>(float*, int)"));
    CHECK_CU(cuModuleGetFunction(&hostile, mod, "evil\"kernel\\\x01\x1f\xff\xfe</script>"));

    CUpti_SubscriberHandle subscriber = nullptr;
    std::vector<CUdeviceptr> kept;
    char host[4096] = {1};
    for (long i = 0; i < n; ++i) {
        if (i == profile_at) {
            if (cuptiSubscribe(&subscriber, count_callback, nullptr) == CUPTI_SUCCESS)
                cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
        }
        gpuleak_iteration_begin("train");
        CUdeviceptr buf = keep_buffer(1u << 20);
        kept.push_back(buf);
        CHECK_CU(cuMemcpyHtoD(buf, host, sizeof host));
        void* params[] = {&buf};
        CHECK_CU(cuLaunchKernel(scale, 1, 1, 1, 128, 1, 1, 0, nullptr, params, nullptr));
        CHECK_CU(cuLaunchKernel(hostile, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr));
        CHECK_CU(cuMemsetD8(buf, 0, 64u << 10));
        CHECK_CU(cuMemcpyDtoH(host, buf, sizeof host));
        if (!leak) {
            CHECK_CU(cuMemFree(buf));
            kept.pop_back();
        }
        gpuleak_iteration_end();
    }
    if (profile_at >= 0) std::printf("profiler callbacks: %d\n", g_callbacks.load());
    std::printf("EXPECT kernels=%ld copies=%ld memsets=%ld\n", 2 * n, 2 * n, n);
    return 0;
}
