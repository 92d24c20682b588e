// What the program does to the process around gpuleak (issue #25, shim side): its descriptors,
// a stderr whose reader is gone, its working directory, how it ends, the output folder, the
// environment's text and a --out shared with other runs. Each test holds a promise of
// docs/safety.md against tests/programs/hostile.cpp.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "process.h"

namespace gpuleak::test {
namespace {

std::string slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spill(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

std::string hostile() { return program("prog_hostile"); }

std::map<std::string, std::string> with_report(const std::string &out) {
  auto env = shim_env(out);
  env["GPULEAK_CLI"] = GPULEAK_CLI_PATH;
  env["GPULEAK_QUIET"] = "1";
  return env;
}

// `gpuleak run` itself, not preloaded, finding the shim by GPULEAK_LIB.
std::map<std::string, std::string> run_env(const std::string &out) {
  auto env = shim_env(out);
  env["LD_PRELOAD"] = "";
  env["GPULEAK_OUT"] = "";
  env["GPULEAK_LIB"] = GPULEAK_SHIM_PATH;
  return env;
}

// The lines "N KIND" of `hostile fds`, without the descriptors the test harness handed down
// (the same program run without the shim lists those too).
std::set<std::string> lines_of(const std::string &text) {
  std::set<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.insert(line);
  return lines;
}

// #25: libunwind's address-validation pipe sat on descriptors 3 and 4 of every preloaded process.
TEST(Safety, APreloadedProcessHoldsNoDescriptorInTheLowRange) {
  std::string out = make_temp_dir("low-fds");
  Result plain = run({hostile(), "fds"}, {{"LD_PRELOAD", ""}, {"LD_LIBRARY_PATH", GPULEAK_FAKE_CUDA_DIR}});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  Result shimmed = run({hostile(), "fds"}, shim_env(out));
  ASSERT_EQ(shimmed.exit_code, 0) << shimmed.err;
  EXPECT_EQ(lines_of(shimmed.out), lines_of(plain.out)) << "descriptors 3..899 with the shim:\n"
                                                        << shimmed.out << "without:\n"
                                                        << plain.out;
  EXPECT_EQ(count(read_only_capture(out)).allocs, 13);
}

// #25: a program that closes its descriptors and opens its own files on 3 and 4, then allocates
// through frames without CFI (libunwind validates every address there: one byte read from the
// pipe's read end, one written to its write end) gets its files byte for byte.
TEST(Safety, ClosingAndReopeningLowDescriptorsLeavesTheProgramsFilesByteExact) {
  std::mt19937 rng(std::random_device{}());
  for (int run_index = 0; run_index < 5; ++run_index) {
    std::string out = make_temp_dir("reopen");
    std::string in = out + "/in.bin", copy = out + "/out.bin";
    std::string bytes;
    for (int i = 0; i < 5000; ++i) bytes.push_back(static_cast<char>(rng()));
    spill(in, bytes);
    Result r = run({hostile(), "close-reopen", in, copy}, shim_env(out));
    ASSERT_EQ(r.exit_code, 0) << "run " << run_index << " (29: a descriptor appeared below 900)\n" << r.err;
    EXPECT_TRUE(slurp(in) == bytes) << "run " << run_index << ": the input file changed";
    std::string got = slurp(copy);
    size_t first = std::mismatch(got.begin(), got.end(), bytes.begin(), bytes.end()).first - got.begin();
    EXPECT_TRUE(got == bytes) << "run " << run_index << ": the copy (" << got.size() << " bytes of " << bytes.size()
                              << ") differs from byte " << first;
    EXPECT_GE(count(read_only_capture(out)).allocs, 45) << "run " << run_index << ": tracking went on";
  }
}

// Runs argv with stderr on a pipe whose read end is already closed (`prog 2>&1 | head -1` once head
// has gone) and stdout into `stdout_file`.
Result run_with_stderr_gone(const std::vector<std::string> &argv, const std::map<std::string, std::string> &env,
                            const std::string &stdout_file) {
  int p[2];
  if (pipe(p) != 0) return {};
  close(p[0]);
  pid_t pid = fork();
  if (pid == 0) {
    int o = open(stdout_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(o, 1);
    dup2(p[1], 2);
    signal(SIGPIPE, SIG_DFL);
    for (const auto &[k, v] : env) {
      if (v.empty())
        unsetenv(k.c_str());
      else
        setenv(k.c_str(), v.c_str(), 1);
    }
    std::vector<char *> args;
    for (const auto &a : argv) args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(p[1]);
  int status = 0;
  waitpid(pid, &status, 0);
  Result r;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.out = slurp(stdout_file);
  return r;
}

// #25: gpuleak's stderr lines killed the program with SIGPIPE (exit 141) once stderr's reader was gone.
TEST(Safety, AStderrWhoseReaderIsGoneNeverKillsTheProgram) {
  std::string out = make_temp_dir("sigpipe");
  std::string so = out + "/stdout";
  auto env = shim_env(out);  // the at-exit summary line is on
  Result summary = run_with_stderr_gone({program("prog_leaky_static"), "5"}, env, so);
  EXPECT_EQ(summary.signal, 0) << "killed by signal " << summary.signal;
  EXPECT_EQ(summary.exit_code, 0);
  auto bad = env;
  bad["GPULEAK_STACK_DEPTH"] = "lots";  // the bad-value line
  Result bad_value = run_with_stderr_gone({program("prog_leaky_static"), "5"}, bad, so);
  EXPECT_EQ(bad_value.signal, 0);
  EXPECT_EQ(bad_value.exit_code, 0);
  // The at-exit report writes its summary there too: the leak's exit code still comes through.
  auto report = with_report(out);
  report["GPULEAK_QUIET"] = "";
  report["GPULEAK_EXITCODE"] = "42";
  Result leak = run_with_stderr_gone({hostile(), "sigchld-ignore"}, report, so);
  EXPECT_EQ(leak.signal, 0);
  EXPECT_EQ(leak.exit_code, 42);
  // A SIGPIPE the program itself has pending stays pending.
  Result pending = run_with_stderr_gone({hostile(), "pending-sigpipe"}, bad, so);
  EXPECT_EQ(pending.exit_code, 0);
  EXPECT_EQ(pending.out, "pending\n");
}

TEST(Safety, RunNeverDiesOfItsOwnWritesToAStderrWhoseReaderIsGone) {
  std::string out = make_temp_dir("run-sigpipe");
  std::string so = out + "/stdout";
  Result r = run_with_stderr_gone(
      {GPULEAK_CLI_PATH, "run", "--out", out, "--error-exitcode", "9", "--", hostile(), "sigpipe-disposition"},
      run_env(out), so);
  EXPECT_EQ(r.signal, 0) << "killed by signal " << r.signal;
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "default\n") << "the program keeps SIGPIPE's default action";
  Result leak = run_with_stderr_gone(
      {GPULEAK_CLI_PATH, "run", "--out", out, "--error-exitcode", "9", "--", hostile(), "sigchld-ignore"}, run_env(out),
      so);
  EXPECT_EQ(leak.signal, 0);
  EXPECT_EQ(leak.exit_code, 9);
}

// #25: with the default ./gpuleak-out, a program that changed directory lost its report and
// GPULEAK_EXITCODE let its leak through.
TEST(Safety, AProgramThatChangesDirectoryKeepsItsReportAndExitCode) {
  std::string base = make_temp_dir("chdir");
  std::string elsewhere = base + "/elsewhere";
  mkdir(elsewhere.c_str(), 0755);
  auto env = with_report("");
  env["GPULEAK_OUT"] = "";  // the default, relative to where the program starts
  env["GPULEAK_EXITCODE"] = "42";
  Result r = run({"/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", base, hostile(), "chdir-leak", elsewhere}, env);
  EXPECT_EQ(r.exit_code, 42) << r.err;
  EXPECT_EQ(files_with_suffix(base + "/gpuleak-out", ".gpuleak").size(), 1u);
  EXPECT_EQ(files_with_suffix(base + "/gpuleak-out", ".report.json").size(), 1u) << r.err;
  EXPECT_TRUE(files_with_suffix(elsewhere + "/gpuleak-out", ".gpuleak").empty());
}

// #25: a run that ends in _exit, abort or exec lost the device record (the writer thread had not
// written it yet), and _exit's summary line showed the counts of the last flush.
TEST(Safety, EveryEndingKeepsTheDeviceRecord) {
  constexpr int kRuns = 20;
  for (const char *how : {"_exit", "abort", "exec", "return"}) {
    int without = 0;
    for (int i = 0; i < kRuns; ++i) {
      std::string out = make_temp_dir(std::string("end-") + how);
      auto env = shim_env(out);
      env["GPULEAK_QUIET"] = "1";
      Result r = run({hostile(), "end", how}, env);
      EXPECT_EQ(r.signal, std::string(how) == "abort" ? SIGABRT : 0) << how;
      format::Capture c = read_only_capture(out);
      EXPECT_EQ(count(c).allocs, 8) << how << " run " << i;
      if (c.devices.empty()) ++without;
    }
    EXPECT_EQ(without, 0) << how << ": " << without << " of " << kRuns << " captures have no device record";
  }
}

TEST(Safety, TheExitLineOfUnderscoreExitCountsEveryAllocation) {
  for (int i = 0; i < 10; ++i) {
    std::string out = make_temp_dir("exit-line");
    auto env = shim_env(out);
    env["GPULEAK_REPORT_TIMEOUT"] = "0";  // the shim's own line alone
    Result r = run({hostile(), "end", "_exit"}, env);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.err.find("gpuleak: 8 allocations, 3 frees; live at exit: 5 allocations, 5.0 MiB on device (peak "
                         "5.0 MiB)"),
              std::string::npos)
        << "run " << i << ": " << r.err;
  }
}

// #25: a PID that comes back (containers) found the report of an earlier process under its name
// and replaced it.
TEST(Safety, AnExistingReportIsNeverReplaced) {
  std::string out = make_temp_dir("pid-again");
  // The shell's pid is the program's (exec): its report name is taken before it starts.
  Result r = run({"/bin/sh", "-c", "echo earlier > \"$0/prog_hostile.$$.report.json\"; exec \"$1\" sigchld-ignore", out,
                  hostile()},
                 with_report(out));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto reports = files_with_suffix(out, ".report.json");
  ASSERT_EQ(reports.size(), 2u) << r.err;
  int earlier = 0;
  for (const std::string &path : reports) {
    std::string text = slurp(path);
    if (text == "earlier\n") {
      ++earlier;
      continue;
    }
    EXPECT_NE(text.find("\"schema\""), std::string::npos) << path;
    // The new report sits beside its own capture: the capture took the counter too.
    std::string capture = path.substr(0, path.size() - std::string(".report.json").size()) + ".gpuleak";
    struct stat st {};
    EXPECT_EQ(stat(capture.c_str(), &st), 0) << capture;
  }
  EXPECT_EQ(earlier, 1);
}

// #25: the output folder swapped for a symlink mid-run: the at-exit report read and wrote through it.
TEST(Safety, TheAtExitReportNeverGoesThroughAFolderSwappedForASymlink) {
  std::string base = make_temp_dir("swap");
  std::string out = base + "/out", other = base + "/other";
  mkdir(out.c_str(), 0755);
  mkdir(other.c_str(), 0755);
  auto env = with_report(out);
  env["GPULEAK_EXITCODE"] = "42";
  Result r = run({hostile(), "swap-out", out, other}, env);
  EXPECT_EQ(r.exit_code, 42) << r.err;
  EXPECT_TRUE(files_with_suffix(other, "").size() == 2u) << "only . and ..: nothing written through the symlink";
  EXPECT_EQ(files_with_suffix(out + ".moved", ".gpuleak").size(), 1u);
  EXPECT_EQ(files_with_suffix(out + ".moved", ".report.json").size(), 1u) << r.err;
  // `gpuleak run` refuses the folder once it is not the one it started with.
  std::string run_out = base + "/run-out";
  Result under_run = run({GPULEAK_CLI_PATH, "run", "--quiet", "--out", run_out, "--error-exitcode", "9", "--",
                          hostile(), "swap-out", run_out, other},
                         run_env(run_out));
  EXPECT_EQ(under_run.exit_code, 0) << "the program's own status: no report was made\n" << under_run.err;
  EXPECT_NE(under_run.err.find("is not the folder it was"), std::string::npos) << under_run.err;
  EXPECT_TRUE(files_with_suffix(other, "").size() == 2u) << "nothing written through the symlink";
  EXPECT_TRUE(files_with_suffix(run_out + ".moved", ".report.json").empty());
}

bool has_control_bytes(const std::string &text) {
  for (char ch : text)
    if ((static_cast<unsigned char>(ch) < 0x20 && ch != '\n') || ch == 0x7f) return true;
  return false;
}

// #25: the exit line and the bad-value line carried the environment's escapes to the terminal.
TEST(Safety, TheShimsLinesCarryNoTerminalEscapes) {
  std::string base = make_temp_dir("escapes");
  auto env = shim_env(base + "/\x1b]0;pwned\x07\x1b[31mred");
  Result exit_line = run({program("prog_leaky_static"), "3"}, env);
  EXPECT_EQ(exit_line.exit_code, 0) << exit_line.err;
  EXPECT_NE(exit_line.err.find("capture: "), std::string::npos) << exit_line.err;
  EXPECT_FALSE(has_control_bytes(exit_line.err)) << exit_line.err;
  env["GPULEAK_STACK_DEPTH"] =
      "\x1b[2J\x9b"
      "31m";
  Result bad = run({program("prog_leaky_static"), "3"}, env);
  EXPECT_NE(bad.err.find("bad value GPULEAK_STACK_DEPTH"), std::string::npos) << bad.err;
  EXPECT_FALSE(has_control_bytes(bad.err)) << bad.err;
  EXPECT_EQ(bad.err.find("\x9b"), std::string::npos) << "an 8-bit CSI byte";
}

// #25: `gpuleak run` reported every capture that appeared in --out while it ran, a neighbour's
// leak included.
TEST(Safety, TwoRunsSharingOneOutReportOnlyTheirOwnCaptures) {
  std::string out = make_temp_dir("shared-out");
  Result clean, leaky;
  std::thread a([&] {
    clean = run({GPULEAK_CLI_PATH, "run", "--quiet", "--out", out, "--error-exitcode", "9", "--", hostile(),
                 "clean-wait", "1500"},
                run_env(out));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the clean run is under way
  leaky = run(
      {GPULEAK_CLI_PATH, "run", "--quiet", "--out", out, "--error-exitcode", "9", "--", hostile(), "sigchld-ignore"},
      run_env(out));
  a.join();
  EXPECT_EQ(leaky.exit_code, 9) << leaky.err;
  EXPECT_EQ(clean.exit_code, 0) << "the neighbour's leak is not this run's\n" << clean.err;
  EXPECT_EQ(files_with_suffix(out, ".gpuleak").size(), 2u);
  EXPECT_EQ(files_with_suffix(out, ".report.json").size(), 2u) << "each capture reported once";
}

}  // namespace
}  // namespace gpuleak::test
