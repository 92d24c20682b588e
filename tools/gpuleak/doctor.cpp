// gpuleak doctor: see doctor.h. Reads files, never runs them.
#include "doctor.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <glob.h>
#include <libelf.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <set>

#include "core/config.h"
#include "text/paths.h"

extern char **environ;

namespace gpuleak::cli {

using Level = DoctorCheck::Level;

const std::vector<std::string> kDefaultCuptiCandidates = {
    "libcupti.so.13",
    "/usr/local/cuda/lib64/libcupti.so.13",
    "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
};

namespace {

// The kernel reads this much of a file to find "#!" and the interpreter line (BINPRM_BUF_SIZE).
constexpr size_t kHeadBytes = 256;
// The kernel follows at most this many interpreters (binfmt_script -> binfmt_elf ...).
constexpr int kMaxInterpreterDepth = 4;

#if defined(__x86_64__)
constexpr unsigned kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr unsigned kHostMachine = EM_AARCH64;
#else
constexpr unsigned kHostMachine = EM_NONE;
#endif

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

using text::basename_of;
using text::dirname_of;

std::string mode_octal(mode_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

const char *machine_name(unsigned machine) {
  switch (machine) {
    case EM_X86_64:
      return "x86-64";
    case EM_386:
      return "i386";
    case EM_AARCH64:
      return "aarch64";
    case EM_ARM:
      return "arm";
    case EM_PPC64:
      return "ppc64";
    default:
      return "an unknown machine";
  }
}

// An open file descriptor, closed on scope exit.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

// Opens a path that stat already called a regular file. O_NONBLOCK: if it was swapped for a FIFO
// since, open must not wait for a writer; the fstat below then refuses it.
bool open_regular(const std::string &path, Fd *file, std::string *error) {
  file->fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (file->fd < 0 || fstat(file->fd, &st) != 0) {
    *error = std::strerror(errno);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = "not a regular file";
    return false;
  }
  return true;
}

std::string read_head(int fd) {
  std::string head(kHeadBytes, '\0');
  ssize_t n = pread(fd, head.data(), head.size(), 0);
  head.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return head;
}

bool is_elf(const std::string &head) {
  return head.size() >= SELFMAG && std::memcmp(head.data(), ELFMAG, SELFMAG) == 0;
}

// What the doctor needs to know about one ELF file.
struct ElfFacts {
  std::string error;  // non-empty: libelf could not read the headers
  unsigned elf_class = ELFCLASSNONE, machine = EM_NONE, type = ET_NONE;
  bool pie = false;           // DT_FLAGS_1 has DF_1_PIE: an ET_DYN that is a program, not a library
  bool has_interp = false;    // PT_INTERP: the dynamic loader runs, so LD_PRELOAD applies
  bool has_sections = false;  // sstrip'ed files have none: no DT_NEEDED or symbols to read
  std::vector<std::string> needed;
  std::vector<std::string> exports;  // defined global/weak .dynsym names, version nodes left out
  bool defines_cuda_malloc = false, has_cudart_symbol = false, mentions_libcuda = false;
};

void read_symbols(Elf *elf, Elf_Scn *scn, const GElf_Shdr &sh, ElfFacts *f) {
  Elf_Data *data = elf_getdata(scn, nullptr);
  size_t entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
  if (data == nullptr || entsize == 0) return;
  for (size_t i = 1; i < data->d_size / entsize; ++i) {  // entry 0 is the null symbol
    GElf_Sym sym;
    if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) break;
    const char *name = elf_strptr(elf, sh.sh_link, sym.st_name);
    if (name == nullptr || *name == '\0') continue;
    bool defined = sym.st_shndx != SHN_UNDEF;
    int bind = GELF_ST_BIND(sym.st_info);
    if (defined && std::strcmp(name, "cudaMalloc") == 0) f->defines_cuda_malloc = true;
    if (starts_with(name, "__cudart")) f->has_cudart_symbol = true;
    if (sh.sh_type == SHT_DYNSYM && defined && (bind == STB_GLOBAL || bind == STB_WEAK || bind == STB_GNU_UNIQUE))
      f->exports.push_back(name);
  }
}

void read_needed(Elf *elf, Elf_Scn *scn, const GElf_Shdr &sh, ElfFacts *f) {
  Elf_Data *data = elf_getdata(scn, nullptr);
  size_t entsize = gelf_fsize(elf, ELF_T_DYN, 1, EV_CURRENT);
  if (data == nullptr || entsize == 0) return;
  for (size_t i = 0; i < data->d_size / entsize; ++i) {
    GElf_Dyn dyn;
    if (gelf_getdyn(data, static_cast<int>(i), &dyn) == nullptr || dyn.d_tag == DT_NULL) break;
    if (dyn.d_tag == DT_FLAGS_1 && (dyn.d_un.d_val & DF_1_PIE) != 0) f->pie = true;
    if (dyn.d_tag != DT_NEEDED) continue;
    const char *name = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val);
    if (name != nullptr) f->needed.push_back(name);
  }
}

// A library with named versions carries one absolute symbol per version ("LIBFOO_1.0"): not code.
void read_version_names(Elf *elf, Elf_Scn *scn, const GElf_Shdr &sh, std::set<std::string> *names) {
  Elf_Data *data = elf_getdata(scn, nullptr);
  if (data == nullptr) return;
  size_t offset = 0;
  for (size_t i = 0; i < sh.sh_info; ++i) {
    GElf_Verdef def;
    GElf_Verdaux aux;
    if (gelf_getverdef(data, static_cast<int>(offset), &def) == nullptr) break;
    if (gelf_getverdaux(data, static_cast<int>(offset + def.vd_aux), &aux) == nullptr) break;
    if (const char *name = elf_strptr(elf, sh.sh_link, aux.vda_name)) names->insert(name);
    if (def.vd_next == 0) break;
    offset += def.vd_next;
  }
}

// A stripped static-runtime program has no symbols left, but cudart's loader string stays.
void scan_rodata(Elf *elf, Elf_Scn *scn, const GElf_Shdr &sh, size_t shstrndx, ElfFacts *f) {
  const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
  if (name == nullptr || std::strcmp(name, ".rodata") != 0 || sh.sh_type != SHT_PROGBITS) return;
  Elf_Data *data = elf_getdata(scn, nullptr);
  static const char kNeedle[] = "libcuda.so.1";
  if (data != nullptr && data->d_buf != nullptr &&
      memmem(data->d_buf, data->d_size, kNeedle, sizeof kNeedle) != nullptr)  // with its NUL
    f->mentions_libcuda = true;
}

ElfFacts read_elf(int fd) {
  ElfFacts f;
  elf_version(EV_CURRENT);
  // ELF_C_READ, not a mapping: a file truncated under us must give an error, not a SIGBUS.
  Elf *elf = elf_begin(fd, ELF_C_READ, nullptr);
  GElf_Ehdr eh;
  size_t phnum = 0;
  if (elf == nullptr || elf_kind(elf) != ELF_K_ELF || gelf_getehdr(elf, &eh) == nullptr ||
      elf_getphdrnum(elf, &phnum) != 0) {
    const char *why = elf_errmsg(-1);
    f.error = why != nullptr ? why : "not an ELF object";
    if (elf != nullptr) elf_end(elf);
    return f;
  }
  f.elf_class = eh.e_ident[EI_CLASS];
  f.machine = eh.e_machine;
  f.type = eh.e_type;
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf, static_cast<int>(i), &ph) == nullptr) {
      f.error = std::string("program headers: ") + elf_errmsg(-1);
      elf_end(elf);
      return f;
    }
    if (ph.p_type == PT_INTERP) f.has_interp = true;
  }
  size_t shstrndx = 0;
  bool have_shstrndx = elf_getshdrstrndx(elf, &shstrndx) == 0;
  std::set<std::string> version_names;
  for (Elf_Scn *scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr) continue;
    f.has_sections = true;
    if (sh.sh_type == SHT_DYNAMIC) read_needed(elf, scn, sh, &f);
    if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM) read_symbols(elf, scn, sh, &f);
    if (sh.sh_type == SHT_GNU_verdef) read_version_names(elf, scn, sh, &version_names);
    if (have_shstrndx) scan_rodata(elf, scn, sh, shstrndx, &f);
  }
  elf_end(elf);
  std::vector<std::string> exports;
  for (auto &name : f.exports)
    if (version_names.count(name) == 0) exports.push_back(std::move(name));
  f.exports = std::move(exports);
  return f;
}

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

