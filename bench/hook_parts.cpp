// What the ingredients of an allocation hook cost on this CPU, in nanoseconds each: the clock
// reads, a locked instruction, a spin lock, and the driver queries a hook might make (real
// libcuda.so.1 when present: dlopen, no link dependency). Plain loop, median of 9 rounds.
// usage: hook_parts [ITERATIONS]
#include <dlfcn.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace {

volatile uint64_t g_sink;

template <typename F>
double median_ns(const char *name, long n, F &&body) {
  std::vector<double> rounds;
  for (int r = 0; r < 9; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < n; ++i) body();
    auto t1 = std::chrono::steady_clock::now();
    rounds.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(n));
  }
  std::sort(rounds.begin(), rounds.end());
  std::printf("%-28s %7.2f ns  (min %.2f, max %.2f)\n", name, rounds[4], rounds.front(), rounds.back());
  return rounds[4];
}

}  // namespace

int main(int argc, char **argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 2000000;
  median_ns("empty loop", n, [] { g_sink = g_sink + 1; });
#if defined(__x86_64__)
  median_ns("rdtsc", n, [] { g_sink = __rdtsc(); });
  median_ns("rdtscp", n, [] {
    unsigned aux;
    g_sink = __rdtscp(&aux);
  });
#endif
  median_ns("clock_gettime(MONOTONIC)", n, [] {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    g_sink = static_cast<uint64_t>(ts.tv_nsec);
  });
  static std::atomic<uint64_t> counter{0};
  median_ns("lock xadd (uncontended)", n, [] { g_sink = counter.fetch_add(1, std::memory_order_relaxed); });
  static std::atomic<bool> lock{false};
  median_ns("spin lock + unlock", n, [] {
    while (lock.exchange(true, std::memory_order_acquire)) {
    }
    lock.store(false, std::memory_order_release);
  });

  void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
  if (!cuda) {
    std::printf("libcuda.so.1 not found: driver queries skipped\n");
    return 0;
  }
  using Init = int (*)(unsigned);
  using CtxGetDevice = int (*)(int *);
  using CtxGetCurrent = int (*)(void **);
  using PrimaryRetain = int (*)(void **, int);
  using CtxSetCurrent = int (*)(void *);
  using StreamCreate = int (*)(void **, unsigned);
  using StreamIsCapturing = int (*)(void *, int *);
  using StreamGetDevice = int (*)(void *, int *);
  auto init = reinterpret_cast<Init>(dlsym(cuda, "cuInit"));
  auto get_device = reinterpret_cast<CtxGetDevice>(dlsym(cuda, "cuCtxGetDevice"));
  auto get_current = reinterpret_cast<CtxGetCurrent>(dlsym(cuda, "cuCtxGetCurrent"));
  auto retain = reinterpret_cast<PrimaryRetain>(dlsym(cuda, "cuDevicePrimaryCtxRetain"));
  auto set_current = reinterpret_cast<CtxSetCurrent>(dlsym(cuda, "cuCtxSetCurrent"));
  auto stream_create = reinterpret_cast<StreamCreate>(dlsym(cuda, "cuStreamCreate"));
  auto is_capturing = reinterpret_cast<StreamIsCapturing>(dlsym(cuda, "cuStreamIsCapturing"));
  auto stream_device = reinterpret_cast<StreamGetDevice>(dlsym(cuda, "cuStreamGetDevice"));
  void *ctx = nullptr;
  void *stream = nullptr;
  if (!init || init(0) != 0 || !retain || retain(&ctx, 0) != 0 || !set_current || set_current(ctx) != 0) {
    std::printf("no CUDA context: driver queries skipped\n");
    return 0;
  }
  if (stream_create) stream_create(&stream, 1);
  if (get_device)
    median_ns("cuCtxGetDevice", n / 4, [&] {
      int d = -1;
      get_device(&d);
      g_sink = static_cast<uint64_t>(d);
    });
  if (get_current)
    median_ns("cuCtxGetCurrent", n / 4, [&] {
      void *c = nullptr;
      get_current(&c);
      g_sink = reinterpret_cast<uintptr_t>(c);
    });
  if (stream_device && stream)
    median_ns("cuStreamGetDevice", n / 4, [&] {
      int d = -1;
      stream_device(stream, &d);
      g_sink = static_cast<uint64_t>(d);
    });
  if (is_capturing && stream)
    median_ns("cuStreamIsCapturing", n / 4, [&] {
      int st = 0;
      is_capturing(stream, &st);
      g_sink = static_cast<uint64_t>(st);
    });
  return 0;
}
