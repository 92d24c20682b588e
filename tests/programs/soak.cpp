// soak MODE ...: the long and hostile shapes of tests/soak (soak.py drives them under the shim).
//   storm THREADS FORKS HOW   THREADS threads allocate and free without pause while the main thread
//                             forks FORKS children one after the other; each child ends by HOW:
//                             exit, _exit, exec (/bin/true), vfork (+ exec), spawn (posix_spawn), or
//                             cuda (allocates and frees once itself, then exit). The threads stop
//                             after the last child is reaped.
//   churn THREADS ROUNDS PAIRS   THREADS threads at a time, ROUNDS times over: each thread does PAIRS
//                             allocation/free pairs and keeps one 4 KiB block, then exits; the next
//                             round starts new threads (thread exit mid-run).
//   events PAIRS STEP         one thread: PAIRS allocation/free pairs, an iteration mark every STEP
//                             pairs, one 1 KiB block kept per iteration (a leak of 1 KiB a step).
//   forever                   allocates and frees until killed (SIGKILL at a random point).
// Every mode but forever prints one line: EXPECT allocs=N frees=M (the parent's own calls).
#include <cuda_runtime_api.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gpuleak/gpuleak.h>
#include "prog_common.h"

extern char **environ;

namespace {

std::atomic<long> g_allocs{0}, g_frees{0};

void pair(size_t size) {
  void *p = nullptr;
  CHECK_CUDA(cudaMalloc(&p, size));
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  CHECK_CUDA(cudaFree(p));
  g_frees.fetch_add(1, std::memory_order_relaxed);
}

bool reap(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return false;
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// One child, ended the way HOW says. Returns false when the child failed.
bool child(const std::string &how) {
  char *const args[] = {const_cast<char *>("true"), nullptr};
  if (how == "spawn") {
    pid_t pid = 0;
    if (posix_spawn(&pid, "/bin/true", nullptr, nullptr, args, environ) != 0) return false;
    return reap(pid);
  }
  pid_t pid = how == "vfork" ? vfork() : fork();
  if (pid < 0) return false;
  if (pid == 0) {
    if (how == "exit") std::exit(0);
    if (how == "_exit") _exit(0);
    if (how == "exec" || how == "vfork") {
      execv("/bin/true", args);
      _exit(127);
    }
    if (how == "cuda") {
      void *p = nullptr;
      if (cudaMalloc(&p, 4096) != cudaSuccess || cudaFree(p) != cudaSuccess) _exit(3);
      std::exit(0);
    }
    _exit(4);
  }
  return reap(pid);
}

int storm(long threads, long forks, const std::string &how) {
  // The fake runtime's first call (its lazy start-up, function-local statics) is made before any
  // fork: a child forked while another thread is inside that start-up hangs on its guard, the
  // program's own bug whatever profiler runs, and not what this storm tests (gpuleak's locks).
  pair(256);
  std::atomic<bool> stop{false};
  std::vector<std::thread> pool;
  for (long t = 0; t < threads; ++t)
    pool.emplace_back([&stop, t] {
      for (size_t i = 0; !stop.load(std::memory_order_relaxed); ++i) pair(256 + ((i + t) & 1023));
    });
  int failed = 0;
  for (long f = 0; f < forks; ++f) failed += child(how) ? 0 : 1;
  stop = true;
  for (auto &t : pool) t.join();
  std::printf("EXPECT allocs=%ld frees=%ld failed_children=%d\n", g_allocs.load(), g_frees.load(), failed);
  return failed ? 1 : 0;
}

int churn(long threads, long rounds, long pairs) {
  for (long r = 0; r < rounds; ++r) {
    std::vector<std::thread> pool;
    for (long t = 0; t < threads; ++t)
      pool.emplace_back([pairs] {
        for (long i = 0; i < pairs; ++i) pair(512 + static_cast<size_t>(i & 255));
        void *kept = nullptr;
        CHECK_CUDA(cudaMalloc(&kept, 4096));
        g_allocs.fetch_add(1, std::memory_order_relaxed);
      });
    for (auto &t : pool) t.join();
  }
  std::printf("EXPECT allocs=%ld frees=%ld\n", g_allocs.load(), g_frees.load());
  return 0;
}

int events(long pairs, long step) {
  for (long i = 0; i < pairs; ++i) {
    if (i % step == 0) {
      if (i) gpuleak_iteration_end();
      gpuleak_iteration_begin("soak");
      void *kept = nullptr;
      CHECK_CUDA(cudaMalloc(&kept, 1024));
      g_allocs.fetch_add(1, std::memory_order_relaxed);
    }
    pair(2048);
  }
  gpuleak_iteration_end();
  std::printf("EXPECT allocs=%ld frees=%ld\n", g_allocs.load(), g_frees.load());
  return 0;
}

int forever() {
  for (size_t i = 0;; ++i) pair(1024 + (i & 4095));
}

}  // namespace

int main(int argc, char **argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "storm" && argc > 4) return storm(arg_or(argc, argv, 2, 4), arg_or(argc, argv, 3, 20), argv[4]);
  if (mode == "churn") return churn(arg_or(argc, argv, 2, 64), arg_or(argc, argv, 3, 4), arg_or(argc, argv, 4, 500));
  if (mode == "events") return events(arg_or(argc, argv, 2, 1000000), arg_or(argc, argv, 3, 1000));
  if (mode == "forever") return forever();
  std::fprintf(stderr, "usage: soak storm THREADS FORKS HOW | churn T R P | events PAIRS STEP | forever\n");
  return 2;
}
