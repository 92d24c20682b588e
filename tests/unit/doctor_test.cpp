// gpuleak doctor against real files made at test time (copies of /bin/true, scripts, garbage,
// FIFOs) and against fixtures built from this same file: each GPULEAK_DOCTOR_FIXTURE_* section
// below is compiled on its own into a tiny library or program (tests/unit/CMakeLists.txt), so the
// doctor reads real ELF output of the real toolchain. The test itself is the #else section.

#if defined(GPULEAK_DOCTOR_FIXTURE_SHIM)
// A stand-in for libgpuleak.so: allowed exports, plus one the shim must never have (evil build).
extern "C" void *dlsym(void *, const char *) { return nullptr; }
extern "C" int cuMemAlloc_v2(unsigned long long *, unsigned long) { return 0; }
extern "C" int cudaMalloc(void **, unsigned long) { return 0; }
extern "C" int gpuleak_api_active(void) { return 1; }
#if defined(GPULEAK_DOCTOR_FIXTURE_EVIL)
extern "C" int evil_symbol(void) { return 42; }
#endif

#elif defined(GPULEAK_DOCTOR_FIXTURE_DRIVER)
// A stand-in for libcuda.so.1: CUDA 13.0, two devices; DOCTOR_FAKE_CUINIT makes cuInit fail.
#include <cstdlib>
extern "C" int cuDriverGetVersion(int *version) {
  *version = 13000;
  return 0;
}
extern "C" int cuInit(unsigned) {
  const char *fail = std::getenv("DOCTOR_FAKE_CUINIT");
  return fail != nullptr ? std::atoi(fail) : 0;
}
extern "C" int cuDeviceGetCount(int *count) {
  *count = 2;
  return 0;
}
extern "C" int cuGetErrorName(int result, const char **name) {
  *name = result == 100 ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_UNKNOWN";
  return 0;
}

#elif defined(GPULEAK_DOCTOR_FIXTURE_STATIC_CUDART)
// What nvcc's default build looks like to the doctor: cudaMalloc defined inside the executable,
// and the name of the driver it dlopens in .rodata (all that is left once the program is stripped).
extern "C" int cudaMalloc(void **, unsigned long) { return 0; }
int main() {
  const char *volatile driver = "libcuda.so.1";
  void *p = nullptr;
  return cudaMalloc(&p, 1) + (driver[0] == 'x');
}

#elif defined(GPULEAK_DOCTOR_FIXTURE_SHARED_CUDART)
// A libcudart.so.13 and a libcuda.so.1 that only carry the soname, for programs that link them.
extern "C" int cudaMalloc(void **, unsigned long) { return 0; }
extern "C" int cuMemAlloc_v2(unsigned long long *, unsigned long) { return 0; }

#else
#include "doctor.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <ftw.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

extern char **environ;

namespace gpuleak::cli {
namespace {

using Level = DoctorCheck::Level;

std::string all_lines(const std::vector<DoctorCheck> &checks) {
  std::string text;
  for (const auto &check : checks) text += format_check(check) + "\n";
  return text;
}

// The one check whose formatted line contains `needle`; fails the test when there is none.
std::optional<DoctorCheck> find_check(const std::vector<DoctorCheck> &checks, const std::string &needle) {
  for (const auto &check : checks)
    if (format_check(check).find(needle) != std::string::npos) return check;
  ADD_FAILURE() << "no line contains \"" << needle << "\" in:\n" << all_lines(checks);
  return std::nullopt;
}

bool any_error(const std::vector<DoctorCheck> &checks, const char *name) {
  for (const auto &check : checks)
    if (check.name == name && check.level == Level::kError) return true;
  return false;
}

// run_doctor's output and status.
std::pair<int, std::string> run(const DoctorInput &input) {
  char *buf = nullptr;
  size_t size = 0;
  std::FILE *out = open_memstream(&buf, &size);
  int status = run_doctor(input, out);
  std::fclose(out);
  std::string text(buf, size);
  std::free(buf);
  return {status, text};
}

// Sets an environment variable for one scope and puts the old value back.
class ScopedEnv {
 public:
  ScopedEnv(const char *name, const char *value) : name_(name) {
    if (const char *old = std::getenv(name)) old_ = old;
    if (value != nullptr)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_.c_str(), old_->c_str(), 1);
    else
      unsetenv(name_.c_str());
  }

