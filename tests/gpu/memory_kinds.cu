// memory_kinds: every other kind of memory the runtime hands out, each freed again.
//
// Counted by hand (runtime call -> driver call seen by the shim -> kind):
//   cudaMallocManaged   -> cuMemAllocManaged    -> managed          freed by cudaFree (cuMemFree_v2)
//   cudaMallocPitch     -> cuMemAllocPitch_v2   -> pitched          freed by cudaFree
//   cudaMalloc3D        -> cuMemAllocPitch_v2   -> pitched          freed by cudaFree
//   cudaMallocHost      -> cuMemHostAlloc       -> host_pinned      freed by cudaFreeHost (cuMemFreeHost)
//   cudaHostAlloc       -> cuMemHostAlloc       -> host_pinned      freed by cudaFreeHost
//   cudaHostRegister    -> cuMemHostRegister_v2 -> host_registered  freed by cudaHostUnregister
//   cudaMallocArray     -> cuArray3DCreate_v2   -> array            freed by cudaFreeArray (cuArrayDestroy)
//   cudaMalloc3DArray   -> cuArray3DCreate_v2   -> array            freed by cudaFreeArray
//   allocs = 8, frees = 8.
// Built with the static cudart (gpu_memory_kinds) and with -cudart shared (gpu_memory_kinds_shared,
// where each record also carries the runtime function as its label).
#include <cstring>

#include "gpu_common.h"

int main() {
    CHECK_CUDA(cudaSetDevice(0));

    void* managed = nullptr;
    CHECK_CUDA(cudaMallocManaged(&managed, 1u << 20));
    launch_touch(managed, 1u << 20);
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaFree(managed));

    void* pitched = nullptr;
    size_t pitch = 0;
    CHECK_CUDA(cudaMallocPitch(&pitched, &pitch, 1000, 100));
    CHECK_CUDA(cudaFree(pitched));

    cudaPitchedPtr p3d;
    CHECK_CUDA(cudaMalloc3D(&p3d, make_cudaExtent(256, 64, 4)));
    CHECK_CUDA(cudaFree(p3d.ptr));

    void* host = nullptr;
    CHECK_CUDA(cudaMallocHost(&host, 1u << 20));
    std::memset(host, 1, 1u << 20);
    CHECK_CUDA(cudaFreeHost(host));

    void* host2 = nullptr;
    CHECK_CUDA(cudaHostAlloc(&host2, 1u << 20, cudaHostAllocPortable));
    CHECK_CUDA(cudaFreeHost(host2));

    void* plain = std::aligned_alloc(4096, 1u << 20);
    std::memset(plain, 0, 1u << 20);
    CHECK_CUDA(cudaHostRegister(plain, 1u << 20, cudaHostRegisterDefault));
    CHECK_CUDA(cudaHostUnregister(plain));
    std::free(plain);

    cudaChannelFormatDesc fdesc = cudaCreateChannelDesc<float>();
    cudaArray_t array = nullptr;
    CHECK_CUDA(cudaMallocArray(&array, &fdesc, 256, 256));
    CHECK_CUDA(cudaFreeArray(array));

    cudaArray_t array3d = nullptr;
    CHECK_CUDA(cudaMalloc3DArray(&array3d, &fdesc, make_cudaExtent(64, 64, 8)));
    CHECK_CUDA(cudaFreeArray(array3d));

    CHECK_CUDA(cudaDeviceSynchronize());

    std::printf("EXPECT allocs=8 frees=8 unknown_frees=0\n");
    std::printf("EXPECT_KIND managed=1 pitched=2 host_pinned=2 host_registered=1 array=2\n");
    std::printf("EXPECT_API cuMemAllocManaged=1 cuMemAllocPitch_v2=2 cuMemHostAlloc=2 cuMemHostRegister_v2=1 "
                "cuMemHostUnregister=1 cuArray3DCreate_v2=2 cuArrayDestroy=2\n");
#ifdef GPU_TEST_SHARED_CUDART
    std::printf("EXPECT_LABEL cudaMallocManaged=1 cudaMallocPitch=1 cudaMalloc3D=1 cudaMallocHost=1 "
                "cudaHostAlloc=1 cudaHostRegister=1 cudaHostUnregister=1 cudaMallocArray=1 cudaMalloc3DArray=1 "
                "cudaFree=3 cudaFreeArray=2 cudaFreeHost=2\n");
#endif
    std::printf("EXPECT_VERDICT clean|inconclusive\n");  // everything was freed: no leak
    return 0;
}
