// Many call paths into the allocator from one stack depth: what a training step's framework does
// (hundreds of ops reaching cudaMalloc through the same dispatcher at the same stack pointer), for
// the stack memo (src/core/stack_memo.h; tests/integration/stack_memo_test.cpp). PATHS distinct
// callers, each kDepth frames of equal size above the allocation, called round-robin ROUNDS times.
// Under gpuleak with GPULEAK_SELF_TIME=1 the exit line says how many stacks came from the memo and
// how many proofs its misses took.
//
// usage: prog_stack_paths [PATHS [ROUNDS]]   (defaults 64, 200)
#include <cuda_runtime_api.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace {

__attribute__((noinline)) void allocate(size_t bytes) {
  void *p = nullptr;
  if (cudaMalloc(&p, bytes) == cudaSuccess) cudaFree(p);
  asm volatile("" ::: "memory");
}

// Path I at frame D: every frame the same size, so every path reaches cudaMalloc at one stack
// pointer; only the return addresses differ.
template <int I, int D>
__attribute__((noinline)) void frame(size_t bytes) {
  volatile char pad[32];
  pad[0] = static_cast<char>(I);
  if constexpr (D == 0) {
    allocate(bytes + pad[0]);
  } else {
    frame<I, D - 1>(bytes);
  }
  asm volatile("" ::: "memory");
}

constexpr int kPaths = 128;
constexpr int kDepth = 12;
using Entry = void (*)(size_t);

template <int... I>
constexpr auto make_paths(std::integer_sequence<int, I...>) {
  return std::array<Entry, sizeof...(I)>{&frame<I, kDepth>...};
}

}  // namespace

int main(int argc, char **argv) {
  int paths = argc > 1 ? std::atoi(argv[1]) : 64;
  int rounds = argc > 2 ? std::atoi(argv[2]) : 200;
  if (paths < 1 || paths > kPaths || rounds < 1) {
    std::fprintf(stderr, "usage: prog_stack_paths [PATHS (1-%d) [ROUNDS]]\n", kPaths);
    return 2;
  }
  static const auto table = make_paths(std::make_integer_sequence<int, kPaths>{});
  for (int r = 0; r < rounds; ++r)
    for (int i = 0; i < paths; ++i) table[i](4096);
  std::printf("%d paths x %d rounds\n", paths, rounds);
  return 0;
}