 private:
  std::string name_;
  std::optional<std::string> old_;
};

class DoctorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/gpuleak-doctor-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    nftw(
        dir_.c_str(), [](const char *path, const struct stat *, int, struct FTW *) { return remove(path); }, 16,
        FTW_DEPTH | FTW_PHYS);
  }

  std::string write(const std::string &name, const std::string &content, mode_t mode) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << content;
    EXPECT_EQ(chmod(path.c_str(), mode), 0);
    return path;
  }
  static std::string read(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  std::string copy(const std::string &from, const std::string &name, mode_t mode) {
    return write(name, read(from), mode);
  }

  std::string dir_;
};

TEST(DoctorFormat, EscapesUntrustedText) {
  EXPECT_EQ(escape_untrusted("plain /path_1.so"), "plain /path_1.so");
  EXPECT_EQ(escape_untrusted(std::string("a\x1b[31mb\\c\n\xff\0d", 13)), "a\\x1b[31mb\\\\c\\x0a\\xff\\x00d");
}

TEST(DoctorFormat, PadsTheLevelToSixColumns) {
  EXPECT_EQ(format_check({"shim", Level::kOk, "x"}), "ok    shim: x");
  EXPECT_EQ(format_check({"driver", Level::kInfo, "x"}), "info  driver: x");
  EXPECT_EQ(format_check({"program", Level::kWarn, "x"}), "warn  program: x");
  EXPECT_EQ(format_check({"command", Level::kError, "x"}), "error command: x");
}

TEST(DoctorShim, NamesTheDisallowedExportOnly) {
  auto checks = check_shim(GPULEAK_DOCTOR_EVIL_SHIM);
  auto error = find_check(checks, "evil_symbol");
  ASSERT_TRUE(error);
  EXPECT_EQ(error->level, Level::kError);
  EXPECT_NE(error->detail.find("exports 1 name(s)"), std::string::npos) << error->detail;
  EXPECT_EQ(error->detail.find("cuMemAlloc_v2"), std::string::npos) << error->detail;
  EXPECT_EQ(error->detail.find("gpuleak_api_active"), std::string::npos) << error->detail;
}

TEST(DoctorShim, CleanLibraryIsOk) {
  auto checks = check_shim(GPULEAK_DOCTOR_GOOD_SHIM);
  ASSERT_EQ(checks.size(), 1u) << all_lines(checks);
  EXPECT_EQ(checks[0].level, Level::kOk);
  EXPECT_NE(checks[0].detail.find("(exports 4 symbols, no C++ symbols)"), std::string::npos) << checks[0].detail;
}

#ifdef GPULEAK_DOCTOR_REAL_SHIM
TEST(DoctorShim, TheBuiltShimPasses) {
  auto checks = check_shim(GPULEAK_DOCTOR_REAL_SHIM);
  ASSERT_EQ(checks.size(), 1u) << all_lines(checks);
  EXPECT_EQ(checks[0].level, Level::kOk) << checks[0].detail;
  EXPECT_NE(checks[0].detail.find("no C++ symbols"), std::string::npos) << checks[0].detail;
}
#endif

TEST_F(DoctorTest, ShimThatIsNotALibraryIsAnError) {
  std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  struct Case {
    std::string path, says;
  } cases[] = {
      {dir_ + "/missing.so", "no such file"},
      {dir_, "is a directory"},
      {fifo, "not a regular file"},
      {write("garbage.so",
             "\x7f"
             "ELX garbage",
             0644),
       "not an ELF file"},
      {write("short.so", read("/bin/true").substr(0, 40), 0644), "broken ELF file"},
      {"/bin/true", "not an ELF shared object (a program)"},  // a PIE: ET_DYN like a library, but DF_1_PIE
      {GPULEAK_DOCTOR_FULLY_STATIC, "not an ELF shared object (a program)"},  // ET_EXEC
      {"", "no path given"},
  };
  for (const auto &c : cases) {
    auto checks = check_shim(c.path);
    auto error = find_check(checks, c.says);
    if (error) {
      EXPECT_EQ(error->level, Level::kError) << c.path;
    }
  }
}

