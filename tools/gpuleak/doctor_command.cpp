// gpuleak doctor: the command (doctor.h's check_command). Resolved as execvp would, its #! lines
// followed as the kernel does (env(1) included), and the final ELF program's linkage read: how
// it reaches CUDA, and what keeps LD_PRELOAD out. A Python interpreter gets doctor_python.cpp's
// checks.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "doctor_internal.h"
#include "text/paths.h"

namespace gpuleak::cli {

using namespace doctor_detail;

namespace doctor_detail {

namespace {
std::string mode_octal(mode_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}
}  // namespace

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

}  // namespace doctor_detail

namespace {

// The kernel follows at most this many interpreters (binfmt_script -> binfmt_elf ...).
constexpr int kMaxInterpreterDepth = 4;

using text::basename_of;

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
  if (!python.empty()) check_python(python, out);
}

}  // namespace

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

}  // namespace gpuleak::cli
