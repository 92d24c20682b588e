// cudart's memory functions, exported so that programs using the shared runtime (libcudart.so.13)
// come through here first. These hooks record nothing: the driver hooks underneath are the source
// of truth (DESIGN.md); the runtime only labels the driver call with the function the program
// wrote (cudaMallocHost -> cuMemHostAlloc). Programs built with the static runtime never reach
// these, and lose only the label.
#include <cuda_runtime_api.h>

#include <atomic>

#include "core/recorder.h"
#include "shim/hooks.def"
#include "shim/real_symbols.h"

namespace {

using gpuleak::format::Api;

// One instantiation per exported function (Tag), each with its own cache of the next definition:
// a _ptsz function and its plain one share a label and a type, never the function they call.
template <typename Tag, typename Fn>
struct Runtime;

template <typename Tag, typename... Args>
struct Runtime<Tag, cudaError_t (*)(Args...)> {
  static cudaError_t call(Args... a) {
    static std::atomic<void *> next{nullptr};
    void *fn = next.load(std::memory_order_acquire);
    if (!fn) {
      fn = gpuleak::shim::next_symbol(Tag::name);
      next.store(fn, std::memory_order_release);
    }
    if (!fn) return cudaErrorInitializationError;
    uint16_t outer = gpuleak::core::runtime_label_swap(static_cast<uint16_t>(Tag::label));
    cudaError_t r = reinterpret_cast<cudaError_t (*)(Args...)>(fn)(a...);
    gpuleak::core::runtime_label_swap(outer);
    return r;
  }
};

}  // namespace

#define GPULEAK_RUNTIME_EXPORT(NAME, LABEL, PARAMS, ARGS)                     \
  namespace {                                                                 \
  struct Tag_##NAME {                                                         \
    static constexpr const char *name = #NAME;                                \
    static constexpr Api label = Api::LABEL;                                  \
  };                                                                          \
  }                                                                           \
  extern "C" __attribute__((visibility("default"))) cudaError_t NAME PARAMS { \
    return Runtime<Tag_##NAME, cudaError_t(*) PARAMS>::call ARGS;             \
  }
GPULEAK_RUNTIME_HOOKS(GPULEAK_RUNTIME_EXPORT)
#undef GPULEAK_RUNTIME_EXPORT