TEST(DoctorDriver, MissingDriverIsInfo) {
  DoctorCheck check = check_driver("libgpuleak-doctor-no-such-driver.so.1");
  EXPECT_EQ(check.level, Level::kInfo);
  EXPECT_EQ(
      check.detail,
      "no CUDA driver here (libgpuleak-doctor-no-such-driver.so.1 not found): programs will run, nothing to capture");
}

TEST(DoctorDriver, ReportsVersionAndDevices) {
  ScopedEnv ok("DOCTOR_FAKE_CUINIT", nullptr);
  DoctorCheck check = check_driver(GPULEAK_DOCTOR_FAKE_DRIVER);
  EXPECT_EQ(check.level, Level::kOk) << check.detail;
  EXPECT_NE(check.detail.find("CUDA 13.0 driver ("), std::string::npos) << check.detail;
  EXPECT_NE(check.detail.find("), 2 devices"), std::string::npos) << check.detail;
}

TEST(DoctorDriver, FailedInitIsAWarningWithTheErrorName) {
  ScopedEnv fail("DOCTOR_FAKE_CUINIT", "100");
  DoctorCheck check = check_driver(GPULEAK_DOCTOR_FAKE_DRIVER);
  EXPECT_EQ(check.level, Level::kWarn);
  EXPECT_NE(check.detail.find("cuInit failed: CUDA_ERROR_NO_DEVICE (100)"), std::string::npos) << check.detail;
}

TEST(DoctorDriver, ToolkitStubIsNotADriver) {
  const char *stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (access(stub, R_OK) != 0) GTEST_SKIP() << stub << " not installed";
  DoctorCheck check = check_driver(stub);
  EXPECT_EQ(check.level, Level::kWarn) << check.detail;
  EXPECT_NE(check.detail.find("(34): this is the toolkit's stub library, not a driver"), std::string::npos)
      << check.detail;
}

TEST_F(DoctorTest, Cupti) {
  EXPECT_EQ(check_cupti({"libgpuleak-doctor-no-cupti.so.13", dir_ + "/libcupti.so.13"}).detail,
            "not found (only needed for --cupti)");
  DoctorCheck found = check_cupti({"libgpuleak-doctor-no-cupti.so.13", GPULEAK_DOCTOR_GOOD_SHIM});
  EXPECT_EQ(found.level, Level::kInfo);
  EXPECT_NE(found.detail.find("available (off by default; GPULEAK_CUPTI=1 / gpuleak run --cupti)"), std::string::npos)
      << found.detail;
  DoctorCheck broken = check_cupti({write("libcupti.so.13", "not a library", 0644)});
  EXPECT_EQ(broken.level, Level::kWarn);
  EXPECT_NE(broken.detail.find("exists but does not load"), std::string::npos) << broken.detail;
}

TEST(DoctorCommand, TrueHasNoCudaLinked) {
  auto checks = check_command({"/bin/true", "--ignored"});
  auto line = find_check(checks, "no CUDA linked directly: it may dlopen CUDA later");
  ASSERT_TRUE(line);
  EXPECT_EQ(line->level, Level::kInfo);
  auto command = find_check(checks, "/bin/true (ELF 64-bit");
  ASSERT_TRUE(command);
  EXPECT_EQ(command->level, Level::kOk);
  EXPECT_FALSE(any_error(checks, "command"));
}

TEST(DoctorCommand, ResolvesThroughPath) {
  ScopedEnv path("PATH", "/nonexistent-dir::/bin");
  auto checks = check_command({"true"});
  EXPECT_TRUE(find_check(checks, "ok    command: /bin/true (ELF"));
}

