// Call paths with no unwind tables (tests/programs/CMakeLists.txt builds this file with
// -fno-asynchronous-unwind-tables -fno-unwind-tables -fno-exceptions and frame pointers): a
// native unwinder finds no CFI for these frames and falls back to the frame-pointer chain, where
// libunwind validates each address it reads (its validation pipe). hostile.cpp's close-reopen.
#include <cuda_runtime_api.h>

#include <cstddef>

extern "C" __attribute__((noinline)) int nocfi_leaf(size_t bytes) {
  void *p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) return 1;
  asm volatile("" ::: "memory");
  return cudaFree(p) == cudaSuccess ? 0 : 1;
}

// `depth` frames of its own above the leaf, each without CFI, so each call walks a different
// stack shape (a fresh stack pointer for the stack memo, fresh addresses for the unwinder).
extern "C" __attribute__((noinline)) int nocfi_allocate(int depth, size_t bytes) {
  volatile char pad[64];
  pad[0] = static_cast<char>(depth);
  int r = depth <= 0 ? nocfi_leaf(bytes) : nocfi_allocate(depth - 1, bytes);
  asm volatile("" ::: "memory");
  return r + pad[0] - static_cast<char>(depth);
}
