// Whose code a file or a loaded module is, by its path alone: the path rules of the one classifier
// (src/analysis/user_code.h, which the analysis and the outputs both use), and the names the
// outputs need beside it (the caching allocator's module). Header-only, like the rest of src/text.
#pragma once

#include <string>
#include <string_view>

#include "text/paths.h"

namespace gpuleak::text {

// Installed packages: site-packages or dist-packages (venvs, conda, Debian's python3-* packages).
inline bool in_installed_packages(std::string_view path) {
  return path.find("/site-packages/") != std::string_view::npos ||
         path.find("/dist-packages/") != std::string_view::npos;
}

// A framework's package folder, wherever it is installed (site-packages, an editable install, a
// source tree): torch/, jax/, cupy/, triton/...
inline bool in_framework_package(std::string_view path) {
  for (std::string_view dir :
       {"/torch/", "/jax/", "/jaxlib/", "/jax_plugins/", "/cupy/", "/cupy_backends/", "/triton/"})
    if (path.find(dir) != std::string_view::npos) return true;
  return false;
}

// Where the standard library's own part of a path starts: after lib/python3.12/, lib64/python3.11/,
// lib/pypy3.10/ or python312.zip/; npos when the file is not in a standard library.
inline size_t stdlib_prefix_end(std::string_view file) {
  for (std::string_view marker : {"/lib/python", "/lib64/python", "/lib/pypy"}) {
    size_t at = file.find(marker);
    if (at == std::string_view::npos) continue;
    size_t end = file.find('/', at + marker.size());
    if (end != std::string_view::npos) return end + 1;
  }
  size_t zip = file.find(".zip/");
  if (zip != std::string_view::npos && file.rfind("/python", zip) != std::string_view::npos) return zip + 5;
  return std::string_view::npos;
}

// gpuleak's own Python hooks, which run inside the program's allocations (gpuleak._cupy's allocator
// wrapper is the innermost frame of every CuPy array): never the user's code, and never shown. Any
// private module of the gpuleak package (gpuleak/_cupy.py, _jax.py, _hooks.py, _observe.py, ...)
// and its start-up folder; gpuleak/__init__.py (gpuleak.iterate, called by the user) is not one.
inline bool is_gpuleak_hook_file(std::string_view file) {
  const size_t slash = file.rfind('/');
  if (slash == std::string_view::npos) return false;
  const std::string_view base = file.substr(slash + 1), dir = file.substr(0, slash);
  auto ends_with = [](std::string_view s, std::string_view tail) {
    return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
  };
  if (ends_with(dir, "/gpuleak/_startup")) return true;
  return ends_with(dir, "/gpuleak") && base.size() > 4 && base[0] == '_' && ends_with(base, ".py") &&
         base != "__init__.py" && base != "__main__.py";
}

// The standard library, and the interpreter's frozen modules ("<frozen importlib._bootstrap>").
inline bool is_stdlib_file(std::string_view file) {
  return file.substr(0, 8) == "<frozen " || stdlib_prefix_end(file) != std::string_view::npos;
}

// An interpreter's executable or library name: python3.12, pypy3.
inline bool is_interpreter_name(std::string_view base) {
  return base.substr(0, 6) == "python" || base.substr(0, 4) == "pypy";
}

// Module basenames (prefixes) of CUDA and gpuleak, the ML frameworks, the interpreter and the C/C++
// runtime: never the user's code.
inline bool is_library_module_name(std::string_view base) {
  constexpr std::string_view kPrefixes[] = {
      // CUDA and gpuleak
      "libgpuleak", "libcuda.so", "libcudart", "libcupti", "libnvidia-", "libnvrtc", "libnvJitLink", "libnvjitlink",
      "libcublas", "libcudnn", "libcufft", "libcurand", "libcusparse", "libcusolver", "libnccl", "libnvToolsExt",
      "libnvtx", "libcufile", "libnvshmem",
      // frameworks
      "libtorch", "libc10", "libcaffe2", "libshm", "libcupy", "libjax", "jaxlib", "libxla", "xla_extension",
      "libtensorflow", "libonnxruntime", "libtriton",
      // the interpreter and the C/C++ runtime
      "libpython", "libffi", "libc.so", "libc-", "libm.so", "libstdc++", "libgcc_s", "libpthread", "libdl.so",
      "ld-linux", "ld64.so", "libgomp", "libomp", "libiomp"};
  for (std::string_view p : kPrefixes)
    if (base.substr(0, p.size()) == p) return true;
  return false;
}

// A framework's memory allocator itself (PyTorch's c10: its caching allocator's record_trace,
// malloc, allocate): the frames to look past for what asked it for memory.
inline bool is_allocator_module_name(std::string_view base) { return base.substr(0, 6) == "libc10"; }

// A loaded module that is not the user's: an installed package's, the interpreter's extension
// modules (lib-dynload), a library named above, or a static interpreter executable.
inline bool is_library_module_path(const std::string &path) {
  if (in_installed_packages(path) || path.find("/lib-dynload/") != std::string::npos) return true;
  const std::string base = basename_of(path);
  if (is_interpreter_name(base) && base.find(".so") == std::string::npos) return true;
  return is_library_module_name(base);
}

}  // namespace gpuleak::text
