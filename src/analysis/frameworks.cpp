// Which ML framework the program ran, and whether its pool hides the objects from gpuleak (whose
// code a frame is: user_code.h).
//
// Decided from what the capture holds: the loaded modules' paths, the Python frames' file names,
// and the allocator settings the recorder saw at start (run_facts.cpp).
#include <algorithm>

#include "analysis/frameworks.h"
#include "text/escape.h"

namespace gpuleak::analysis::detail {

namespace {

bool has(const std::string &s, const char *needle) { return s.find(needle) != std::string::npos; }

}  // namespace

Frameworks detect_frameworks(const format::Capture &capture) {
  Frameworks f;
  auto look = [&](const std::string &path) {
    if (has(path, "/jax/") || has(path, "/jaxlib/") || has(path, "/jax_plugins/") || has(path, "xla_extension") ||
        has(path, "xla_cuda_plugin"))
      f.jax = true;
    if (has(path, "/cupy/") || has(path, "/cupy_backends/")) f.cupy = true;
  };
  for (const format::Module &m : capture.modules) look(m.path);
  std::unordered_map<uint32_t, bool> seen;
  for (const auto &[id, stack] : capture.stacks) {
    if (stack.kind != format::StackKind::kPython) continue;
    for (size_t i = 0; i + 1 < stack.frames.size(); i += 2) {
      const uint32_t file = static_cast<uint32_t>(stack.frames[i] >> 32);
      if (seen.try_emplace(file, true).second) look(capture.string(file));
    }
  }
  return f;
}

const format::AllocatorSettings &allocator_settings(const format::Capture &capture) {
  static const format::AllocatorSettings kNone;
  return capture.run ? capture.run->allocator : kNone;
}

bool pool_tracked(const format::Capture &capture, format::PoolFramework framework) {
  for (const format::PoolTracker &t : capture.pool_trackers)
    if (t.framework == static_cast<int32_t>(framework)) return true;
  return false;
}

// Only when gpuleak saw no objects of that pool: its own allocator wrapper (CuPy) or sampler (JAX)
// did not attach (plain LD_PRELOAD without gpuleak's Python package, `--cupy segments`).
HidingPool hiding_pool(const format::Capture &capture, const Frameworks &f) {
  using format::CupyMode;
  using format::PoolFramework;
  const format::AllocatorSettings &settings = allocator_settings(capture);
  if (f.cupy && settings.cupy != CupyMode::kPerArray && settings.cupy != CupyMode::kAsync &&
      !pool_tracked(capture, PoolFramework::kCuPy))
    return {{{format::AllocatorMode::kCupyPoolHidden}},
            "gpuleak saw CuPy's memory pool, not arrays: the pool keeps freed blocks and reuses them, so a leak "
            "shows only when the pool grows, and a loop found without marks would count the pool's growth steps; "
            "under `gpuleak run` (without --cupy segments) every array is seen inside the pool, or mark the loop "
            "(`gpuleak run --loop FILE:LINE`)"};
  if (f.jax && !settings.jax_per_buffer() && !pool_tracked(capture, PoolFramework::kJax))
    return {{{format::AllocatorMode::kJaxBfcHidden}},
            "gpuleak saw the region JAX's BFC allocator preallocates and grows, not buffers: a leak inside it is "
            "hidden, and a loop found without marks would count the pool's growth steps; under `gpuleak run` "
            "(without --jax segments) JAX's live arrays are sampled at each iteration boundary, or mark the loop "
            "(`gpuleak run --loop FILE:LINE`)"};
  return {};
}

HidingPool pool_objects(const format::Capture &capture, bool iterations) {
  // The last description of each framework: a later one says what the program changed (CuPy).
  std::string torch, cupy, jax;
  for (const format::PoolTracker &t : capture.pool_trackers) {
    if (t.framework == static_cast<int32_t>(format::PoolFramework::kPyTorch)) torch = t.description;
    if (t.framework == static_cast<int32_t>(format::PoolFramework::kCuPy)) cupy = t.description;
    if (t.framework == static_cast<int32_t>(format::PoolFramework::kJax)) jax = t.description;
  }
  using format::AllocatorMode;
  HidingPool out;
  std::vector<AllocatorMode> &modes = out.mode.modes;
  std::vector<std::string> notes;
  if (!torch.empty() || (cupy.empty() && jax.empty())) {
    modes.push_back(AllocatorMode::kPyTorchTrace);
    notes.push_back("tensors were seen through " +
                    (torch.empty() ? std::string("a caching allocator's trace") : torch) +
                    ": leaks are per tensor site; the segments that hold them are listed apart");
  }
  if (!cupy.empty()) {
    modes.push_back(AllocatorMode::kCupyPoolObjects);
    notes.push_back("CuPy arrays were seen through " + cupy +
                    ": leaks are per array site; the pool's chunks (cudaMalloc) that hold them are listed apart");
  }
  const format::AllocatorSettings &settings = allocator_settings(capture);
  if (!jax.empty() && settings.jax_per_buffer()) {
    // Every buffer its own CUDA allocation; the sampled arrays give the buffers that hold them
    // their lines (XLA makes a jitted step's outputs on a thread with no Python frame of the user's).
    const bool platform = settings.xla_allocator == format::XlaAllocator::kPlatform;
    modes.push_back(platform ? AllocatorMode::kJaxPlatformSampled : AllocatorMode::kJaxAddressSampled);
    notes.push_back(std::string("every JAX buffer was its own CUDA allocation (XLA_PYTHON_CLIENT_ALLOCATOR=") +
                    format::xla_allocator_name(settings.xla_allocator) +
                    "); the live arrays sampled at each iteration boundary (" + jax +
                    ") give the buffers that hold them the lines that made them: leaks are per array site; "
                    "buffers no array held are seen with their own frames");
  } else if (!jax.empty()) {
    modes.push_back(AllocatorMode::kJaxArenaSampled);
    std::string note = "JAX arrays were seen through " + jax +
                       ": leaks are per array site, from the arrays that survive boundaries; the arena that holds "
                       "them is listed apart";
    if (!iterations)
      note +=
          "; no iteration boundary was seen, so only the arrays live at exit were sampled: mark the loop "
          "(gpuleak.iterate, or `gpuleak run --loop FILE:LINE`)";
    notes.push_back(std::move(note));
  }
  for (size_t i = 0; i < notes.size(); ++i) out.note += (i ? "; " : "") + notes[i];
  return out;
}

std::string missing_tracker_note(const format::Capture &capture) {
  if (pool_tracked(capture, format::PoolFramework::kPyTorch)) return "";
  std::string why;  // the last reason: a later attempt (the next CUDA initialization) says more
  for (const format::PoolTracker &t : capture.pool_missing)
    if (t.framework == static_cast<int32_t>(format::PoolFramework::kPyTorch)) why = t.description;
  if (why.empty()) return "";
  return "PyTorch's tensors were not seen: " + text::printable(why) +
         ". gpuleak saw the caching allocator's segments instead, so the per-tensor call sites are lost (a leak "
         "smaller than the cached segments may be hidden); `gpuleak doctor -- python ...` checks what the "
         "adapter needs, or rerun with `gpuleak run --torch per-tensor` (PYTORCH_CUDA_ALLOC_CONF="
         "backend:cudaMallocAsync)";
}

bool gpuleak_switched_allocator(const format::Capture &capture) {
  return allocator_settings(capture).gpuleak_switched();
}

}  // namespace gpuleak::analysis::detail
