// cublas_paths [N=30]: N iterations, each creating one cuBLAS handle from make_a() and one from
// make_b() and keeping both (never cublasDestroy): two leaks through the same library function
// (cublasCreate_v2, whose frames inside libcublas have no line tables), from two call paths.
// Issue #28: two different cuBLAS leaks shared one site_id on the H200. The report must list two
// leaks with two site ids, headed by make_a and make_b (run_cublas_paths.sh checks it).
#include <cublas_v2.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "gpu_common.h"

static void check(cublasStatus_t s, const char *what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s failed: %d\n", what, static_cast<int>(s));
    std::exit(1);
  }
}

extern "C" __attribute__((noinline)) cublasHandle_t make_a() {
  cublasHandle_t h = nullptr;
  check(cublasCreate(&h), "cublasCreate (a)");
  asm volatile("" ::: "memory");  // keep the frame (no tail call)
  return h;
}

extern "C" __attribute__((noinline)) cublasHandle_t make_b() {
  cublasHandle_t h = nullptr;
  check(cublasCreate(&h), "cublasCreate (b)");
  asm volatile("" ::: "memory");
  return h;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 30;
  if (n <= 0) n = 30;
  std::vector<cublasHandle_t> kept;
  for (long i = 0; i < n; ++i) {
    kept.push_back(make_a());
    kept.push_back(make_b());
    CHECK_CUDA(cudaDeviceSynchronize());
  }
  std::printf("EXPECT two leaks: make_a and make_b, %ld handles each\n", n);
  return 0;
}
