// What gpuleak adds to one cudaMallocAsync + cudaFreeAsync pair, the cheapest allocation there is
// (~1 us on the H200, ~0.1 us on the fake CUDA). Run it with and without the shim
// (bench/run_overhead.sh) and compare medians. Plain timing loop, no framework: the same source is
// built against the fake static runtime here and with nvcc against the real one on the GPU.
#include <cuda_runtime_api.h>

#include <dirent.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {
// The calling thread's own CPU time: on a shared machine the wall clock also counts the time the
// thread waited for a CPU, which no configuration controls (bench/pair_cost.py compares this one).
double thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}
// The threads of this process (/proc/self/task), for the output line.
int thread_count() {
  int n = 0;
  if (DIR *d = opendir("/proc/self/task")) {
    while (dirent *e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

// A CUDA program is never single-threaded: the real driver starts threads of its own when it
// initializes (the line's `threads=` says how many on a GPU). The fake CUDA starts none, and glibc's
// malloc then takes its single-thread shortcuts (no arena lock, no atomic fastbins) in the plain
// and floor runs, and not under gpuleak, whose writer is a second thread: the fake's own mallocs
// would be charged to gpuleak. So on the fake this program parks one thread of its own, as the
// real driver does (`--single-thread` leaves it out).
struct ParkedThread {
  std::mutex lock;
  std::condition_variable wake;
  bool done = false;
  std::thread thread{[this] {
    std::unique_lock<std::mutex> l(lock);
    wake.wait(l, [this] { return done; });
  }};
  ~ParkedThread() {
    {
      std::lock_guard<std::mutex> l(lock);
      done = true;
    }
    wake.notify_one();
    thread.join();
  }
};

}  // namespace

int main(int argc, char **argv) {
  const int pairs = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 15;
  const size_t bytes = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : (1u << 20);
  const bool single_thread = argc > 4 && std::string(argv[4]) == "--single-thread";
  cudaStream_t stream;
  if (cudaStreamCreate(&stream) != cudaSuccess) return 1;
  const int driver_threads = thread_count();
  std::unique_ptr<ParkedThread> parked;
  if (driver_threads == 1 && !single_thread) parked = std::make_unique<ParkedThread>();
  void *warm = nullptr;
  for (int i = 0; i < 1000; ++i) {  // warm the pool, the unwinder caches and the interned stack
    cudaMallocAsync(&warm, 1 << 20, stream);
    cudaFreeAsync(warm, stream);
  }
  std::vector<double> ns, cpu;
  for (int r = 0; r < reps; ++r) {
    double c0 = thread_cpu_ns();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < pairs; ++i) {
      void *p = nullptr;
      if (cudaMallocAsync(&p, bytes, stream) != cudaSuccess) return 1;
      cudaFreeAsync(p, stream);
    }
    auto t1 = std::chrono::steady_clock::now();
    cpu.push_back((thread_cpu_ns() - c0) / pairs);
    ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / pairs);
    cudaStreamSynchronize(stream);
  }
  std::sort(ns.begin(), ns.end());
  std::sort(cpu.begin(), cpu.end());
  std::printf("pair_ns median=%.1f min=%.1f max=%.1f reps=%d pairs=%d bytes=%zu cpu_median=%.1f threads=%d%s\n",
              ns[ns.size() / 2], ns.front(), ns.back(), reps, pairs, bytes, cpu[cpu.size() / 2], driver_threads,
              parked ? "+1" : "");
  return 0;
}
