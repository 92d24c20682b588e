// gpuleak doctor (doctor.h): the shim, the driver, CUPTI, the unwinder and the environment, and
// the output. The command's checks are in doctor_command.cpp and doctor_python.cpp, ELF reading
// in doctor_elf.cpp (doctor_internal.h). Reads files, never runs them.
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <cstring>
#include <set>

#include "core/config.h"
#include "doctor_internal.h"
#include "text/paths.h"

extern char **environ;

namespace gpuleak::cli {

using namespace doctor_detail;
using text::dirname_of;

const std::vector<std::string> kDefaultCuptiCandidates = {
    "libcupti.so.13",
    "/usr/local/cuda/lib64/libcupti.so.13",
    "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
};

namespace {

// Mirrors src/shim/gpuleak.map.in (its CUDA names, hooks.def's rows, as "cu" prefixes: a shim of
// another version may wrap other entry points); the doctor test checks the built shim against it.
bool allowed_export(const std::string &name) {
  // The exec family: flushed before the image is replaced (src/shim/exec_hooks.cpp).
  static const std::set<std::string> exec_family = {"execve", "execv",  "execvp",  "execvpe", "execl",
                                                    "execlp", "execle", "fexecve", "execveat"};
  return name == "dlsym" || name == "_exit" || name == "_Exit" || name == "InitializeInjection" ||
         name == "InitializeInjectionNvtx2" || exec_family.count(name) || starts_with(name, "cu") ||
         starts_with(name, "gpuleak_api_");
}

std::string list_names(const std::vector<std::string> &names, size_t max_shown) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < max_shown; ++i) out += (i ? ", " : "") + escape_untrusted(names[i]);
  if (names.size() > max_shown) out += ", and " + std::to_string(names.size() - max_shown) + " more";
  return out;
}

}  // namespace

std::string escape_untrusted(std::string_view text) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  return out;
}

std::string format_check(const DoctorCheck &check) {
  const char *tag = "error ";
  switch (check.level) {
    case Level::kOk:
      tag = "ok    ";
      break;
    case Level::kInfo:
      tag = "info  ";
      break;
    case Level::kWarn:
      tag = "warn  ";
      break;
    case Level::kError:
      tag = "error ";
      break;
  }
  return tag + check.name + ": " + check.detail;
}

std::vector<DoctorCheck> check_shim(const std::string &path) {
  std::vector<DoctorCheck> out;
  std::string shown = escape_untrusted(path);
  struct stat st;
  Fd file;
  std::string error;
  if (path.empty()) {
    add(&out, "shim", Level::kError, "libgpuleak.so not found (no path given)");
    return out;
  }
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || !open_regular(path, &file, &error)) {
    add(&out, "shim", Level::kError, shown + ": " + (error.empty() ? exec_problem(path) : error));
    return out;
  }
  if (!is_elf(read_head(file.fd))) {
    add(&out, "shim", Level::kError, shown + ": not an ELF file");
    return out;
  }
  ElfFacts f = read_elf(file.fd);
  if (!f.error.empty() || f.type != ET_DYN || f.pie) {
    add(&out, "shim", Level::kError,
        shown + (f.error.empty() ? ": not an ELF shared object (a program)"
                                 : ": broken ELF file (" + escape_untrusted(f.error) + ")"));
    return out;
  }
  if (f.elf_class != ELFCLASS64 || f.machine != kHostMachine)
    add(&out, "shim", Level::kError,
        shown + ": not a 64-bit " + machine_name(kHostMachine) + " library: the loader would skip it");
  std::vector<std::string> disallowed;
  size_t cxx = 0;
  bool has_dlsym = false;
  for (const auto &name : f.exports) {
    if (!allowed_export(name)) disallowed.push_back(name);
    if (starts_with(name, "_Z")) ++cxx;
    if (name == "dlsym") has_dlsym = true;
  }
  if (!disallowed.empty())
    add(&out, "shim", Level::kError,
        shown + " exports " + std::to_string(disallowed.size()) +
            " name(s) outside dlsym, _exit, _Exit, exec*, cu*, cuda*, InitializeInjection[Nvtx2], gpuleak_api_*: " +
            list_names(disallowed, 10) + " (they would interpose the program's own)");
  if (!has_dlsym)
    add(&out, "shim", Level::kError,
        shown + " does not export dlsym: programs with the static CUDA runtime would go unseen");
  if (disallowed.empty() && has_dlsym)
    add(&out, "shim", Level::kOk,
        shown + " (exports " + std::to_string(f.exports.size()) + " symbols, " +
            (cxx == 0 ? std::string("no C++ symbols") : std::to_string(cxx) + " C++ symbols") + ")");
  return out;
}

// Where the dynamic loader found a library it loaded (`asked`, the name dlopen got, without one),
// as untrusted text.
static std::string loaded_path(void *handle, const std::string &asked) {
  link_map *map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr && *map->l_name)
    return escape_untrusted(map->l_name);
  return escape_untrusted(asked);
}