// Why execve would refuse `path`, or "" when it is a regular file we may execute.
std::string exec_problem(const std::string &path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return errno == ENOENT ? "no such file" : std::strerror(errno);
  if (S_ISDIR(st.st_mode)) return "is a directory";
  if (!S_ISREG(st.st_mode)) return "not a regular file";
  if (access(path.c_str(), X_OK) != 0) return "not executable (mode " + mode_octal(st.st_mode) + ")";
  return "";
}

// execvp's search: a name with a slash is used as is; otherwise each PATH entry in turn (an empty
// entry is the current directory), skipping candidates it may not execute.
bool resolve_like_execvp(const std::string &name, std::string *path, std::string *error) {
  if (name.empty()) {
    *error = "empty command name";
    return false;
  }
  if (name.find('/') != std::string::npos) {
    std::string problem = exec_problem(name);
    if (problem.empty())
      *path = name;
    else
      *error = escape_untrusted(name) + ": " + problem;
    return problem.empty();
  }
  std::string search;
  if (const char *env = std::getenv("PATH")) {
    search = env;
  } else {
    search.resize(confstr(_CS_PATH, nullptr, 0));
    confstr(_CS_PATH, search.data(), search.size());
    search.resize(std::strlen(search.c_str()));
  }
  std::string first_problem;
  size_t start = 0;
  while (start <= search.size()) {
    size_t end = search.find(':', start);
    if (end == std::string::npos) end = search.size();
    std::string dir = search.substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    start = end + 1;
    struct stat st;
    if (stat(candidate.c_str(), &st) != 0) continue;
    std::string problem = exec_problem(candidate);
    if (problem.empty()) {
      *path = candidate;
      return true;
    }
    if (first_problem.empty()) first_problem = escape_untrusted(candidate) + ": " + problem;
  }
  *error = first_problem.empty() ? escape_untrusted(name) + ": not found in PATH" : first_problem;
  return false;
}

