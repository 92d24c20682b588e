// exit_status: allocates one 1 MiB buffer (kept) and exits with status 7, to
// check that the profiler preserves the program's exit status.
#include <cuda_runtime_api.h>

#include "prog_common.h"

int main() {
    void* p = nullptr;
    CHECK_CUDA(cudaMalloc(&p, 1u << 20));
    return 7;
}
