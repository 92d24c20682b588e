#include "format/allocator_settings.h"

namespace gpuleak::format {

namespace {

// The switches run_facts.cpp records as NAME=value, after PYTORCH_CUDA_ALLOC_CONF's text.
constexpr std::string_view kNamed[] = {"PYTORCH_NO_CUDA_MEMORY_CACHING",
                                       "XLA_PYTHON_CLIENT_ALLOCATOR",
                                       "XLA_PYTHON_CLIENT_PREALLOCATE",
                                       "GPULEAK_CUPY",
                                       "GPULEAK_JAX",
                                       "GPULEAK_TORCH"};

XlaAllocator xla_of(std::string_view v) {
  return v == "platform" ? XlaAllocator::kPlatform : v == "address" ? XlaAllocator::kAddress : XlaAllocator::kOther;
}
CupyMode cupy_of(std::string_view v) {
  return v == "per-array" ? CupyMode::kPerArray : v == "async" ? CupyMode::kAsync : CupyMode::kOther;
}
TorchCaching caching_of(std::string_view v) { return v == "1" ? TorchCaching::kOff : TorchCaching::kOther; }
JaxMode jax_of(std::string_view v) { return v == "per-buffer" ? JaxMode::kPerBuffer : JaxMode::kOther; }
TorchMode torch_of(std::string_view v) {
  return v == "per-tensor" ? TorchMode::kPerTensor : v == "no-caching" ? TorchMode::kNoCaching : TorchMode::kOther;
}

// Sets *field from a value when no earlier part set it: the first recorded value counts.
template <typename E, typename F>
void first(E *field, std::string_view value, F of) {
  if (*field == E::kUnset) *field = of(value);
}

}  // namespace

const char *xla_allocator_name(XlaAllocator a) {
  switch (a) {
    case XlaAllocator::kPlatform:
      return "platform";
    case XlaAllocator::kAddress:
      return "address";
    default:
      return "";
  }
}

bool AllocatorSettings::gpuleak_switched() const {
  return cupy == CupyMode::kPerArray || jax == JaxMode::kPerBuffer || torch == TorchMode::kPerTensor ||
         torch == TorchMode::kNoCaching;
}

std::string AllocatorSettings::text() const {
  std::string out;
  for (const Part &p : parts) {
    if (!out.empty()) out += ';';
    if (!p.name.empty()) out += p.name + "=";
    out += p.value;
  }
  return out;
}

AllocatorSettings AllocatorSettings::parse(std::string_view recorded) {
  AllocatorSettings s;
  for (size_t from = 0; from <= recorded.size();) {
    const size_t semi = recorded.find(';', from);
    const std::string_view part = recorded.substr(from, semi == std::string_view::npos ? semi : semi - from);
    from = semi == std::string_view::npos ? recorded.size() + 1 : semi + 1;
    if (part.empty()) continue;
    Part p;
    for (std::string_view name : kNamed)
      if (part.size() > name.size() && part.compare(0, name.size(), name) == 0 && part[name.size()] == '=') {
        p.name = name;
        p.value = part.substr(name.size() + 1);
        break;
      }
    if (p.name.empty()) {
      p.value = part;
      auto holds = [&](std::string_view needle) { return part.find(needle) != std::string_view::npos; };
      s.torch_async_backend |= holds("backend:cudaMallocAsync");
      s.torch_expandable |= holds("expandable_segments:True") || holds("expandable_segments:true");
    } else if (p.name == "PYTORCH_NO_CUDA_MEMORY_CACHING") {
      first(&s.torch_caching, p.value, caching_of);
    } else if (p.name == "XLA_PYTHON_CLIENT_ALLOCATOR") {
      first(&s.xla_allocator, p.value, xla_of);
    } else if (p.name == "GPULEAK_CUPY") {
      first(&s.cupy, p.value, cupy_of);
    } else if (p.name == "GPULEAK_JAX") {
      first(&s.jax, p.value, jax_of);
    } else if (p.name == "GPULEAK_TORCH") {
      first(&s.torch, p.value, torch_of);
    }
    s.parts.push_back(std::move(p));
  }
  return s;
}

}  // namespace gpuleak::format