// "#!/usr/bin/env -S python3 -u": the kernel splits the line at the first blank only.
bool parse_shebang(const std::string &head, std::string *interpreter, std::string *argument) {
  size_t newline = head.find('\n');
  std::string line = head.substr(2, newline == std::string::npos ? std::string::npos : newline - 2);
  size_t begin = line.find_first_not_of(" \t");
  if (begin == std::string::npos) return false;
  size_t end = line.find_first_of(" \t", begin);
  *interpreter = line.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  argument->clear();
  if (end != std::string::npos) {
    size_t arg_begin = line.find_first_not_of(" \t", end);
    size_t arg_end = line.find_last_not_of(" \t");
    if (arg_begin != std::string::npos) *argument = line.substr(arg_begin, arg_end - arg_begin + 1);
  }
  return true;
}

// The program env(1) would run for this #! argument: without -S it is the whole argument.
std::string env_program(const std::string &argument) {
  std::vector<std::string> words;
  if (starts_with(argument, "-S") || starts_with(argument, "--split-string")) {
    std::string rest = argument.substr(starts_with(argument, "-S") ? 2 : std::strlen("--split-string"));
    size_t pos = 0;
    while ((pos = rest.find_first_not_of(" \t=", pos)) != std::string::npos) {
      size_t end = rest.find_first_of(" \t", pos);
      words.push_back(rest.substr(pos, end == std::string::npos ? std::string::npos : end - pos));
      pos = end;
    }
  } else if (!argument.empty()) {
    words.push_back(argument);
  }
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string &w = words[i];
    if (w == "-u" || w == "--unset" || w == "-C" || w == "--chdir")
      ++i;  // options with an argument
    else if (!starts_with(w, "-") && w.find('=') == std::string::npos)
      return w;
  }
  return "";
}

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

