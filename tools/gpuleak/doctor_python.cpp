// gpuleak doctor: a Python program (doctor_internal.h's check_python). Everything is looked up on
// disk: the doctor never runs Python, so the interpreter's version comes from its name or its
// library folder, torch from the folders the interpreter would search, and the PyTorch adapter's
// needs (tools/python/gpuleak/_torch.py: a C++ compiler, torch's headers, CUDA's headers, or an
// adapter built ahead of time) from the same places that module looks in.
#include <glob.h>
#include <limits.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>

#include "doctor_internal.h"
#include "text/paths.h"

namespace gpuleak::cli::doctor_detail {

namespace {

using text::basename_of;
using text::dirname_of;

// A Python interpreter: where its torch would be, looked up on disk (the doctor never runs Python).
// The interpreter's minor version (11 for 3.11) as far as its name or its library folder tells
// ("python3.11", ".../lib/python3.11/site-packages/torch"), -1 when neither does: the doctor
// does not run the program, so it never asks the interpreter itself.
int python_minor_version(const std::string &python, const std::string &torch_dir) {
  auto minor_after = [](const std::string &text, size_t from) {
    int minor = -1;
    for (size_t at = text.find("python3.", from); at != std::string::npos; at = text.find("python3.", at + 1)) {
      size_t digits = at + 8, end = digits;
      while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
      if (end > digits && end - digits <= 2) minor = std::atoi(text.c_str() + digits);
    }
    return minor;
  };
  char real[PATH_MAX];
  std::string resolved = realpath(python.c_str(), real) ? std::string(real) : python;
  int minor = minor_after(resolved, resolved.size() - basename_of(resolved).size());
  if (minor < 0) minor = minor_after(python, python.size() - basename_of(python).size());
  if (minor < 0) minor = minor_after(torch_dir, 0);
  return minor;
}

// What a Python program's call sites will hold, by interpreter version (docs/python.md
// "Supported interpreters": CPython 3.10 to 3.13 get Python frames beside the native stack).
std::string python_stacks_text(int minor) {
  if (minor >= 10 && minor <= 13)
    return "Python 3." + std::to_string(minor) +
           " interpreter: Python frames (file:line) beside native stacks (docs/python.md)";
  if (minor >= 0)
    return "Python 3." + std::to_string(minor) +
           " interpreter: native stacks only (Python frames need CPython 3.10-3.13; docs/python.md)";
  return "Python interpreter of unknown version (the doctor does not run it): CPython 3.10-3.13 get Python frames "
         "beside native stacks, other versions native stacks only (docs/python.md)";
}

std::string find_torch(const std::string &python) {
  std::vector<std::string> patterns;
  char real[PATH_MAX];
  std::vector<std::string> prefixes = {dirname_of(dirname_of(python))};
  if (realpath(python.c_str(), real) != nullptr) prefixes.push_back(dirname_of(dirname_of(real)));
  for (const auto &prefix : prefixes) {
    patterns.push_back(prefix + "/lib/python3*/site-packages/torch/__init__.py");
    patterns.push_back(prefix + "/lib/python3/dist-packages/torch/__init__.py");
    patterns.push_back(prefix + "/local/lib/python3*/dist-packages/torch/__init__.py");
  }
  if (const char *home = std::getenv("HOME"))
    patterns.push_back(std::string(home) + "/.local/lib/python3*/site-packages/torch/__init__.py");
  if (const char *pythonpath = std::getenv("PYTHONPATH")) {
    std::string entries = pythonpath;
    for (size_t start = 0; start < entries.size();) {
      size_t end = std::min(entries.find(':', start), entries.size());
      if (end > start) patterns.push_back(entries.substr(start, end - start) + "/torch/__init__.py");
      start = end + 1;
    }
  }
  for (const auto &pattern : patterns) {
    glob_t found;
    if (glob(pattern.c_str(), GLOB_NOSORT, nullptr, &found) == 0 && found.gl_pathc > 0) {
      std::string dir = dirname_of(found.gl_pathv[0]);
      globfree(&found);
      return dir;
    }
    globfree(&found);
  }
  return "";
}
bool is_file(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string env_or(const char *name, const std::string &fallback) {
  const char *value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}

// torch's version as torch/version.py writes it (`__version__ = '2.5.1+cu124'`); "" if unread.
std::string torch_version(const std::string &torch_dir) {
  const std::string path = torch_dir + "/version.py";
  struct stat st;
  Fd file;
  std::string error;
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || !open_regular(path, &file, &error)) return "";
  std::string text(4096, '\0');
  ssize_t n = pread(file.fd, text.data(), text.size(), 0);
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  size_t at = text.find("__version__");
  if (at == std::string::npos) return "";
  size_t open = text.find_first_of("'\"", at);
  if (open == std::string::npos) return "";
  size_t close = text.find(text[open], open + 1);
  if (close == std::string::npos || close - open > 128) return "";
  return text.substr(open + 1, close - open - 1);
}

// A glob pattern that matches `text` literally.
std::string glob_literal(const std::string &text) {
  std::string out;
  for (char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// An adapter gpuleak._torch built for this torch version: GPULEAK_CACHE_DIR, else
// $XDG_CACHE_HOME/gpuleak, else ~/.cache/gpuleak, then torch-<version>-<key>/libgpuleak_torch.so.
std::string cached_adapter(const std::string &version) {
  std::string root = env_or("GPULEAK_CACHE_DIR", "");
  if (root.empty()) root = env_or("XDG_CACHE_HOME", env_or("HOME", "") + "/.cache") + "/gpuleak";
  std::string name = version;
  for (char &c : name)
    if (c == '/') c = '_';
  const std::string pattern = glob_literal(root + "/torch-" + name) + "-*/libgpuleak_torch.so";
  glob_t found;
  std::string path;
  if (glob(pattern.c_str(), GLOB_NOSORT, nullptr, &found) == 0 && found.gl_pathc > 0) path = found.gl_pathv[0];
  globfree(&found);
  return path;
}

// cuda_runtime_api.h's folder, searched as gpuleak._torch does; "" when none has it.
std::string cuda_include(const std::string &torch_dir) {
  std::vector<std::string> dirs;
  for (const char *root : {"CUDA_HOME", "CUDA_PATH"})
    if (std::string r = env_or(root, ""); !r.empty()) dirs.push_back(r + "/include");
  dirs.push_back("/usr/local/cuda/include");
  const std::string site = dirname_of(torch_dir);
  dirs.push_back(site + "/nvidia/cu13/include");
  dirs.push_back(site + "/nvidia/cuda_runtime/include");
  for (const auto &d : dirs)
    if (is_file(d + "/cuda_runtime_api.h")) return d;
  return "";
}

// The compiler gpuleak._torch would use: $CXX, else c++ or g++ on PATH.
std::string compiler() {
  std::string path, error;
  if (std::string cxx = env_or("CXX", ""); !cxx.empty()) return resolve_like_execvp(cxx, &path, &error) ? path : "";
  for (const char *name : {"c++", "g++"})
    if (resolve_like_execvp(name, &path, &error)) return path;
  return "";
}

// The default PyTorch mode (`gpuleak run`, GPULEAK_TORCH_TRACKER=1) sees each tensor through an
// adapter compiled against the installed torch at its first CUDA use, or built ahead of time.
void check_adapter(const std::string &torch_dir, std::vector<DoctorCheck> *out) {
  const std::string version = torch_version(torch_dir);
  const std::string shown = version.empty() ? std::string("this torch") : "torch " + escape_untrusted(version);
  if (const char *prebuilt = std::getenv("GPULEAK_TORCH_ADAPTER"); prebuilt != nullptr && *prebuilt != '\0') {
    if (is_file(prebuilt))
      add(out, "pytorch", Level::kOk,
          "GPULEAK_TORCH_ADAPTER=" + escape_untrusted(prebuilt) +
              ": the per-tensor adapter built ahead of time (it "
              "must have been built for " +
              shown + ")");
    else
      add(out, "pytorch", Level::kWarn,
          "GPULEAK_TORCH_ADAPTER=" + escape_untrusted(prebuilt) +
              " is no file: tensors' call sites are lost (the report shows the caching allocator's segments)");
    return;
  }
  if (!version.empty()) {
    if (std::string cached = cached_adapter(version); !cached.empty()) {
      add(out, "pytorch", Level::kOk,
          "the per-tensor adapter for " + shown + " is cached (" + escape_untrusted(cached) +
              "): no compiler or headers needed at run time");
      return;
    }
  }
  const std::string cxx = compiler(), cuda = cuda_include(torch_dir);
  const bool headers = is_file(torch_dir + "/include/c10/cuda/CUDACachingAllocator.h");
  if (!cxx.empty() && !cuda.empty() && headers) {
    add(out, "pytorch", Level::kOk,
        "the per-tensor adapter can be built at the first CUDA use: " + escape_untrusted(cxx) + ", " + shown +
            "'s headers, CUDA's headers (" + escape_untrusted(cuda) + ")");
    return;
  }
  std::string missing;
  auto lacks = [&](const std::string &what) { missing += (missing.empty() ? "" : ", ") + what; };
  if (cxx.empty()) lacks("no C++ compiler (c++, g++ or $CXX)");
  if (!headers) lacks(shown + " ships no C++ headers (" + escape_untrusted(torch_dir) + "/include)");
  if (cuda.empty()) lacks("no CUDA headers (cuda_runtime_api.h in $CUDA_HOME, /usr/local/cuda or the nvidia wheels)");
  add(out, "pytorch", Level::kWarn,
      "the per-tensor adapter cannot be built here: " + missing +
          ". Under `gpuleak run`'s default PyTorch mode the tensors' call sites are lost (the report shows the "
          "caching allocator's segments); build it once where these are (python -m gpuleak.torch_adapter, "
          "docs/python.md), or run with --torch per-tensor");
}

}  // namespace

void check_python(const std::string &python, std::vector<DoctorCheck> *out) {
  std::string torch = find_torch(python);
  add(out, "program", Level::kInfo,
      python_stacks_text(python_minor_version(python, torch)) + "; PyTorch allocator modes: see README; " +
          (torch.empty() ? std::string("torch not found beside this interpreter")
                         : "torch found in " + escape_untrusted(torch)) +
          " (not imported: the doctor does not run Python)");
  if (!torch.empty()) check_adapter(torch, out);
}

}  // namespace gpuleak::cli::doctor_detail
