// For native_threads.py: allocate on threads that never ran Python. One is a plain std::thread;
// the other runs a function named like PyTorch's autograd worker loop
// (torch::autograd::Engine::thread_main), which the report recognises in the native stack.
//
// The caller hands in cudaMalloc as it got it (ctypes' dlsym on the fake libcudart), so this
// library needs no CUDA at link time.
#include <cstddef>
#include <thread>

namespace {

using MallocFn = int (*)(void **, size_t);

// Counts into *failed the calls that did not succeed.
__attribute__((noinline)) void allocate(MallocFn cuda_malloc, size_t bytes, int count, int *failed) {
  for (int i = 0; i < count; ++i) {
    void *p = nullptr;
    if (cuda_malloc(&p, bytes) != 0) ++*failed;  // kept: the test reads it as live at exit
  }
  asm volatile("" ::: "memory");  // keep the frame (no tail call)
}

}  // namespace

namespace torch::autograd {
struct Engine {
  __attribute__((noinline)) static void thread_main(MallocFn cuda_malloc, size_t bytes, int count, int *failed) {
    allocate(cuda_malloc, bytes, count, failed);
    asm volatile("" ::: "memory");
  }
};
}  // namespace torch::autograd

// Both return the number of failed cudaMalloc calls.
extern "C" __attribute__((visibility("default"))) int pyframes_alloc_on_plain_thread(void *cuda_malloc, size_t bytes,
                                                                                     int count) {
  int failed = 0;
  std::thread t(allocate, reinterpret_cast<MallocFn>(cuda_malloc), bytes, count, &failed);
  t.join();
  return failed;
}

extern "C" __attribute__((visibility("default"))) int pyframes_alloc_on_autograd_thread(void *cuda_malloc, size_t bytes,
                                                                                        int count) {
  int failed = 0;
  std::thread t(&torch::autograd::Engine::thread_main, reinterpret_cast<MallocFn>(cuda_malloc), bytes, count, &failed);
  t.join();
  return failed;
}