TEST_F(DoctorTest, SetuidCopyIsWarned) {
  std::string path = copy("/bin/true", "setuid_true", 0755);
  ASSERT_EQ(chmod(path.c_str(), 04755), 0);
  auto checks = check_command({path});
  auto warn = find_check(checks, "setuid binary: the loader ignores LD_PRELOAD, gpuleak cannot see it");
  ASSERT_TRUE(warn);
  EXPECT_EQ(warn->level, Level::kWarn);
  // The same copy without the bit says nothing of the kind.
  ASSERT_EQ(chmod(path.c_str(), 0755), 0);
  EXPECT_EQ(all_lines(check_command({path})).find("setuid binary"), std::string::npos);
}

TEST_F(DoctorTest, GarbageExecutableIsAClearErrorAndStatus2) {
  std::string path = write("garbage", std::string("\x01\x02\0\xff garbage", 12), 0755);
  auto [status, text] = run({"", {path}});
  EXPECT_EQ(status, 2);
  EXPECT_NE(text.find("error command: " + path + ": neither an ELF program nor a #! script"), std::string::npos)
      << text;
}

TEST_F(DoctorTest, TextWithoutShebangIsAWarningOnly) {
  std::string path = write("noshebang", "echo hi\n", 0755);
  auto [status, text] = run({"", {path}});
  EXPECT_EQ(status, 0) << text;
  EXPECT_NE(text.find("warn  command: " + path + ": a text file with no #! line"), std::string::npos) << text;
}

TEST_F(DoctorTest, TruncatedAndPatchedElfNeverCrash) {
  std::string elf = read("/bin/true");
  for (size_t size : {5ul, 40ul, 64ul, 200ul, 1000ul, elf.size() / 2}) {
    std::string path = write("cut" + std::to_string(size), elf.substr(0, size), 0755);
    auto checks = check_command({path});
    EXPECT_FALSE(checks.empty()) << size;
    if (size <= 64) {
      EXPECT_TRUE(any_error(checks, "command")) << size << "\n" << all_lines(checks);
    }
  }
  // e_machine of an x86-64 ELF set to aarch64 (183): a valid ELF for another machine.
  std::string other = elf;
  other[18] = static_cast<char>(183);
  other[19] = 0;
  auto checks = check_command({write("aarch64_true", other, 0755)});
  auto warn = find_check(checks, "the loader skips libgpuleak.so for it");
  ASSERT_TRUE(warn);
  EXPECT_EQ(warn->level, Level::kWarn);
}

TEST_F(DoctorTest, ShellScriptChecksItsInterpreter) {
  std::string path = write("job.sh", "#!/bin/sh\necho hi\n", 0755);
  auto checks = check_command({path});
  auto info = find_check(checks, path + " is a script for /bin/sh: checking /bin/sh");
  ASSERT_TRUE(info);
  EXPECT_EQ(info->level, Level::kInfo);
  EXPECT_TRUE(find_check(checks, "ok    command: /bin/sh (ELF 64-bit"));
  EXPECT_FALSE(any_error(checks, "command"));
}

TEST_F(DoctorTest, BadInterpretersAreErrors) {
  std::string missing = write("missing.sh", "#!/nonexistent/interp -x\n", 0755);
  auto [status, text] = run({"", {missing}});
  EXPECT_EQ(status, 2);
  EXPECT_NE(text.find("its #! interpreter /nonexistent/interp: no such file (bad interpreter)"), std::string::npos)
      << text;
  // A CRLF script: the kernel looks for "/bin/sh\r", and the doctor shows the \r.
  auto crlf = check_command({write("crlf.sh", "#!/bin/sh\r\necho hi\r\n", 0755)});
  EXPECT_TRUE(find_check(crlf, "/bin/sh\\x0d: no such file"));
  EXPECT_TRUE(any_error(crlf, "command"));
  auto empty = check_command({write("empty.sh", "#!   \n", 0755)});
  EXPECT_TRUE(find_check(empty, "empty #! line"));
  // Each script runs the next: deeper than the kernel follows.
  std::string next = "/bin/sh";
  for (int i = 0; i < 6; ++i) next = write("chain" + std::to_string(i), "#!" + next + "\n", 0755);
  EXPECT_TRUE(find_check(check_command({next}), "too many nested #! interpreters"));
}

