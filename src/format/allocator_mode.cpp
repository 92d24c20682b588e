#include "format/allocator_mode.h"

#include <iterator>

namespace gpuleak::format {

namespace {

struct Named {
  AllocatorMode mode;
  const char *name;
  ModeFramework framework;
};

// In enum order (allocator_mode_name indexes it).
constexpr Named kModes[] = {
    {AllocatorMode::kNone, "none", ModeFramework::kNone},
    {AllocatorMode::kPerAllocation, "per-allocation", ModeFramework::kNone},
    {AllocatorMode::kPerTensorAsync, "per-tensor (cudaMallocAsync)", ModeFramework::kNone},
    {AllocatorMode::kJaxPlatform, "per-buffer (JAX's platform allocator)", ModeFramework::kJax},
    {AllocatorMode::kJaxAddress, "per-buffer (JAX's address allocator)", ModeFramework::kJax},
    {AllocatorMode::kCupyPerArray, "per-array (CuPy without its memory pool)", ModeFramework::kCuPy},
    {AllocatorMode::kCupyAsync, "per-array (CuPy's stream-ordered pool, cudaMallocAsync)", ModeFramework::kCuPy},
    {AllocatorMode::kSegmentsExpandable, "segments (expandable, cuMemCreate/cuMemMap)", ModeFramework::kNone},
    {AllocatorMode::kVirtualMemory, "virtual memory (cuMemCreate/cuMemMap)", ModeFramework::kNone},
    {AllocatorMode::kStreamOrdered, "stream-ordered (cudaMallocAsync)", ModeFramework::kNone},
    {AllocatorMode::kSegmentsPyTorch, "segments (PyTorch's caching allocator)", ModeFramework::kPyTorch},
    {AllocatorMode::kSegments2MiB, "segments (a caching allocator: every block a multiple of 2 MiB)",
     ModeFramework::kNone},
    {AllocatorMode::kCupyPoolHidden, "pool (CuPy's memory pool)", ModeFramework::kCuPy},
    {AllocatorMode::kJaxBfcHidden, "pool (JAX's BFC allocator)", ModeFramework::kJax},
    {AllocatorMode::kPyTorchTrace, "per-tensor (PyTorch's caching allocator, through its trace)",
     ModeFramework::kPyTorch},
    {AllocatorMode::kCupyPoolObjects, "per-array (CuPy's memory pool, through its allocator)", ModeFramework::kCuPy},
    {AllocatorMode::kJaxPlatformSampled, "per-buffer (JAX's platform allocator, live arrays sampled)",
     ModeFramework::kJax},
    {AllocatorMode::kJaxAddressSampled, "per-buffer (JAX's address allocator, live arrays sampled)",
     ModeFramework::kJax},
    {AllocatorMode::kJaxArenaSampled, "per-array (JAX's arena, live arrays sampled)", ModeFramework::kJax},
};

const Named &named(AllocatorMode mode) {
  const size_t i = static_cast<size_t>(mode);
  return i < std::size(kModes) ? kModes[i] : kModes[0];
}

}  // namespace

const char *allocator_mode_name(AllocatorMode mode) { return named(mode).name; }

ModeFramework framework_of(AllocatorMode mode) { return named(mode).framework; }

bool allocator_mode_from_name(std::string_view name, AllocatorMode *mode) {
  for (const Named &n : kModes)
    if (name == n.name) {
      *mode = n.mode;
      return true;
    }
  return false;
}

bool AllocatorModes::segments_only() const {
  for (AllocatorMode m : modes)
    if (m == AllocatorMode::kSegmentsExpandable || m == AllocatorMode::kSegmentsPyTorch ||
        m == AllocatorMode::kSegments2MiB)
      return true;
  return false;
}

std::string AllocatorModes::text() const {
  std::string out;
  for (size_t i = 0; i < modes.size(); ++i) out += (i ? "; " : "") + std::string(allocator_mode_name(modes[i]));
  return out;
}

AllocatorModes AllocatorModes::parse(std::string_view text) {
  AllocatorModes out;
  for (size_t from = 0; from <= text.size();) {
    size_t end = text.find("; ", from);
    AllocatorMode m;
    if (allocator_mode_from_name(text.substr(from, end == std::string_view::npos ? std::string_view::npos : end - from),
                                 &m))
      out.modes.push_back(m);
    if (end == std::string_view::npos) break;
    from = end + 2;
  }
  return out;
}

}  // namespace gpuleak::format
