// all_paths: every allocation path of the runtime once, each allocation freed.
// Built as prog_all_paths_static and prog_all_paths_shared.
//
// Counted allocations / frees (device + host, outside stream capture):
//    1. cudaMalloc 1 MiB                       / cudaFree
//    2. cudaMallocPitch 1000 x 64              / cudaFree
//    3. cudaMalloc3D 100 x 20 x 10             / cudaFree
//    4. cudaMallocManaged 1 MiB                / cudaFree
//    5. cudaMallocAsync 1 MiB on a stream      / cudaFreeAsync
//    6. cudaMallocAsync_ptsz on cudaStreamPerThread / cudaFreeAsync_ptsz (all_paths_ptsz.cpp)
//    7. cudaMallocFromPoolAsync 1 MiB          / cudaFreeAsync
//    8. cudaMallocHost 64 KiB                  / cudaFreeHost
//    9. cudaHostAlloc 64 KiB                   / cudaFreeHost
//   10. cudaMallocArray 256 x 256 float        / cudaFreeArray
//   11. cuMemCreate 2 MiB (VMM, via cudaGetDriverEntryPointByVersion) / cuMemRelease
// Not counted: cudaHostRegister/Unregister (no allocation), pool create/trim/destroy,
// VMM reserve/map/access/unmap/free (address space only), the cudaMallocAsync +
// cudaFreeAsync inside the stream capture (a graph allocation), cudaFree(0).
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>

#include "prog_common.h"

void alloc_on_per_thread_stream();  // all_paths_ptsz.cpp

namespace {

template <class Pfn>
Pfn entry(const char* name, unsigned version) {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
    CHECK_CUDA(cudaGetDriverEntryPointByVersion(name, &fn, version, cudaEnableDefault, &status));
    if (!fn || status != cudaDriverEntryPointSuccess) {
        std::fprintf(stderr, "driver entry point %s not found\n", name);
        std::exit(2);
    }
    return reinterpret_cast<Pfn>(fn);
}

// The way PyTorch's expandable segments drive the VMM API.
void vmm_round_trip() {
    auto getGranularity = entry<PFN_cuMemGetAllocationGranularity_v10020>("cuMemGetAllocationGranularity", 12000);
    auto create = entry<PFN_cuMemCreate_v10020>("cuMemCreate", 12000);
    auto reserve = entry<PFN_cuMemAddressReserve_v10020>("cuMemAddressReserve", 12000);
    auto map = entry<PFN_cuMemMap_v10020>("cuMemMap", 12000);
    auto setAccess = entry<PFN_cuMemSetAccess_v10020>("cuMemSetAccess", 12000);
    auto unmap = entry<PFN_cuMemUnmap_v10020>("cuMemUnmap", 12000);
    auto addressFree = entry<PFN_cuMemAddressFree_v10020>("cuMemAddressFree", 12000);
    auto release = entry<PFN_cuMemRelease_v10020>("cuMemRelease", 12000);

    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t gran = 0;
    CHECK_CU(getGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    CUmemGenericAllocationHandle handle = 0;
    CHECK_CU(create(&handle, gran, &prop, 0));
    CUdeviceptr va = 0;
    CHECK_CU(reserve(&va, 4 * gran, 0, 0, 0));
    CHECK_CU(map(va, gran, 0, handle, 0));
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CHECK_CU(setAccess(va, gran, &access, 1));
    std::memset(reinterpret_cast<void*>(va), 0, 4096);  // the fake maps host memory
    CHECK_CU(unmap(va, gran));
    CHECK_CU(addressFree(va, 4 * gran));
    CHECK_CU(release(handle));
}

void capture_round_trip(cudaStream_t s) {
    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    CHECK_CUDA(cudaStreamIsCapturing(s, &status));
    if (status != cudaStreamCaptureStatusActive) {
        std::fprintf(stderr, "stream is not capturing\n");
        std::exit(2);
    }
    void* p = nullptr;
    CHECK_CUDA(cudaMallocAsync(&p, 8u << 20, s));  // graph allocation: not counted
    CHECK_CUDA(cudaFreeAsync(p, s));
    cudaGraph_t graph = nullptr;
    CHECK_CUDA(cudaStreamEndCapture(s, &graph));
    CHECK_CUDA(cudaGraphDestroy(graph));
}

}  // namespace

int main() {
    CHECK_CUDA(cudaFree(nullptr));  // context init idiom (not a free)
    size_t free_at_start = 0, total = 0;
    CHECK_CUDA(cudaMemGetInfo(&free_at_start, &total));

    void* p = nullptr;
    CHECK_CUDA(cudaMalloc(&p, 1u << 20));  // 1
    CHECK_CUDA(cudaFree(p));

    size_t pitch = 0;
    CHECK_CUDA(cudaMallocPitch(&p, &pitch, 1000, 64));  // 2
    CHECK_CUDA(cudaFree(p));

    cudaPitchedPtr pp{};
    cudaExtent extent{100, 20, 10};  // width (bytes), height, depth
    CHECK_CUDA(cudaMalloc3D(&pp, extent));  // 3
    CHECK_CUDA(cudaFree(pp.ptr));

    CHECK_CUDA(cudaMallocManaged(&p, 1u << 20, cudaMemAttachGlobal));  // 4
    CHECK_CUDA(cudaFree(p));

    cudaStream_t s = nullptr;
    CHECK_CUDA(cudaStreamCreate(&s));
    CHECK_CUDA(cudaMallocAsync(&p, 1u << 20, s));  // 5
    CHECK_CUDA(cudaFreeAsync(p, s));
    CHECK_CUDA(cudaStreamSynchronize(s));

    alloc_on_per_thread_stream();  // 6

    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaMemPool_t pool = nullptr;
    CHECK_CUDA(cudaMemPoolCreate(&pool, &props));
    CHECK_CUDA(cudaMallocFromPoolAsync(&p, 1u << 20, pool, s));  // 7
    CHECK_CUDA(cudaFreeAsync(p, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaMemPoolTrimTo(pool, 0));
    CHECK_CUDA(cudaMemPoolDestroy(pool));

    CHECK_CUDA(cudaMallocHost(&p, 64u << 10));  // 8
    CHECK_CUDA(cudaFreeHost(p));
    CHECK_CUDA(cudaHostAlloc(&p, 64u << 10, cudaHostAllocPortable));  // 9
    CHECK_CUDA(cudaFreeHost(p));

    static char registered[8192];
    CHECK_CUDA(cudaHostRegister(registered, sizeof registered, cudaHostRegisterDefault));
    CHECK_CUDA(cudaHostUnregister(registered));

    cudaChannelFormatDesc desc{32, 0, 0, 0, cudaChannelFormatKindFloat};
    cudaArray_t array = nullptr;
    CHECK_CUDA(cudaMallocArray(&array, &desc, 256, 256));  // 10
    CHECK_CUDA(cudaFreeArray(array));

    vmm_round_trip();  // 11

    capture_round_trip(s);
    CHECK_CUDA(cudaStreamDestroy(s));
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaFree(0));

    size_t free_at_end = 0;
    CHECK_CUDA(cudaMemGetInfo(&free_at_end, &total));
    if (free_at_end != free_at_start) {
        std::fprintf(stderr, "device memory leaked: %zu bytes\n", free_at_start - free_at_end);
        return 1;
    }
    std::printf("EXPECT allocs=11 frees=11\n");
    return 0;
}