void add(std::vector<DoctorCheck> *out, const char *name, Level level, std::string detail) {
  out->push_back(DoctorCheck{name, level, std::move(detail)});
}

// How the ELF at `path` is linked against CUDA and what keeps LD_PRELOAD out.
void describe_program(const std::string &path, const struct stat &st, const ElfFacts &f,
                      std::vector<DoctorCheck> *out) {
  std::string shown = escape_untrusted(path);
  add(out, "command", Level::kOk,
      shown + " (ELF " + (f.elf_class == ELFCLASS64 ? "64" : "32") + "-bit " + machine_name(f.machine) +
          (f.has_interp ? ", dynamically linked)" : ", statically linked)"));
  if (f.elf_class != ELFCLASS64 || f.machine != kHostMachine)
    add(out, "program", Level::kWarn,
        std::string("not a 64-bit ") + machine_name(kHostMachine) +
            " program: the loader skips libgpuleak.so for it (wrong ELF class or machine); nothing will be captured");
  // setgid without group execute is mandatory locking, not a setgid program.
  if ((st.st_mode & S_ISUID) != 0 || ((st.st_mode & S_ISGID) != 0 && (st.st_mode & S_IXGRP) != 0)) {
    std::string who = (st.st_mode & S_ISUID) ? "setuid" : "setgid";
    bool own = (st.st_mode & S_ISUID) ? st.st_uid == getuid() : st.st_gid == getgid();
    add(out, "program", Level::kWarn,
        who + " binary: the loader ignores LD_PRELOAD, gpuleak cannot see it" +
            (own ? std::string(" (except when started by its owner, as you are: then it runs as you)") : ""));
  }
  if (!f.has_interp)
    add(out, "program", Level::kWarn, "statically linked: LD_PRELOAD cannot work; nothing will be captured");
  if (!f.has_sections)
    add(out, "program", Level::kInfo, "no section headers (stripped with sstrip?): how it links CUDA is not known");
  bool marker = false;
  for (const auto &lib : f.needed) {
    if (starts_with(lib, "libcudart.so.")) {
      add(out, "program", Level::kOk,
          "shared CUDA runtime (" + escape_untrusted(lib) +
              "): captured through cuGetProcAddress wrappers; cudart API names recorded");
      marker = true;
    }
  }
  if (f.defines_cuda_malloc || f.has_cudart_symbol) {
    add(out, "program", Level::kOk,
        "static CUDA runtime (nvcc default): captured through the dlsym + cuGetProcAddress path");
    marker = true;
  }
  for (const auto &lib : f.needed) {
    if (lib == "libcuda.so.1") {
      add(out, "program", Level::kOk, "driver API linked directly: captured through exported driver symbols");
      marker = true;
    }
  }
  if (!marker && f.mentions_libcuda) {
    add(out, "program", Level::kOk,
        "no CUDA symbols, but it names libcuda.so.1 (a stripped static CUDA runtime?): captured through the dlsym + "
        "cuGetProcAddress path");
    marker = true;
  }
  if (!marker && f.has_interp)
    add(out, "program", Level::kInfo,
        "no CUDA linked directly: it may dlopen CUDA later (frameworks do); capture works for dlopened CUDA too");
}