TEST_F(DoctorTest, EnvScriptFindsPythonAndItsTorch) {
  // A fake virtual environment: bin/python3 (a copy of /bin/true) and lib/python3.11/site-packages/torch.
  ASSERT_EQ(mkdir((dir_ + "/venv").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((dir_ + "/venv/bin").c_str(), 0755), 0);
  std::string python = copy("/bin/true", "venv/bin/python3", 0755);
  ScopedEnv path("PATH", (dir_ + "/venv/bin:/usr/bin:/bin").c_str());
  ScopedEnv pythonpath("PYTHONPATH", nullptr);
  std::string script = write("train.py", "#!/usr/bin/env python3\nimport torch\n", 0755);

  auto checks = check_command({script, "--steps", "3"});
  EXPECT_TRUE(find_check(checks, script + " is a script for /usr/bin/env python3: checking python3 (" + python + ")"));
  // Issue #17: the doctor said "native stacks" for every interpreter, against docs/python.md.
  auto py = find_check(checks,
                       "Python interpreter of unknown version (the doctor does not run it): CPython 3.10-3.13 get "
                       "Python frames beside native stacks, other versions native stacks only (docs/python.md); "
                       "PyTorch allocator modes: see README");
  ASSERT_TRUE(py);
  EXPECT_NE(py->detail.find("torch not found beside this interpreter"), std::string::npos) << py->detail;

  for (const char *d : {"/venv/lib", "/venv/lib/python3.11", "/venv/lib/python3.11/site-packages",
                        "/venv/lib/python3.11/site-packages/torch"})
    ASSERT_EQ(mkdir((dir_ + d).c_str(), 0755), 0);
  write("venv/lib/python3.11/site-packages/torch/__init__.py", "", 0644);
  py = find_check(check_command({script}),
                  "Python 3.11 interpreter: Python frames (file:line) beside native stacks (docs/python.md)");
  ASSERT_TRUE(py);
  EXPECT_NE(py->detail.find("torch found in " + dir_ + "/venv/lib/python3.11/site-packages/torch"), std::string::npos)
      << py->detail;

  // The interpreter's own name wins over its library folder.
  copy("/bin/true", "venv/bin/python3.14", 0755);
  EXPECT_TRUE(find_check(check_command({write("n.py", "#!/usr/bin/env python3.14\n", 0755)}),
                         "Python 3.14 interpreter: native stacks only (Python frames need CPython 3.10-3.13"));

  // Without -S, env looks for a program named "python3 -u", which does not exist.
  auto unsplit = check_command({write("u.py", "#!/usr/bin/env python3 -u\n", 0755)});
  EXPECT_TRUE(find_check(unsplit, "env finds no program: python3 -u: not found in PATH"));
  auto split = check_command({write("s.py", "#!/usr/bin/env -S PYTHONUNBUFFERED=1 python3 -u\n", 0755)});
  EXPECT_TRUE(find_check(split, "checking python3 (" + python + ")"));
}

// Issue #31: the default PyTorch mode compiles an adapter at the first CUDA use; what it lacks
// here is said ahead of time, with what the user loses, and a cached adapter needs nothing.
TEST_F(DoctorTest, SaysWhatThePyTorchAdapterLacks) {
  const std::string site = "/venv/lib/python3.11/site-packages";
  for (const std::string &d : std::vector<std::string>{"/venv", "/venv/bin", "/venv/lib", "/venv/lib/python3.11", site,
                                                       site + "/torch", "/cuda", "/cuda/include", "/cache"})
    ASSERT_EQ(mkdir((dir_ + d).c_str(), 0755), 0) << d;
  copy("/bin/true", "venv/bin/python3", 0755);
  write("venv" + site.substr(5) + "/torch/__init__.py", "", 0644);
  write("venv" + site.substr(5) + "/torch/version.py", "__version__ = '9.9.9+test'\ngit_version = 'x'\n", 0644);
  const std::string script = write("train.py", "#!/usr/bin/env python3\nimport torch\n", 0755);
  ScopedEnv path("PATH", (dir_ + "/venv/bin").c_str());  // no c++, no g++
  ScopedEnv pythonpath("PYTHONPATH", nullptr), cxx("CXX", nullptr), cuda_path("CUDA_PATH", nullptr);
  ScopedEnv cuda_home("CUDA_HOME", (dir_ + "/nowhere").c_str()), prebuilt("GPULEAK_TORCH_ADAPTER", nullptr);
  ScopedEnv cache("GPULEAK_CACHE_DIR", (dir_ + "/cache").c_str());

  auto lacks = find_check(check_command({script}), "warn  pytorch: the per-tensor adapter cannot be built here: ");
  ASSERT_TRUE(lacks);
  EXPECT_NE(lacks->detail.find("no C++ compiler (c++, g++ or $CXX)"), std::string::npos) << lacks->detail;
  EXPECT_NE(lacks->detail.find("torch 9.9.9+test ships no C++ headers (" + dir_ + site + "/torch/include)"),
            std::string::npos)
      << lacks->detail;
  if (access("/usr/local/cuda/include/cuda_runtime_api.h", F_OK) != 0)
    EXPECT_NE(lacks->detail.find("no CUDA headers (cuda_runtime_api.h"), std::string::npos) << lacks->detail;
  EXPECT_NE(lacks->detail.find("the tensors' call sites are lost"), std::string::npos) << lacks->detail;
  EXPECT_NE(lacks->detail.find("python -m gpuleak.torch_adapter"), std::string::npos) << lacks->detail;

  // Everything there: a compiler ($CXX, found through PATH like gpuleak._torch's), the headers.
  for (const char *d : {"/include", "/include/c10", "/include/c10/cuda"})
    ASSERT_EQ(mkdir((dir_ + site + "/torch" + d).c_str(), 0755), 0);
  write("venv" + site.substr(5) + "/torch/include/c10/cuda/CUDACachingAllocator.h", "", 0644);
  write("cuda/include/cuda_runtime_api.h", "", 0644);
  copy("/bin/true", "venv/bin/my-c++", 0755);
  ScopedEnv found_cxx("CXX", "my-c++");
  ScopedEnv found_cuda("CUDA_HOME", (dir_ + "/cuda").c_str());
  EXPECT_TRUE(find_check(check_command({script}),
                         "ok    pytorch: the per-tensor adapter can be built at the first "
                         "CUDA use: " +
                             dir_ +
                             "/venv/bin/my-c++, torch 9.9.9+test's headers, CUDA's "
                             "headers (" +
                             dir_ + "/cuda/include)"));

  // Built ahead of time (python -m gpuleak.torch_adapter): cached, nothing else needed.
  ScopedEnv no_cxx("CXX", "no-such-compiler");
  ASSERT_EQ(mkdir((dir_ + "/cache/torch-9.9.9+test-0123456789abcdef").c_str(), 0700), 0);
  write("cache/torch-9.9.9+test-0123456789abcdef/libgpuleak_torch.so",
        "\x7f"
        "ELF",
        0644);
  EXPECT_TRUE(find_check(check_command({script}),
                         "ok    pytorch: the per-tensor adapter for torch 9.9.9+test is "
                         "cached (" +
                             dir_ +
                             "/cache/torch-9.9.9+test-0123456789abcdef/"
                             "libgpuleak_torch.so): no compiler or headers needed"));
  ScopedEnv missing("GPULEAK_TORCH_ADAPTER", (dir_ + "/nope.so").c_str());
  EXPECT_TRUE(find_check(check_command({script}), "warn  pytorch: GPULEAK_TORCH_ADAPTER=" + dir_ +
                                                      "/nope.so is no file: tensors' call sites are lost"));
}

TEST_F(DoctorTest, CommandsThatCannotStartReturn2) {
  std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0700), 0);
  struct Case {
    std::string command, says;
  } cases[] = {
      {"gpuleak-doctor-no-such-command", "gpuleak-doctor-no-such-command: not found in PATH"},
      {dir_ + "/missing", dir_ + "/missing: no such file"},
      {dir_, dir_ + ": is a directory"},
      {fifo, fifo + ": not a regular file"},  // never opened: a FIFO open would block
      {write("plain", "#!/bin/sh\n", 0644), dir_ + "/plain: not executable (mode 0644)"},
      {"", "empty command name"},
  };
  for (const auto &c : cases) {
    auto [status, text] = run({"", {c.command}});
    EXPECT_EQ(status, 2) << c.command;
    EXPECT_NE(text.find("error command: " + c.says + "\n"), std::string::npos) << text;
  }
  auto [status, text] = run({"", {}});
  EXPECT_EQ(status, 0) << text;
  EXPECT_EQ(text.find("command:"), std::string::npos) << text;
}

