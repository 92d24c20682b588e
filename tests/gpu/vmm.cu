// vmm: virtual memory management the way PyTorch's expandable segments reach it: the driver
// functions are looked up with cudaGetDriverEntryPointByVersion (no -lcuda, no driver symbol in
// the program), then cuMemCreate / cuMemAddressReserve / cuMemMap / cuMemSetAccess / cuMemUnmap /
// cuMemRelease / cuMemAddressFree are called through the returned pointers.
//
// Counted by hand (G = the device's minimum granularity, 2 MiB on an H200):
//   allocs: 3 x cuMemCreate(G) (kind vmm)   = 3
//   frees:  3 x cuMemRelease                 = 3
//   not allocations: 1 cuMemAddressReserve (3G), 3 cuMemMap, 1 cuMemSetAccess, 3 cuMemUnmap,
//   1 cuMemAddressFree.
#include <cudaTypedefs.h>

#include "gpu_common.h"

namespace {
template <typename Fn>
Fn entry(const char* name) {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
    CHECK_CUDA(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &status));
    if (!fn || status != cudaDriverEntryPointSuccess) {
        std::fprintf(stderr, "vmm: no driver entry point %s (status %d)\n", name, static_cast<int>(status));
        std::exit(2);
    }
    return reinterpret_cast<Fn>(fn);
}
}  // namespace

int main() {
    CHECK_CUDA(cudaSetDevice(0));
    CHECK_CUDA(cudaFree(0));  // create the primary context (cuMemFree_v2(0): not a free)

    auto getGranularity = entry<PFN_cuMemGetAllocationGranularity_v10020>("cuMemGetAllocationGranularity");
    auto memCreate = entry<PFN_cuMemCreate_v10020>("cuMemCreate");
    auto memRelease = entry<PFN_cuMemRelease_v10020>("cuMemRelease");
    auto addressReserve = entry<PFN_cuMemAddressReserve_v10020>("cuMemAddressReserve");
    auto addressFree = entry<PFN_cuMemAddressFree_v10020>("cuMemAddressFree");
    auto memMap = entry<PFN_cuMemMap_v10020>("cuMemMap");
    auto memUnmap = entry<PFN_cuMemUnmap_v10020>("cuMemUnmap");
    auto setAccess = entry<PFN_cuMemSetAccess_v10020>("cuMemSetAccess");

    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t gran = 0;
    CHECK_CU(getGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    if (gran == 0) gran = 2u << 20;

    const int kHandles = 3;
    CUdeviceptr base = 0;
    CHECK_CU(addressReserve(&base, kHandles * gran, 0, 0, 0));
    CUmemGenericAllocationHandle h[kHandles];
    for (int i = 0; i < kHandles; ++i) {
        CHECK_CU(memCreate(&h[i], gran, &prop, 0));
        CHECK_CU(memMap(base + i * gran, gran, 0, h[i], 0));
    }
    CUmemAccessDesc access = {};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CHECK_CU(setAccess(base, kHandles * gran, &access, 1));

    launch_touch(reinterpret_cast<void*>(base + gran), gran);
    CHECK_CUDA(cudaMemset(reinterpret_cast<void*>(base), 0, kHandles * gran));
    CHECK_CUDA(cudaDeviceSynchronize());

    for (int i = 0; i < kHandles; ++i) CHECK_CU(memUnmap(base + i * gran, gran));
    for (int i = 0; i < kHandles; ++i) CHECK_CU(memRelease(h[i]));
    CHECK_CU(addressFree(base, kHandles * gran));

    std::printf("# granularity %zu bytes\n", gran);
    std::printf("EXPECT allocs=%d frees=%d unknown_frees=0\n", kHandles, kHandles);
    std::printf("EXPECT_KIND vmm=%d\n", kHandles);
    std::printf("EXPECT_API cuMemCreate=%d cuMemRelease=%d cuMemMap=%d cuMemUnmap=%d cuMemAddressReserve=1 "
                "cuMemAddressFree=1\n", kHandles, kHandles, kHandles, kHandles);
    std::printf("EXPECT_OP map=%d unmap=%d reserve=1 release_va=1\n", kHandles, kHandles);
    std::printf("EXPECT_VERDICT clean|inconclusive\n");  // everything was freed: no leak
    return 0;
}
