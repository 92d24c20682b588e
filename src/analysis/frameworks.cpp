// Which frames are the user's and which belong to the frameworks, CUDA and the interpreter; which
// ML framework the program ran, and whether its pool hides the objects from gpuleak.
//
// Decided from what the capture holds: the loaded modules' paths (native frames), the Python
// frames' file names, and the allocator settings the recorder saw at start (run_facts.cpp). A
// coarse classifier by location, not by name: a user's own native library is anything outside the
// CUDA, interpreter and framework libraries and outside site-packages; a user's own Python file is
// anything outside the standard library, site-packages and the frameworks' package folders.
#include <algorithm>
#include <cstring>

#include "analysis/internal.h"
#include "text/code_owner.h"
#include "text/escape.h"

namespace gpuleak::analysis::detail {

namespace {

bool has(const std::string &s, const char *needle) { return s.find(needle) != std::string::npos; }

bool starts(const std::string &s, const char *prefix) { return s.compare(0, std::strlen(prefix), prefix) == 0; }

// A framework's package folder, wherever it is installed (an editable install, a source tree).
bool framework_package(const std::string &path) {
  for (const char *dir : {"/torch/", "/jax/", "/jaxlib/", "/jax_plugins/", "/cupy/", "/cupy_backends/", "/triton/"})
    if (has(path, dir)) return true;
  return false;
}

}  // namespace

// The rules of src/text/code_owner.h (shared with the headline), plus the frameworks' package
// folders wherever they are (an editable install of torch is still torch's code here).
bool library_python_file(const std::string &f) {
  if (f.empty() || f[0] == '<') return true;  // <frozen importlib._bootstrap>, <string>
  return text::in_installed_packages(f) || framework_package(f) || text::is_stdlib_file(f) ||
         text::is_gpuleak_hook_file(f);
}

bool library_native_module(const std::string &path) {
  return framework_package(path) || text::is_library_module_path(path);
}

UserCode::UserCode(const format::Capture &capture) : capture_(capture) {
  for (const format::Module &m : capture.modules)
    for (const auto &[lo, hi] : m.segments) segments_.push_back({lo, hi, library_native_module(m.path)});
  std::sort(segments_.begin(), segments_.end(), [](const Segment &a, const Segment &b) { return a.lo < b.lo; });
}

bool UserCode::python_file(uint32_t file_id) const {
  auto [it, fresh] = files_.try_emplace(file_id, false);
  if (fresh) it->second = file_id != 0 && !library_python_file(capture_.string(file_id));
  return it->second;
}

bool UserCode::native_address(uint64_t pc) const {
  auto it =
      std::upper_bound(segments_.begin(), segments_.end(), pc, [](uint64_t x, const Segment &s) { return x < s.lo; });
  if (it == segments_.begin()) return false;  // in no known module: nothing to say it is the user's
  --it;
  return pc < it->hi && !it->library;
}

UserCode::Answer UserCode::site(const Site &site) const {
  bool frames = false;
  auto py = capture_.stacks.find(site.py_stack_id);
  if (site.py_stack_id != 0 && py != capture_.stacks.end() && py->second.kind == 1) {
    const std::vector<uint64_t> &w = py->second.frames;
    for (size_t i = 0; i + 1 < w.size(); i += 2) {
      frames = true;
      if (python_file(static_cast<uint32_t>(w[i] >> 32))) return Answer::kUser;
    }
  }
  auto native = capture_.stacks.find(site.stack_id);
  if (site.stack_id != 0 && native != capture_.stacks.end() && native->second.kind == 0) {
    for (uint64_t pc : native->second.frames) {
      frames = true;
      if (native_address(pc)) return Answer::kUser;
    }
  }
  return frames ? Answer::kFramework : Answer::kUnknown;
}

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
    if (stack.kind != 1) continue;
    for (size_t i = 0; i + 1 < stack.frames.size(); i += 2) {
      const uint32_t file = static_cast<uint32_t>(stack.frames[i] >> 32);
      if (seen.try_emplace(file, true).second) look(capture.string(file));
    }
  }
  return f;
}