TEST(DoctorCommand, StaticCudaRuntime) {
  auto checks = check_command({GPULEAK_DOCTOR_STATIC_CUDART});
  auto line =
      find_check(checks, "static CUDA runtime (nvcc default): captured through the dlsym + cuGetProcAddress path");
  ASSERT_TRUE(line);
  EXPECT_EQ(line->level, Level::kOk);
  EXPECT_EQ(all_lines(checks).find("no CUDA linked directly"), std::string::npos);
  EXPECT_EQ(all_lines(checks).find("statically linked"), std::string::npos);
}

TEST(DoctorCommand, StrippedStaticCudaRuntime) {
  auto checks = check_command({GPULEAK_DOCTOR_STRIPPED_CUDART});
  EXPECT_EQ(all_lines(checks).find("static CUDA runtime (nvcc default)"), std::string::npos) << all_lines(checks);
  auto line = find_check(checks, "no CUDA symbols, but it names libcuda.so.1 (a stripped static CUDA runtime?)");
  ASSERT_TRUE(line);
  EXPECT_EQ(line->level, Level::kOk);
  EXPECT_EQ(all_lines(checks).find("no CUDA linked directly"), std::string::npos) << all_lines(checks);
}

TEST(DoctorCommand, FullyStaticProgramIsWarned) {
  auto checks = check_command({GPULEAK_DOCTOR_FULLY_STATIC});
  auto warn = find_check(checks, "statically linked: LD_PRELOAD cannot work; nothing will be captured");
  ASSERT_TRUE(warn);
  EXPECT_EQ(warn->level, Level::kWarn);
}

