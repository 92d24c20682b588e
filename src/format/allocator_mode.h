// How the program's allocator handed memory to CUDA, as the analysis names it: the report's
// run.allocator_mode (docs/report-format.md), the analysis's decisions (a caching allocator's
// segments hide small leaks) and the outputs' wording (whose pool holds the segments) all read this
// one enum instead of matching prose. Each mode's name is part of the report format: written
// exactly as listed, never renamed within a schema version.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpuleak::format {

enum class AllocatorMode : uint8_t {
  // From the allocation pattern and the allocator environment (analysis.cpp allocator_mode).
  kNone,                // "none": no allocation
  kPerAllocation,       // "per-allocation"
  kPerTensorAsync,      // "per-tensor (cudaMallocAsync)"
  kJaxPlatform,         // "per-buffer (JAX's platform allocator)"
  kJaxAddress,          // "per-buffer (JAX's address allocator)"
  kCupyPerArray,        // "per-array (CuPy without its memory pool)"
  kCupyAsync,           // "per-array (CuPy's stream-ordered pool, cudaMallocAsync)"
  kSegmentsExpandable,  // "segments (expandable, cuMemCreate/cuMemMap)"
  kVirtualMemory,       // "virtual memory (cuMemCreate/cuMemMap)"
  kStreamOrdered,       // "stream-ordered (cudaMallocAsync)"
  kSegmentsPyTorch,     // "segments (PyTorch's caching allocator)"
  kSegments2MiB,        // "segments (a caching allocator: every block a multiple of 2 MiB)"
  // A framework's pool seen, its objects not (frameworks.cpp hiding_pool).
  kCupyPoolHidden,  // "pool (CuPy's memory pool)"
  kJaxBfcHidden,    // "pool (JAX's BFC allocator)"
  // A framework's objects seen through its own interface (frameworks.cpp pool_objects).
  kPyTorchTrace,        // "per-tensor (PyTorch's caching allocator, through its trace)"
  kCupyPoolObjects,     // "per-array (CuPy's memory pool, through its allocator)"
  kJaxPlatformSampled,  // "per-buffer (JAX's platform allocator, live arrays sampled)"
  kJaxAddressSampled,   // "per-buffer (JAX's address allocator, live arrays sampled)"
  kJaxArenaSampled,     // "per-array (JAX's arena, live arrays sampled)"
};

// The report's name of a mode (above).
const char *allocator_mode_name(AllocatorMode mode);
// The mode a name stands for; false for a name no mode has (a newer gpuleak's report).
bool allocator_mode_from_name(std::string_view name, AllocatorMode *mode);

// The framework a mode names, if any (by the allocator the name says).
enum class ModeFramework : uint8_t { kNone, kPyTorch, kCuPy, kJax };
ModeFramework framework_of(AllocatorMode mode);

// What a run's allocator was: one mode, or one per framework whose objects were seen (PyTorch's,
// CuPy's, JAX's, in that order). Empty: not decided yet.
struct AllocatorModes {
  std::vector<AllocatorMode> modes;

  bool empty() const { return modes.empty(); }
  // What cudaMalloc saw were a caching allocator's segments, not the program's objects: a leak
  // smaller than a segment may be hidden (the "segments (...)" modes).
  bool segments_only() const;
  // The report's run.allocator_mode: the names joined by "; ".
  std::string text() const;
  // The modes of a report's run.allocator_mode text; parts no mode has are skipped.
  static AllocatorModes parse(std::string_view text);
};

}  // namespace gpuleak::format