// The value of NAME in the recorder's allocator settings ("conf;NAME=value;..."), "" when unset.
std::string allocator_setting(const format::Capture &capture, const char *name) {
  const std::string env = capture.run ? capture.run->allocator_env : std::string();
  const std::string key = std::string(name) + "=";
  for (size_t from = 0; from <= env.size();) {
    size_t semi = env.find(';', from);
    std::string part = env.substr(from, semi == std::string::npos ? std::string::npos : semi - from);
    if (starts(part, key.c_str())) return part.substr(key.size());
    if (semi == std::string::npos) break;
    from = semi + 1;
  }
  return "";
}

bool pool_tracked(const format::Capture &capture, format::PoolFramework framework) {
  for (const format::PoolTracker &t : capture.pool_trackers)
    if (t.framework == static_cast<int32_t>(framework)) return true;
  return false;
}

namespace {
bool jax_per_buffer(const format::Capture &capture) {
  const std::string a = allocator_setting(capture, "XLA_PYTHON_CLIENT_ALLOCATOR");
  return a == "platform" || a == "address";
}
}  // namespace

// Only when gpuleak saw no objects of that pool: its own allocator wrapper (CuPy) or sampler (JAX)
// did not attach (plain LD_PRELOAD without gpuleak's Python package, `--cupy segments`).
HidingPool hiding_pool(const format::Capture &capture, const Frameworks &f) {
  using format::PoolFramework;
  const std::string cupy = allocator_setting(capture, "GPULEAK_CUPY");
  if (f.cupy && cupy != "per-array" && cupy != "async" && !pool_tracked(capture, PoolFramework::kCuPy))
    return {"pool (CuPy's memory pool)",
            "gpuleak saw CuPy's memory pool, not arrays: the pool keeps freed blocks and reuses them, so a leak "
            "shows only when the pool grows, and a loop found without marks would count the pool's growth steps; "
            "under `gpuleak run` (without --cupy segments) every array is seen inside the pool, or mark the loop "
            "(`gpuleak run --loop FILE:LINE`)"};
  if (f.jax && !jax_per_buffer(capture) && !pool_tracked(capture, PoolFramework::kJax))
    return {"pool (JAX's BFC allocator)",
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
  HidingPool out;
  std::vector<std::string> modes, notes;
  if (!torch.empty() || (cupy.empty() && jax.empty())) {
    modes.push_back("per-tensor (PyTorch's caching allocator, through its trace)");
    notes.push_back("tensors were seen through " +
                    (torch.empty() ? std::string("a caching allocator's trace") : torch) +
                    ": leaks are per tensor site; the segments that hold them are listed apart");
  }
  if (!cupy.empty()) {
    modes.push_back("per-array (CuPy's memory pool, through its allocator)");
    notes.push_back("CuPy arrays were seen through " + cupy +
                    ": leaks are per array site; the pool's chunks (cudaMalloc) that hold them are listed apart");
  }
  if (!jax.empty()) {
    modes.push_back("per-array (JAX's arena, live arrays sampled)");
    std::string note = "JAX arrays were seen through " + jax +
                       ": leaks are per array site, from the arrays that survive boundaries; the arena that holds "
                       "them is listed apart";
    if (!iterations)
      note +=
          "; no iteration boundary was seen, so only the arrays live at exit were sampled: mark the loop "
          "(gpuleak.iterate, or `gpuleak run --loop FILE:LINE`)";
    notes.push_back(std::move(note));
  }
  for (size_t i = 0; i < modes.size(); ++i) {
    out.mode += (i ? "; " : "") + modes[i];
    out.note += (i ? "; " : "") + notes[i];
  }
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
  const std::string torch = allocator_setting(capture, "GPULEAK_TORCH");
  return allocator_setting(capture, "GPULEAK_CUPY") == "per-array" ||
         allocator_setting(capture, "GPULEAK_JAX") == "per-buffer" || torch == "per-tensor" || torch == "no-caching";
}

}  // namespace gpuleak::analysis::detail