// One level of the command: an ELF program, or a #! script whose interpreter is checked instead.
void inspect_command(const std::string &path, int depth, std::string python, std::vector<DoctorCheck> *out) {
  std::string shown = escape_untrusted(path);
  if (python.empty() && starts_with(basename_of(path), "python")) python = path;
  struct stat st;
  Fd file;
  std::string error;
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || !open_regular(path, &file, &error)) {
    add(out, "command", Level::kError, shown + ": cannot be read: " + (error.empty() ? exec_problem(path) : error));
    return;
  }
  std::string head = read_head(file.fd);
  if (starts_with(head, "#!")) {
    std::string interpreter, argument, interpreter_path;
    if (!parse_shebang(head, &interpreter, &argument)) {
      add(out, "command", Level::kError, shown + ": script with an empty #! line: the kernel refuses it");
      return;
    }
    if (depth >= kMaxInterpreterDepth) {
      add(out, "command", Level::kError, shown + ": too many nested #! interpreters: the kernel refuses it (ELOOP)");
      return;
    }
    std::string problem = exec_problem(interpreter);  // the kernel takes the path as written, no PATH search
    if (!problem.empty()) {
      add(out, "command", Level::kError,
          shown + ": its #! interpreter " + escape_untrusted(interpreter) + ": " + problem + " (bad interpreter)");
      return;
    }
    std::string line = escape_untrusted(interpreter) + (argument.empty() ? "" : " " + escape_untrusted(argument));
    if (basename_of(interpreter) != "env") {
      add(out, "command", Level::kInfo,
          shown + " is a script for " + line + ": checking " + escape_untrusted(interpreter));
      inspect_command(interpreter, depth + 1, python, out);
      return;
    }
    std::string program = env_program(argument);
    if (program.empty() || !resolve_like_execvp(program, &interpreter_path, &error)) {
      add(out, "command", Level::kError,
          shown + " is a script for " + line +
              ", but env finds no program: " + (program.empty() ? "none named" : error));
      return;
    }
    add(out, "command", Level::kInfo,
        shown + " is a script for " + line + ": checking " + escape_untrusted(program) + " (" +
            escape_untrusted(interpreter_path) + ")");
    inspect_command(interpreter_path, depth + 1, python, out);
    return;
  }
  if (!is_elf(head)) {
    if (head.find('\0') == std::string::npos)
      add(out, "command", Level::kWarn,
          shown +
              ": a text file with no #! line: execve refuses it (ENOEXEC); only a shell runs it (execvp falls back to "
              "/bin/sh)");
    else
      add(out, "command", Level::kError,
          shown + ": neither an ELF program nor a #! script: the kernel refuses it (ENOEXEC)");
    return;
  }
  ElfFacts facts = read_elf(file.fd);
  if (!facts.error.empty()) {
    add(out, "command", Level::kError,
        shown + ": broken ELF file (" + escape_untrusted(facts.error) + "): the kernel refuses it");
    return;
  }
  if (facts.type != ET_EXEC && facts.type != ET_DYN) {
    add(out, "command", Level::kError, shown + ": an ELF file but not a program (relocatable object or core dump)");
    return;
  }
  describe_program(path, st, facts, out);
  if (!python.empty()) {
    std::string torch = find_torch(python);
    add(out, "program", Level::kInfo,
        python_stacks_text(python_minor_version(python, torch)) + "; PyTorch allocator modes: see README; " +
            (torch.empty() ? std::string("torch not found beside this interpreter")
                           : "torch found in " + escape_untrusted(torch)) +
            " (not imported: the doctor does not run Python)");
  }
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

std::vector<DoctorCheck> check_command(const std::vector<std::string> &command) {
  std::vector<DoctorCheck> out;
  if (command.empty()) return out;
  std::string path, error;
  if (!resolve_like_execvp(command[0], &path, &error)) {
    add(&out, "command", Level::kError, error);
    return out;
  }
  inspect_command(path, 0, "", &out);
  return out;
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
