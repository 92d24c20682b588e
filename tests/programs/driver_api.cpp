// driver_api: links libcuda.so.1 directly and calls the driver through the
// PLT with the cuda.h macro names (cuMemAlloc -> cuMemAlloc_v2, ...).
//
// Counted allocations / frees:
//   cuMemAlloc 1 MiB (a), 2 MiB (b), 3 MiB (c)  -> 3 allocs
//   cuMemFree a, b                              -> 2 frees; c (3 MiB) leaks
//   cuMemFree(0)                                -> not a free
//   cuMemAllocAsync 1 MiB + cuMemFreeAsync      -> 1 alloc, 1 free
//   cuMemCreate 2 MiB + cuMemRelease            -> 1 alloc, 1 free
// EXPECT allocs=5 frees=4 (3 MiB live at exit).
#include <cuda.h>

#include <cstdio>

#include "prog_common.h"

int main() {
    CHECK_CU(cuInit(0));
    CUdevice dev = 0;
    CHECK_CU(cuDeviceGet(&dev, 0));
    CUcontext ctx = nullptr;
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK_CU(cuCtxSetCurrent(ctx));

    CUdeviceptr a = 0, b = 0, c = 0;
    CHECK_CU(cuMemAlloc(&a, 1u << 20));
    CHECK_CU(cuMemAlloc(&b, 2u << 20));
    CHECK_CU(cuMemAlloc(&c, 3u << 20));  // leaked on purpose
    CHECK_CU(cuMemFree(a));
    CHECK_CU(cuMemFree(b));
    CHECK_CU(cuMemFree(0));

    CUstream s = nullptr;
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr d = 0;
    CHECK_CU(cuMemAllocAsync(&d, 1u << 20, s));
    CHECK_CU(cuMemFreeAsync(d, s));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuStreamDestroy(s));

    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    size_t gran = 0;
    CHECK_CU(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CUmemGenericAllocationHandle h = 0;
    CHECK_CU(cuMemCreate(&h, gran, &prop, 0));
    CHECK_CU(cuMemRelease(h));

    std::printf("EXPECT allocs=5 frees=4\n");
    return 0;
}
