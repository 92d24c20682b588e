// driver_api: the driver API through the PLT (linked with -lcuda, no cudart at all): every call
// below reaches libcuda.so.1 through the program's own dynamic symbol references, which the
// preloaded shim's exported driver symbols take first.
//
// Counted by hand:
//   allocs: cuMemAlloc_v2 (device) + cuMemAllocPitch_v2 (pitched) + cuMemAllocManaged (managed)
//           + cuMemHostAlloc (host_pinned) + cuMemAllocHost_v2 (host_pinned) + cuArrayCreate_v2 (array)
//           = 6
//   frees:  cuMemFree_v2 x 3 (device, pitched, managed) + cuMemFreeHost x 2 + cuArrayDestroy = 6
//   cuMemFree(0) is the context-init idiom and must not count (neither as a free nor as unknown).
#include <cstring>

#include "gpu_common.h"

int main() {
    CHECK_CU(cuInit(0));
    CUdevice dev;
    CHECK_CU(cuDeviceGet(&dev, 0));
    CUcontext ctx;
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK_CU(cuCtxSetCurrent(ctx));

    (void)cuMemFree(0);  // not a free; its result does not matter

    CUdeviceptr d = 0;
    CHECK_CU(cuMemAlloc(&d, 1u << 20));  // cuMemAlloc_v2
    CHECK_CU(cuMemsetD8(d, 0, 1u << 20));
    CHECK_CU(cuMemFree(d));  // cuMemFree_v2

    CUdeviceptr pitched = 0;
    size_t pitch = 0;
    CHECK_CU(cuMemAllocPitch(&pitched, &pitch, 1000, 100, 4));  // cuMemAllocPitch_v2
    CHECK_CU(cuMemFree(pitched));

    CUdeviceptr managed = 0;
    CHECK_CU(cuMemAllocManaged(&managed, 1u << 20, CU_MEM_ATTACH_GLOBAL));
    CHECK_CU(cuMemFree(managed));

    void* host = nullptr;
    CHECK_CU(cuMemHostAlloc(&host, 1u << 20, CU_MEMHOSTALLOC_PORTABLE));
    std::memset(host, 0, 1u << 20);
    CHECK_CU(cuMemFreeHost(host));

    void* host2 = nullptr;
    CHECK_CU(cuMemAllocHost(&host2, 1u << 20));  // cuMemAllocHost_v2
    CHECK_CU(cuMemFreeHost(host2));

    CUDA_ARRAY_DESCRIPTOR desc;
    std::memset(&desc, 0, sizeof desc);
    desc.Width = 256;
    desc.Height = 256;
    desc.Format = CU_AD_FORMAT_FLOAT;
    desc.NumChannels = 1;
    CUarray array = nullptr;
    CHECK_CU(cuArrayCreate(&array, &desc));  // cuArrayCreate_v2
    CHECK_CU(cuArrayDestroy(array));

    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuDevicePrimaryCtxRelease(dev));

    std::printf("EXPECT allocs=6 frees=6 unknown_frees=0\n");
    std::printf("EXPECT_KIND device=1 pitched=1 managed=1 host_pinned=2 array=1\n");
    std::printf("EXPECT_API cuMemAlloc_v2=1 cuMemAllocPitch_v2=1 cuMemAllocManaged=1 cuMemHostAlloc=1 "
                "cuMemAllocHost_v2=1 cuArrayCreate_v2=1 cuMemFree_v2=3 cuMemFreeHost=2 cuArrayDestroy=1\n");
    std::printf("EXPECT_VERDICT clean|inconclusive\n");  // everything was freed: no leak
    return 0;
}
