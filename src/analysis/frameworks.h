// Which ML framework the program ran, what its allocator settings were, and whether its pool hides
// the program's objects from gpuleak (frameworks.cpp). Private to src/analysis.
#pragma once

#include <string>

#include "format/allocator_mode.h"
#include "format/allocator_settings.h"
#include "format/capture_reader.h"

namespace gpuleak::analysis::detail {

// The ML frameworks with pools of their own the program ran (loaded modules, Python files);
// PyTorch's caching allocator is told by libc10_cuda.so and its settings (analysis.cpp).
struct Frameworks {
  bool jax = false, cupy = false;
};
Frameworks detect_frameworks(const format::Capture &capture);
// The allocator switches the recorder saw at start (none when the capture has no run record).
const format::AllocatorSettings &allocator_settings(const format::Capture &capture);
// A framework pool that hands gpuleak its own blocks instead of the program's objects (CuPy's
// memory pool, JAX's BFC allocator): then allocation patterns are the pool's, not the loop's, and
// no loop is looked for without marks. Empty mode: none.
struct HidingPool {
  format::AllocatorModes mode;  // allocator_mode
  std::string note;             // allocator_note
};
HidingPool hiding_pool(const format::Capture &capture, const Frameworks &frameworks);

// Whether a framework's own allocator told gpuleak about its objects (a PoolTracker record of
// that framework: PyTorch's tensors, CuPy's arrays, JAX's sampled live arrays).
bool pool_tracked(const format::Capture &capture, format::PoolFramework framework);
// With a framework's objects in the capture (pool blocks): the report's allocator mode and note,
// which say what was seen and, for JAX, what is sampled. `iterations`: any were found.
HidingPool pool_objects(const format::Capture &capture, bool iterations);
// Why PyTorch's tensors were not seen when gpuleak's adapter could not attach (format 1.8: no C++
// compiler, no torch or CUDA headers), with what is lost; "" when it attached or never tried.
std::string missing_tracker_note(const format::Capture &capture);
// An allocator switch gpuleak made itself (gpuleak run --cupy per-array, --jax per-buffer, --torch
// per-tensor/no-caching): the cost it creates is gpuleak's, never advice to the program.
bool gpuleak_switched_allocator(const format::Capture &capture);

}  // namespace gpuleak::analysis::detail
