// `gpuleak doctor [-- CMD ARGS...]`: says, before a run, whether gpuleak can see a program's
// allocations on this machine: is the shim sound (it exports only what it must), is there a CUDA
// driver and a CUPTI, how is the program linked against CUDA (shared or static runtime, driver API,
// nothing yet), and what would keep LD_PRELOAD from working (setuid, static linking, wrong ELF class).
//
// The doctor never runs the program nor Python. It opens files read-only after checking their type
// with stat (a FIFO or a directory is never opened), reads ELF with libelf, and dlopens libcuda.so.1
// and libcupti.so.13 in its own process (cuInit there is harmless: it is not the profiled program).
// Every piece of text that comes from outside (paths, environment values, names read from files) is
// escaped before it is printed: printable ASCII stays, a backslash becomes "\\", any other byte "\xNN".
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace gpuleak::cli {

struct DoctorInput {
  std::string shim_path;             // the libgpuleak.so to inspect; empty reads as "not found"
  std::vector<std::string> command;  // CMD ARGS... after `--`; may be empty (then no program checks)
};

struct DoctorCheck {
  std::string name;  // shim, driver, cupti, command, program, environment
  enum class Level { kOk, kInfo, kWarn, kError } level;
  std::string detail;  // one line, already escaped
};

// All checks in order: shim, driver, CUPTI, the command (when given), the environment.
// Never throws on bad files; a file it cannot read becomes a check with a clear detail.
std::vector<DoctorCheck> doctor_checks(const DoctorInput &input);

// Prints doctor_checks() to `out`, one line per check: "<level padded to 6> <name>: <detail>".
// Returns 2 when the command cannot be started (not found, not executable, not a program the
// kernel runs, a missing #! interpreter): exactly when a "command" check is an error. Else 0,
// whatever the other checks say.
int run_doctor(const DoctorInput &input, std::FILE *out);

// The building blocks of doctor_checks, for the tests and for callers that want one part.

// The shim's file, ELF type and class, and its exported names (defined, global or weak, in the
// dynamic symbol table): only dlsym, _exit, _Exit, cu*, cuda*, InitializeInjection,
// InitializeInjectionNvtx2 and gpuleak_api_* are allowed (src/shim/gpuleak.map); any other is
// named in an error.
std::vector<DoctorCheck> check_shim(const std::string &path);

// dlopen(library) (RTLD_NOW | RTLD_LOCAL), then cuDriverGetVersion, cuInit(0), cuDeviceGetCount.
// The library stays loaded: unloading a driver after cuInit is not safe.
DoctorCheck check_driver(const char *library);

// The first of `candidates` that dlopen loads; kDefaultCuptiCandidates is what doctor_checks tries.
DoctorCheck check_cupti(const std::vector<std::string> &candidates);
extern const std::vector<std::string> kDefaultCuptiCandidates;

// libunwind as the shim will find it (beside it, then the system's); warns when only libgcc's
// unwinder is left.
DoctorCheck check_unwinder(const std::string &shim_path);

// Resolves command[0] like execvp (PATH, or confstr(_CS_PATH) when PATH is unset), follows #!
// interpreters (up to 4 levels, as the kernel does), and reads how the final ELF is linked.
std::vector<DoctorCheck> check_command(const std::vector<std::string> &command);

// LD_PRELOAD and every GPULEAK_* variable of this process's environment.
std::vector<DoctorCheck> check_environment();

// Untrusted text made printable: printable ASCII kept, '\\' doubled, every other byte as \xNN.
std::string escape_untrusted(std::string_view text);

// "ok    shim: ..." (no newline).
std::string format_check(const DoctorCheck &check);

}  // namespace gpuleak::cli