TEST(DoctorCommand, SharedRuntimeAndDriverApi) {
  auto shared = check_command({GPULEAK_DOCTOR_SHARED_CUDART_PROGRAM});
  auto runtime =
      find_check(shared, "shared CUDA runtime (libcudart.so.13): captured through cuGetProcAddress wrappers");
  ASSERT_TRUE(runtime);
  EXPECT_EQ(runtime->level, Level::kOk);
  auto driver = find_check(check_command({GPULEAK_DOCTOR_DRIVER_API_PROGRAM}),
                           "driver API linked directly: captured through exported driver symbols");
  ASSERT_TRUE(driver);
  EXPECT_EQ(driver->level, Level::kOk);
}

TEST(DoctorEnvironment, PrintsPreloadAndGpuleakVariablesEscaped) {
  ScopedEnv preload("LD_PRELOAD", "/opt/other.so");
  ScopedEnv out("GPULEAK_DOCTOR_TEST", "a\x1b[2Jb\\c\xff");
  auto checks = check_environment();
  EXPECT_TRUE(find_check(checks, "info  environment: LD_PRELOAD is already set: /opt/other.so"));
  EXPECT_TRUE(find_check(checks, "info  environment: GPULEAK_DOCTOR_TEST=a\\x1b[2Jb\\\\c\\xff"));
}

