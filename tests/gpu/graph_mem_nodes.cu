// graph_mem_nodes: CUDA graphs with memory nodes. A stream capture records cudaMallocAsync +
// kernel + cudaFreeAsync (the driver sees cuMemAllocAsync / cuMemFreeAsync while the stream is
// capturing: a graph reservation, not live memory); the graph is instantiated and launched 10
// times (no driver allocation call at instantiate or launch). One cudaMalloc/cudaFree outside.
//
// Counted by hand:
//   allocs: 1 cudaMalloc outside the capture                       = 1
//   frees:  1 cudaFree of it                                       = 1
//   graph_reservations: the cudaMallocAsync made during capture   >= 1
//   (the cudaFreeAsync made during capture frees a reservation: it is no free of owned memory)
#include "gpu_common.h"

int main() {
    CHECK_CUDA(cudaSetDevice(0));
    cudaStream_t s;
    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    void* outside = nullptr;
    CHECK_CUDA(cudaMalloc(&outside, 1u << 20));
    launch_touch(outside, 1u << 20, s);

    cudaGraph_t graph;
    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    void* scratch = nullptr;
    CHECK_CUDA(cudaMallocAsync(&scratch, 8u << 20, s));
    launch_touch(scratch, 8u << 20, s);
    CHECK_CUDA(cudaFreeAsync(scratch, s));
    CHECK_CUDA(cudaStreamEndCapture(s, &graph));

    cudaGraphExec_t exec;
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    for (int i = 0; i < 10; ++i) CHECK_CUDA(cudaGraphLaunch(exec, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaGraphDestroy(graph));
    CHECK_CUDA(cudaDeviceGraphMemTrim(0));

    CHECK_CUDA(cudaFree(outside));
    CHECK_CUDA(cudaStreamDestroy(s));

    std::printf("EXPECT allocs=1 frees=1\n");
    std::printf("EXPECT_KIND device=1\n");
    std::printf("EXPECT_GRAPH >=1\n");
    std::printf("EXPECT_VERDICT clean|inconclusive\n");  // everything was freed: no leak
    return 0;
}
