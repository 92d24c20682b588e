// What the doctor's parts share (doctor.h says what the doctor checks and promises):
//   doctor.cpp          the shim, the driver, CUPTI, the unwinder, the environment; the output
//   doctor_elf.cpp      what one ELF file says (libelf), and opening files without blocking
//   doctor_command.cpp  the command: resolved like execvp, #! followed like the kernel, its linkage
//   doctor_python.cpp   a Python program: its interpreter's version, its torch, the PyTorch adapter's needs
#pragma once

#include <elf.h>
#include <sys/stat.h>

#include <string>
#include <string_view>
#include <vector>

#include "doctor.h"

namespace gpuleak::cli::doctor_detail {

using Level = DoctorCheck::Level;

#if defined(__x86_64__)
inline constexpr unsigned kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
inline constexpr unsigned kHostMachine = EM_AARCH64;
#else
inline constexpr unsigned kHostMachine = EM_NONE;
#endif

inline bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

inline void add(std::vector<DoctorCheck> *out, const char *name, Level level, std::string detail) {
  out->push_back(DoctorCheck{name, level, std::move(detail)});
}

// --- doctor_elf.cpp ---

// An open file descriptor, closed on scope exit.
struct Fd {
  int fd = -1;
  Fd() = default;
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  ~Fd();
};

// Opens a path that stat already called a regular file, read-only and without blocking (a FIFO
// swapped in since is refused, never waited on). False with `error` set otherwise.
bool open_regular(const std::string &path, Fd *file, std::string *error);
// The first bytes of the file, as the kernel reads them to find "#!" (BINPRM_BUF_SIZE).
std::string read_head(int fd);
bool is_elf(const std::string &head);
const char *machine_name(unsigned machine);

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
// Reads with ELF_C_READ (not a mapping): a file truncated under us is an error, never a SIGBUS.
ElfFacts read_elf(int fd);

// --- doctor_command.cpp ---

// Why execve would refuse `path`, or "" when it is a regular file we may execute.
std::string exec_problem(const std::string &path);
// execvp's search for `name`: its path, or false with a printable `error`.
bool resolve_like_execvp(const std::string &name, std::string *path, std::string *error);

// --- doctor_python.cpp ---

// The checks for a Python program run by `python` (an interpreter path): its version's stacks,
// its torch, and whether the default PyTorch mode's adapter is cached or can be built here.
void check_python(const std::string &python, std::vector<DoctorCheck> *out);

}  // namespace gpuleak::cli::doctor_detail