DoctorCheck check_driver(const char *library) {
  dlerror();
  void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char *err = dlerror();
    std::string why = err ? err : "";
    if (why.find("No such file or directory") != std::string::npos)
      return {
          "driver", Level::kInfo,
          "no CUDA driver here (" + escape_untrusted(library) + " not found): programs will run, nothing to capture"};
    return {"driver", Level::kWarn, escape_untrusted(library) + " does not load: " + escape_untrusted(why)};
  }
  std::string where = loaded_path(handle, library);
  // CUresult is an int-sized enum; the doctor needs no CUDA header.
  auto get_version = reinterpret_cast<int (*)(int *)>(dlsym(handle, "cuDriverGetVersion"));
  auto init = reinterpret_cast<int (*)(unsigned)>(dlsym(handle, "cuInit"));
  auto device_count = reinterpret_cast<int (*)(int *)>(dlsym(handle, "cuDeviceGetCount"));
  auto error_name = reinterpret_cast<int (*)(int, const char **)>(dlsym(handle, "cuGetErrorName"));
  auto describe = [&](int result) {
    const char *name = nullptr;
    if (error_name == nullptr || error_name(result, &name) != 0 || name == nullptr) name = "CUDA error";
    return escape_untrusted(name) + " (" + std::to_string(result) + ")";
  };
  if (get_version == nullptr || init == nullptr || device_count == nullptr)
    return {"driver", Level::kWarn, where + " lacks cuDriverGetVersion, cuInit or cuDeviceGetCount: not a CUDA driver"};
  int version = 0;
  if (int result = get_version(&version); result != 0)
    return {"driver", Level::kWarn,
            where + ": cuDriverGetVersion failed: " + describe(result) +
                (result == 34 ? ": this is the toolkit's stub library, not a driver" : "")};
  std::string text =
      "CUDA " + std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10) + " driver (" + where + ")";
  if (int result = init(0); result != 0)
    return {"driver", Level::kWarn,
            text + ", cuInit failed: " + describe(result) + ": nothing to capture until it works"};
  int count = 0;
  if (int result = device_count(&count); result != 0)
    return {"driver", Level::kWarn, text + ", cuDeviceGetCount failed: " + describe(result)};
  if (count == 0) return {"driver", Level::kWarn, text + ", no CUDA device visible"};
  return {"driver", Level::kOk, text + ", " + std::to_string(count) + (count == 1 ? " device" : " devices")};
}

DoctorCheck check_cupti(const std::vector<std::string> &candidates) {
  std::string load_error;
  for (const auto &candidate : candidates) {
    dlerror();
    // Left loaded: CUPTI is not made to be unloaded, and the doctor exits right after.
    if (void *handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      std::string where = loaded_path(handle, candidate);
      return {"cupti", Level::kInfo, where + " available (off by default; GPULEAK_CUPTI=1 / gpuleak run --cupti)"};
    }
    const char *err = dlerror();
    struct stat st;
    if (load_error.empty() && candidate.find('/') != std::string::npos && stat(candidate.c_str(), &st) == 0)
      load_error = escape_untrusted(candidate) + " exists but does not load: " + escape_untrusted(err ? err : "");
  }
  if (!load_error.empty()) return {"cupti", Level::kWarn, load_error + " (only needed for --cupti)"};
  return {"cupti", Level::kInfo, "not found (only needed for --cupti)"};
}

DoctorCheck check_unwinder(const std::string &shim_path) {
  // The shim dlopens libunwind.so.8 through its RUNPATH ($ORIGIN: a bundled copy beside it), then
  // the system's; without it, stacks go through libgcc's unwinder and its memo never hits.
  std::string beside = dirname_of(shim_path) + "/libunwind.so.8";
  for (const std::string &candidate : {beside, std::string("libunwind.so.8")}) {
    if (candidate.find('/') != std::string::npos && access(candidate.c_str(), F_OK) != 0) continue;
    if (void *handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      std::string where = loaded_path(handle, candidate);
      dlclose(handle);
      return {"unwinder", Level::kOk, "libunwind: " + where + " (native stacks through its cached walk)"};
    }
  }
  return {"unwinder", Level::kWarn,
          "libunwind.so.8 found neither beside the shim nor on the system: native stacks go through "
          "libgcc's unwinder, several times slower (docs/benchmarks.md run 10); install libunwind8, or "
          "run scripts/bundle-runtime-libs.sh on a build folder"};
}

std::vector<DoctorCheck> check_environment() {
  std::vector<DoctorCheck> out;
  for (char **entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view variable(*entry);
    if (starts_with(variable, "LD_PRELOAD="))
      add(&out, "environment", Level::kInfo,
          "LD_PRELOAD is already set: " + escape_untrusted(variable.substr(std::strlen("LD_PRELOAD="))));
    else if (starts_with(variable, "GPULEAK_"))
      add(&out, "environment", Level::kInfo, escape_untrusted(variable));
  }
  // What the shim will make of them: a value that turns tracking off is a warning, not a note.
  const core::Config config = core::read_config();
  if (!config.error.empty())
    add(&out, "environment", Level::kWarn,
        escape_untrusted(config.error) + ": the shim turns tracking off (nothing is captured); fix or unset it");
  else if (!config.enabled)
    add(&out, "environment", Level::kWarn, "GPULEAK_DISABLE is set: the shim turns tracking off (nothing is captured)");
  if (out.empty()) add(&out, "environment", Level::kOk, "LD_PRELOAD not set, no GPULEAK_* variables");
  return out;
}

std::vector<DoctorCheck> doctor_checks(const DoctorInput &input) {
  std::vector<DoctorCheck> checks = check_shim(input.shim_path);
  checks.push_back(check_driver("libcuda.so.1"));
  checks.push_back(check_cupti(kDefaultCuptiCandidates));
  checks.push_back(check_unwinder(input.shim_path));
  for (auto &check : check_command(input.command)) checks.push_back(std::move(check));
  for (auto &check : check_environment()) checks.push_back(std::move(check));
  return checks;
}

int run_doctor(const DoctorInput &input, std::FILE *out) {
  int status = 0;
  for (const auto &check : doctor_checks(input)) {
    std::fprintf(out, "%s\n", format_check(check).c_str());
    if (check.name == "command" && check.level == Level::kError) status = 2;
  }
  std::fflush(out);
  return status;
}

}  // namespace gpuleak::cli
