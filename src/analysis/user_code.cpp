#include "analysis/user_code.h"

#include <algorithm>
#include <cctype>

#include "text/code_owner.h"
#include "text/paths.h"

namespace gpuleak::analysis {

using text::basename_of;
using text::dirname_of;

namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// `path` is `root` or inside it (a root given with or without its trailing slash).
bool under(std::string_view path, std::string_view root) {
  while (root.size() > 1 && root.back() == '/') root.remove_suffix(1);
  if (root.empty() || path.size() < root.size() || path.compare(0, root.size(), root) != 0) return false;
  return path.size() == root.size() || path[root.size()] == '/' || root == "/";
}

bool under_any(std::string_view path, const std::vector<std::string> &roots) {
  return std::any_of(roots.begin(), roots.end(), [&](const std::string &r) { return under(path, r); });
}

// A framework's folder in the part of `path` below the program's directory when it is under it,
// else anywhere: a project in ~/torch/ is not torch, an editable torch inside the project is.
bool in_framework(std::string_view path, const UserCode &user) {
  if (!user.program_dir.empty() && under(path, user.program_dir))
    path.remove_prefix(user.program_dir == "/" ? 0 : user.program_dir.size());
  return text::in_framework_package(path);
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
  if (argv && !argv->empty() && text::is_interpreter_name(basename_of((*argv)[0]))) {
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
  if (file.empty() || file[0] == '<') return false;  // <frozen ...>, <string>
  if (under_any(file, user.roots)) return true;
  if (text::in_installed_packages(file) || text::is_gpuleak_hook_file(file)) return false;
  if (in_framework(file, user)) return false;
  if (!user.program_dir.empty() && under(file, user.program_dir)) return true;
  return !text::is_stdlib_file(file);
}

bool is_user_native(const std::string &module, const std::string &function, bool in_python, const UserCode &user) {
  if (module.empty()) return false;
  if (under_any(module, user.roots)) return true;
  if (!function.empty() && is_cuda_api_name(function)) return false;  // nvcc's default: cudart linked in
  if (text::is_library_module_path(module) || in_framework(module, user)) return false;
  if (in_python) return !user.program_dir.empty() && under(module, user.program_dir);
  return true;
}

CodeOwner::CodeOwner(const format::Capture &capture, UserCode user) : capture_(capture), user_(std::move(user)) {
  for (const format::Module &m : capture.modules) {
    const bool native = is_user_native(m.path, "", false, user_), in_python = is_user_native(m.path, "", true, user_);
    for (const auto &[lo, hi] : m.segments) segments_.push_back({lo, hi, native, in_python});
  }
  std::sort(segments_.begin(), segments_.end(), [](const Segment &a, const Segment &b) { return a.lo < b.lo; });
}

bool CodeOwner::python_file(uint32_t file_id) const {
  auto [it, fresh] = files_.try_emplace(file_id, false);
  if (fresh) it->second = file_id != 0 && is_user_python_file(capture_.string(file_id), user_);
  return it->second;
}

bool CodeOwner::native_address(uint64_t pc, bool in_python) const {
  auto it =
      std::upper_bound(segments_.begin(), segments_.end(), pc, [](uint64_t x, const Segment &s) { return x < s.lo; });
  if (it == segments_.begin()) return false;  // in no known module: nothing to say it is the user's
  --it;
  return pc < it->hi && (in_python ? it->user_in_python : it->user_native);
}

CodeOwner::Answer CodeOwner::site(const Site &site) const {
  bool frames = false, python = false;
  auto py = capture_.stacks.find(site.py_stack_id);
  if (site.py_stack_id != 0 && py != capture_.stacks.end() && py->second.kind == format::StackKind::kPython) {
    const std::vector<uint64_t> &w = py->second.frames;
    for (size_t i = 0; i + 1 < w.size(); i += 2) {
      frames = python = true;
      if (python_file(static_cast<uint32_t>(w[i] >> 32))) return Answer::kUser;
    }
  }
  auto native = capture_.stacks.find(site.stack_id);
  if (site.stack_id != 0 && native != capture_.stacks.end() && native->second.kind == format::StackKind::kNative) {
    for (uint64_t pc : native->second.frames) {
      frames = true;
      if (native_address(pc, python)) return Answer::kUser;
    }
  }
  return frames ? Answer::kLibrary : Answer::kUnknown;
}

}  // namespace gpuleak::analysis
