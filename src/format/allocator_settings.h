// The program's allocator switches as the recorder saw them at start, typed: the analysis decides
// from these values (which pool hides the objects, whether gpuleak itself switched an allocator)
// and the report lists them, so no reader matches the recorded text again.
//
// The run record's allocator field (capture format, RunInfoField::kAllocatorEnv, written by
// src/core/run_facts.cpp) is PYTORCH_CUDA_ALLOC_CONF as it was, then ";NAME=value" for each other
// switch that was set. It is parsed once, where the capture is read (capture_reader.cpp:
// RunInfo::allocator).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpuleak::format {

// PYTORCH_NO_CUDA_MEMORY_CACHING: 1 turns PyTorch's caching allocator off (every tensor its own
// cudaMalloc); PyTorch reads any other value as on.
enum class TorchCaching : uint8_t { kUnset, kOff, kOther };
// XLA_PYTHON_CLIENT_ALLOCATOR: JAX's allocator. Unset or another value: its BFC arena.
enum class XlaAllocator : uint8_t { kUnset, kPlatform, kAddress, kOther };
// GPULEAK_CUPY, set by `gpuleak run --cupy MODE`.
enum class CupyMode : uint8_t { kUnset, kPerArray, kAsync, kOther };
// GPULEAK_JAX, set by `gpuleak run --jax MODE`.
enum class JaxMode : uint8_t { kUnset, kPerBuffer, kOther };
// GPULEAK_TORCH, set by `gpuleak run --torch MODE`.
enum class TorchMode : uint8_t { kUnset, kPerTensor, kNoCaching, kOther };

// The value an enum above stands for in the environment ("" for kUnset and kOther).
const char *xla_allocator_name(XlaAllocator a);

struct AllocatorSettings {
  // One recorded part: NAME and value for a switch gpuleak records by name (run_facts.cpp), else
  // an empty name and the part as it was (PYTORCH_CUDA_ALLOC_CONF's text). In recorded order.
  struct Part {
    std::string name;
    std::string value;
  };
  std::vector<Part> parts;

  // Each switch's first recorded value.
  bool torch_async_backend = false;  // PYTORCH_CUDA_ALLOC_CONF holds backend:cudaMallocAsync
  bool torch_expandable = false;     // ... expandable_segments:True (or true)
  TorchCaching torch_caching = TorchCaching::kUnset;
  XlaAllocator xla_allocator = XlaAllocator::kUnset;
  CupyMode cupy = CupyMode::kUnset;
  JaxMode jax = JaxMode::kUnset;
  TorchMode torch = TorchMode::kUnset;

  // JAX hands every buffer to CUDA on its own (XLA's platform or address allocator).
  bool jax_per_buffer() const {
    return xla_allocator == XlaAllocator::kPlatform || xla_allocator == XlaAllocator::kAddress;
  }
  // gpuleak switched a framework's allocator itself (gpuleak run --cupy per-array, --jax
  // per-buffer, --torch per-tensor/no-caching): the cost that creates is gpuleak's.
  bool gpuleak_switched() const;

  // The recorded field; "" (or anything unrecognized) gives no switch set.
  static AllocatorSettings parse(std::string_view recorded);
  // The recorded field again (empty parts dropped): parse(text()) gives the same settings.
  std::string text() const;
};

}  // namespace gpuleak::format
