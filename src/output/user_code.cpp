#include "output/user_code.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "text/code_owner.h"
#include "text/paths.h"

namespace gpuleak::output {

using text::basename_of;
using text::dirname_of;
using text::in_installed_packages;
using text::is_interpreter_name;
using text::stdlib_prefix_end;

namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// `path` is `root` or inside it (a root given with or without its trailing slash).
bool under(const std::string &path, std::string root) {
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (root.empty() || path.size() < root.size() || path.compare(0, root.size(), root) != 0) return false;
  return path.size() == root.size() || path[root.size()] == '/' || root == "/";
}

bool under_any(const std::string &path, const std::vector<std::string> &roots) {
  return std::any_of(roots.begin(), roots.end(), [&](const std::string &r) { return under(path, r); });
}

// cudart::..., __cudart..., and the API's own entry points (cudaMalloc, cuMemAlloc_v2): the
// runtime linked into the executable, where the module name cannot tell it from the program.
bool is_cuda_api_name(const std::string &function) {
  if (starts_with(function, "cudart::") || starts_with(function, "__cudart") || starts_with(function, "__cuda"))
    return true;
  for (std::string_view prefix : {"cuda", "cu"})
    if (starts_with(function, prefix) && function.size() > prefix.size() &&
        std::isupper(static_cast<unsigned char>(function[prefix.size()])))
      return true;
  return false;
}

// The interpreter's own options that take a separate argument.
bool option_takes_argument(const std::string &arg) {
  return arg == "-W" || arg == "-X" || arg == "--check-hash-based-pycs";
}

}  // namespace

std::vector<std::string> split_user_code(const std::string &value) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= value.size()) {
    size_t colon = value.find(':', start);
    if (colon == std::string::npos) colon = value.size();
    if (colon > start) out.push_back(value.substr(start, colon - start));
    start = colon + 1;
  }
  return out;
}

UserCode user_code_for(const format::Capture &capture, std::vector<std::string> roots) {
  UserCode u;
  u.roots = std::move(roots);
  const std::vector<std::string> *argv = capture.run ? &capture.run->command : nullptr;
  std::string program;
  if (argv && !argv->empty() && is_interpreter_name(basename_of((*argv)[0]))) {
    for (size_t i = 1; i < argv->size(); ++i) {
      const std::string &arg = (*argv)[i];
      if (arg == "-m" || arg == "-c" || arg == "-") break;  // a module or a command: no script
      if (option_takes_argument(arg)) {
        ++i;
        continue;
      }
      if (starts_with(arg, "-")) continue;
      program = arg;
      break;
    }
  } else if (!capture.modules.empty()) {
    program = capture.modules.front().path;  // the first module record is the executable
  }
  if (!program.empty() && program[0] == '/') u.program_dir = dirname_of(program);
  return u;
}

bool is_user_python_file(const std::string &file, const UserCode &user) {
  if (file.empty()) return false;
  if (under_any(file, user.roots)) return true;
  if (in_installed_packages(file) || text::is_gpuleak_hook_file(file)) return false;
  if (!user.program_dir.empty() && under(file, user.program_dir)) return true;
  return !text::is_stdlib_file(file);
}

bool is_cuda_or_gpuleak_module(const std::string &module_path) {
  std::string base = basename_of(module_path);
  for (std::string_view p : {"libgpuleak", "libcuda.so", "libcudart", "libcupti", "libnvidia-"})
    if (starts_with(base, p)) return true;
  return false;
}

bool is_user_native_frame(const Frame &f, const UserCode &user) {
  if (f.kind != Frame::Kind::kNative) return false;
  if (!f.module.empty() && under_any(f.module, user.roots)) return true;
  if (is_cuda_api_name(f.function)) return false;  // the CUDA runtime linked statically (nvcc's default)
  return !text::is_library_module_path(f.module);  // installed packages, CUDA, frameworks, the interpreter
}

std::string short_path(const std::string &file) {
  for (const char *marker : {"/site-packages/", "/dist-packages/"}) {
    size_t at = file.rfind(marker);
    if (at != std::string::npos) return file.substr(at + std::string_view(marker).size());
  }
  size_t stdlib = stdlib_prefix_end(file);
  if (stdlib != std::string::npos && stdlib < file.size()) return file.substr(stdlib);
  return basename_of(file);
}

}  // namespace gpuleak::output
