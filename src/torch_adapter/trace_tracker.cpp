// gpuleak's PyTorch adapter: every block PyTorch's CUDA caching allocator hands out or takes back
// (a tensor's storage, inside the segments it got from cudaMalloc or cuMemMap) goes to the shim,
// with the allocating thread's stacks, through gpuleak_api_pool_block (include/gpuleak/gpuleak.h).
//
// Built against the headers of the PyTorch that runs it, never against another version's: the
// Python start-up hook (tools/python/gpuleak/_torch.py) compiles this file with the installed
// torch's include folder and caches the library per torch version, so the virtual call and the
// TraceEntry layout below come from that version's own headers. A version whose headers lack the
// tracker fails to compile, and the hook keeps the segment view with one line saying so.
//
// The tracker (c10::cuda::CUDACachingAllocator::attachAllocatorTraceTracker) is called on the
// allocating thread while the allocator's per-device lock is held, whether or not
// torch.cuda.memory._record_memory_history is on. So the callback takes no Python GIL and no lock
// of the program's: gpuleak_api_pool_block only reads the thread's stacks and appends to its own
// per-thread buffer.
#include <c10/cuda/CUDACachingAllocator.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

namespace {

using PoolBlockFn = int (*)(int, int, unsigned long long, unsigned long long, unsigned long long, int);
using AttachedFn = void (*)(int, const char *);

constexpr int kAlloc = 1;
constexpr int kFree = 2;
constexpr int kFrameworkTorch = 1;

PoolBlockFn g_pool_block = nullptr;

void on_trace(const c10::CachingDeviceAllocator::TraceEntry &te) {
  using Action = c10::CachingDeviceAllocator::TraceEntry::Action;
  // ALLOC: a block handed out. FREE_COMPLETED: the block is the allocator's again (FREE_REQUESTED
  // comes first, and can precede it by a while when the block was used on another stream).
  int op = te.action_ == Action::ALLOC ? kAlloc : te.action_ == Action::FREE_COMPLETED ? kFree : 0;
  if (op == 0) return;
  g_pool_block(op, te.device_, te.addr_, te.size_, reinterpret_cast<unsigned long long>(te.stream_), kFrameworkTorch);
}

void say(char *why, size_t size, const std::string &text) {
  if (why && size) std::snprintf(why, size, "%s", text.c_str());
}

}  // namespace

// 1 when attached; 0 with `why` (one line) otherwise. `version` is torch.__version__, for the
// capture's description. Called once, from Python, once CUDA is initialized in the process.
extern "C" __attribute__((visibility("default"))) int gpuleak_torch_attach(const char *version, char *why,
                                                                           size_t why_size) {
  auto pool_block = reinterpret_cast<PoolBlockFn>(dlsym(RTLD_DEFAULT, "gpuleak_api_pool_block"));
  auto attached = reinterpret_cast<AttachedFn>(dlsym(RTLD_DEFAULT, "gpuleak_api_pool_attached"));
  if (!pool_block || !attached) {
    say(why, why_size, "the gpuleak shim is not loaded in this process (run under `gpuleak run`)");
    return 0;
  }
  try {
    c10::cuda::CUDACachingAllocator::CUDAAllocator *allocator = c10::cuda::CUDACachingAllocator::get();
    if (!allocator) {
      say(why, why_size, "PyTorch's CUDA allocator is not set up");
      return 0;
    }
    // backend:cudaMallocAsync has its own tracker stub (it throws): its tensors reach CUDA one by
    // one anyway. Only the native caching allocator hides tensors inside segments.
    const std::string name = allocator->name();
    if (name != "native") {
      say(why, why_size, "PyTorch's allocator is '" + name + "', not the caching allocator");
      return 0;
    }
    // The native allocator hands the tracker to each device's allocator, which exist only once
    // CUDA is initialized (torch.cuda._lazy_init): attaching before would attach to none.
    if (!allocator->initialized()) {
      say(why, why_size, "PyTorch's caching allocator is not initialized yet (attach after CUDA's lazy init)");
      return 0;
    }
    g_pool_block = pool_block;
    allocator->attachAllocatorTraceTracker(on_trace);
  } catch (const std::exception &e) {
    say(why, why_size, std::string("attaching to PyTorch's allocator failed: ") + e.what());
    return 0;
  } catch (...) {
    say(why, why_size, "attaching to PyTorch's allocator failed");
    return 0;
  }
  const std::string description =
      std::string("torch ") + (version ? version : "?") + " CUDACachingAllocator trace tracker";
  attached(kFrameworkTorch, description.c_str());
  return 1;
}
