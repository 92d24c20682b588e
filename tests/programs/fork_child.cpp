// fork_child: the parent allocates 2 buffers, then
//   child 1 (fork): allocates 1 buffer, frees it, _exit(0) (no atexit handlers);
//   child 2 (fork): execs /bin/true;
// the parent waits for both, allocates 1 more buffer and exits without
// freeing. Only the parent prints: EXPECT allocs=3 frees=0 (the parent's own
// counts; child 1 does 1 alloc + 1 free, child 2 none).
#include <cuda_runtime_api.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "prog_common.h"

namespace {
bool wait_ok(pid_t pid) {
    int status = 0;
    return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}
}  // namespace

int main() {
    void* a = nullptr;
    void* b = nullptr;
    CHECK_CUDA(cudaMalloc(&a, 1u << 20));
    CHECK_CUDA(cudaMalloc(&b, 1u << 20));
    std::fflush(nullptr);

    pid_t child = fork();
    if (child < 0) return 1;
    if (child == 0) {
        void* p = nullptr;
        if (cudaMalloc(&p, 1u << 20) != cudaSuccess || cudaFree(p) != cudaSuccess) _exit(3);
        _exit(0);
    }
    pid_t execer = fork();
    if (execer < 0) return 1;
    if (execer == 0) {
        execl("/bin/true", "true", static_cast<char*>(nullptr));
        _exit(127);
    }
    bool ok = wait_ok(child);
    ok = wait_ok(execer) && ok;
    if (!ok) {
        std::fprintf(stderr, "a child failed\n");
        return 1;
    }
    void* c = nullptr;
    CHECK_CUDA(cudaMalloc(&c, 1u << 20));
    std::printf("EXPECT allocs=3 frees=0\n");
    return 0;
}