// Issue #28: a GPULEAK_* value that turns tracking off was one more "info" line.
TEST(DoctorEnvironment, AValueThatTurnsTrackingOffIsAWarning) {
  {
    ScopedEnv depth("GPULEAK_STACK_DEPTH", "lots");
    auto checks = check_environment();
    EXPECT_TRUE(find_check(checks,
                           "warn  environment: bad value GPULEAK_STACK_DEPTH=\"lots\": the shim turns "
                           "tracking off (nothing is captured); fix or unset it"))
        << all_lines(checks);
  }
  ScopedEnv off("GPULEAK_DISABLE", "1");
  auto checks = check_environment();
  EXPECT_TRUE(find_check(checks,
                         "warn  environment: GPULEAK_DISABLE is set: the shim turns tracking off (nothing is "
                         "captured)"))
      << all_lines(checks);
}

TEST(DoctorEnvironment, CleanEnvironmentIsOk) {
  std::vector<std::pair<std::string, std::string> > saved;
  for (char **e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    if (kv.rfind("GPULEAK_", 0) == 0 || kv.rfind("LD_PRELOAD=", 0) == 0)
      saved.emplace_back(kv.substr(0, kv.find('=')), kv.substr(kv.find('=') + 1));
  }
  for (const auto &[name, value] : saved) unsetenv(name.c_str());
  auto checks = check_environment();
  for (const auto &[name, value] : saved) setenv(name.c_str(), value.c_str(), 1);
  ASSERT_EQ(checks.size(), 1u) << all_lines(checks);
  EXPECT_EQ(format_check(checks[0]), "ok    environment: LD_PRELOAD not set, no GPULEAK_* variables");
}

TEST(DoctorRun, OneLinePerCheckInOrder) {
  auto [status, text] = run({GPULEAK_DOCTOR_GOOD_SHIM, {"/bin/true"}});
  EXPECT_EQ(status, 0) << text;
  size_t shim = text.find(" shim: "), driver = text.find(" driver: "), cupti = text.find(" cupti: "),
         command = text.find(" command: "), environment = text.find(" environment: ");
  EXPECT_LT(shim, driver) << text;
  EXPECT_LT(driver, cupti) << text;
  EXPECT_LT(cupti, command) << text;
  EXPECT_LT(command, environment) << text;
  EXPECT_NE(environment, std::string::npos) << text;
  EXPECT_EQ(text.back(), '\n');
}

// The shim finds a libunwind bundled beside it before the system's (its RUNPATH is $ORIGIN); a
// copy that is not a library is skipped, never reported as the one in use.
TEST_F(DoctorTest, UnwinderBesideTheShimComesFirst) {
  void *system = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  ASSERT_EQ(system, nullptr) << "the test needs libunwind not yet loaded in this process";
  link_map *map = nullptr;
  void *probe = dlopen("libunwind.so.8", RTLD_LAZY | RTLD_LOCAL);
  if (!probe) GTEST_SKIP() << "no libunwind.so.8 on this machine";
  ASSERT_EQ(dlinfo(probe, RTLD_DI_LINKMAP, &map), 0);
  std::string installed = map->l_name;
  dlclose(probe);
  write("libunwind.so.8", "not an ELF file", 0644);
  DoctorCheck broken = check_unwinder(dir_ + "/libgpuleak.so");
  EXPECT_EQ(broken.level, DoctorCheck::Level::kOk);
  EXPECT_EQ(broken.detail.find(dir_), std::string::npos) << broken.detail;
  copy(installed, "libunwind.so.8", 0755);
  DoctorCheck beside = check_unwinder(dir_ + "/libgpuleak.so");
  EXPECT_EQ(beside.level, DoctorCheck::Level::kOk);
  EXPECT_NE(beside.detail.find(dir_ + "/libunwind.so.8"), std::string::npos) << beside.detail;
}

}  // namespace
}  // namespace gpuleak::cli
#endif
