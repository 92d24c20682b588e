// What the shim promises a host program (docs/safety.md), each promise against a program that
// breaks the usual assumptions (tests/programs/hostile.cpp): signal handlers that call _exit,
// descriptors closed or dup2'ed over, SIGCHLD ignored or handled, exec, sudden death.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "process.h"

namespace gpuleak::test {
namespace {

std::string read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string hostile() { return program("prog_hostile"); }

// The shim's environment with the at-exit report on (plain LD_PRELOAD, as users run it).
std::map<std::string, std::string> with_report(const std::string &out) {
  auto env = shim_env(out);
  env["GPULEAK_CLI"] = GPULEAK_CLI_PATH;
  env["GPULEAK_QUIET"] = "1";
  return env;
}

// #18.1: _exit from a signal handler while the main thread is inside malloc. The shim's _exit
// used to allocate (building the report's argv) and hung on the arena lock 21 times in 30.
TEST(Safety, ExitFromASignalHandlerDuringMallocNeverHangs) {
  constexpr int kRuns = 20;
  for (int i = 0; i < kRuns; ++i) {
    std::string out = make_temp_dir("exit-in-signal");
    Result r = run({"timeout", "-s", "KILL", "20", hostile(), "exit-in-signal"}, with_report(out));
    ASSERT_EQ(r.exit_code, 3) << "run " << i << " (137: hung and was killed)\n" << r.err;
    format::Capture c = read_only_capture(out);
    ASSERT_TRUE(c.stats.has_value()) << "run " << i;
    EXPECT_EQ(c.stats->final_record, 1u) << "run " << i << ": _exit writes the final Stats record";
    EXPECT_GE(count(c).allocs, 1) << "run " << i;
  }
}

// #18.2: a program that closes every descriptor and opens its own file gets exactly what it wrote.
TEST(Safety, ClosingEveryDescriptorLeavesTheProgramsFilesIntact) {
  std::string out = make_temp_dir("close-fds");
  std::string file = out + "/own";
  Result r = run({hostile(), "close-fds", file}, shim_env(out));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (int i = 0; i < 8; ++i) EXPECT_EQ(read_file(file + std::to_string(i)), "hello world\n") << i;
  EXPECT_NE(r.err.find("tracking is off"), std::string::npos) << r.err;
  // What reached the file before stays readable: at least the first allocation, written at once.
  format::Capture c = read_only_capture(out);
  EXPECT_GE(count(c).allocs, 1);
}

TEST(Safety, Dup2OverTheCaptureLeavesTheProgramsFileIntactAndStopsTracking) {
  std::string out = make_temp_dir("dup2");
  std::string file = out + "/own.txt";
  Result r = run({hostile(), "dup2-capture", file}, shim_env(out));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_file(file), "hello world\n");
  EXPECT_NE(r.err.find("closed or replaced the capture file's descriptor"), std::string::npos) << r.err;
}

// The "tracking is off" line never lands in a regular file the program put on descriptor 2.
TEST(Safety, TheTrackingOffLineNeverGoesIntoTheProgramsFileOnDescriptorTwo) {
  std::string out = make_temp_dir("fd2");
  std::string file = out + "/own", err_file = out + "/err.txt";
  Result r = run({hostile(), "close-fds", file, err_file}, shim_env(out));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (int i = 0; i < 8; ++i) EXPECT_EQ(read_file(file + std::to_string(i)), "hello world\n") << i;
  EXPECT_EQ(read_file(err_file), "");
}

// #18.3: the at-exit report child and the program's own SIGCHLD handling.
TEST(Safety, SigchldIgnoredKeepsTheExitCodeOnLeak) {
  std::string out = make_temp_dir("sigchld-ign");
  auto env = with_report(out);
  env["GPULEAK_EXITCODE"] = "42";
  Result r = run({hostile(), "sigchld-ignore"}, env);
  EXPECT_EQ(r.exit_code, 42) << r.err;
}

TEST(Safety, TheProgramsSigchldHandlerNeverFiresForTheReport) {
  std::string out = make_temp_dir("sigchld-handler");
  auto env = with_report(out);
  env["GPULEAK_EXITCODE"] = "42";
  Result r = run({hostile(), "sigchld-handler"}, env);
  EXPECT_EQ(r.exit_code, 42) << r.err;
  EXPECT_EQ(r.out, "");
}

bool process_gone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

// The report's timeout kills its whole process group: nothing it started outlives it.
TEST(Safety, ReportTimeoutLeavesNoOrphans) {
  std::string out = make_temp_dir("orphans");
  std::string cli = out + "/slow-cli.sh", pid_file = out + "/grandchild.pid";
  {
    std::ofstream s(cli);
    s << "#!/bin/sh\nsleep 300 &\necho $! > " << pid_file << "\nwait\n";
  }
  chmod(cli.c_str(), 0755);
  auto env = shim_env(out);
  env["GPULEAK_CLI"] = cli;
  env["GPULEAK_REPORT_TIMEOUT"] = "1";
  Result r = run({hostile(), "sigchld-ignore"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("analysis took over 1s"), std::string::npos) << r.err;
  std::string text = read_file(pid_file);
  ASSERT_FALSE(text.empty()) << "the fake CLI ran";
  pid_t grandchild = std::stoi(text);
  bool gone = false;
  for (int i = 0; i < 50 && !(gone = process_gone(grandchild)); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (!gone) kill(grandchild, SIGKILL);
  EXPECT_TRUE(gone) << "the report's child " << grandchild << " outlived the timeout";
}

// #18.4: exec replaces the image without exit handlers; every buffered event must be on disk.
TEST(Safety, ExecKeepsEveryAllocationInTheCapture) {
  for (const char *how : {"execl", "execv", "execvp", "execlp"}) {
    std::string out = make_temp_dir(std::string("exec-") + how);
    Result r = run({hostile(), "exec", how}, shim_env(out));
    EXPECT_EQ(r.exit_code, 0) << how << ": /bin/true's status\n" << r.err;
    format::Capture c = read_only_capture(out);
    EXPECT_EQ(count(c).allocs, 101) << how;
  }
}

// An exec that fails returns to the program: the capture goes on, to its final record.
TEST(Safety, AFailedExecLeavesTheCaptureRunning) {
  std::string out = make_temp_dir("exec-fails");
  Result r = run({hostile(), "exec", "fails"}, shim_env(out));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  format::Capture c = read_only_capture(out);
  EXPECT_EQ(count(c).allocs, 121);
  ASSERT_TRUE(c.stats.has_value());
  EXPECT_EQ(c.stats->final_record, 1u);
}

// #18.5 (#17.2): a program that dies right after its first allocation keeps its call site.
TEST(Safety, DeathRightAfterTheFirstAllocationKeepsItsCallSite) {
  for (const char *how : {"kill", "abort"}) {
    std::string out = make_temp_dir(std::string("early-") + how);
    Result r = run({hostile(), "die-after-first", how}, shim_env(out));
    EXPECT_EQ(r.signal, std::string(how) == "kill" ? SIGKILL : SIGABRT);
    auto files = files_with_suffix(out, ".gpuleak");
    ASSERT_EQ(files.size(), 1u) << how;
    format::Capture c = read_only_capture(out);
    EXPECT_EQ(count(c).allocs, 1) << how;
    EXPECT_FALSE(c.modules.empty()) << how;
    Result report = run({GPULEAK_CLI_PATH, "report", "--format", "text", files[0]}, {});
    EXPECT_TRUE(report.exit_code == 0 || report.exit_code == 1) << report.err;
    EXPECT_NE(report.out.find("allocate_first"), std::string::npos) << how << "\n" << report.out;
  }
}

// #18.7: a bad setting is said by the processes that use CUDA, once; others print nothing.
TEST(Safety, ABadSettingIsSaidOnlyAtTheFirstCudaUse) {
  std::string out = make_temp_dir("badenv-quiet");
  auto env = shim_env(out);
  env["GPULEAK_STACK_DEPTH"] = "lots";
  Result t = run({"/bin/true"}, env);
  EXPECT_EQ(t.err, "");
  Result sh = run({"/bin/sh", "-c", "ls / > /dev/null; echo hi"}, env);
  EXPECT_EQ(sh.out, "hi\n");
  EXPECT_EQ(sh.err, "");
  Result cuda = run({program("prog_leaky_static"), "3"}, env);
  EXPECT_EQ(cuda.exit_code, 0);
  EXPECT_EQ(cuda.err,
            "gpuleak: bad value GPULEAK_STACK_DEPTH=\"lots\"; tracking is off, the program continues "
            "unprofiled\n");
}

TEST(Safety, NestedOutputFoldersAreCreated) {
  std::string base = make_temp_dir("nested");
  Result r = run({program("prog_exit_status")}, shim_env(base + "/a/b/c"));
  EXPECT_EQ(r.exit_code, 7) << r.err;
  EXPECT_EQ(files_with_suffix(base + "/a/b/c", ".gpuleak").size(), 1u) << r.err;
  auto env = shim_env(base);
  env["LD_PRELOAD"] = "";
  env["GPULEAK_LIB"] = GPULEAK_SHIM_PATH;
  Result run_r =
      run({GPULEAK_CLI_PATH, "run", "--quiet", "--out", base + "/x/y/z", "--", program("prog_exit_status")}, env);
  EXPECT_EQ(run_r.exit_code, 7) << run_r.err;
  EXPECT_EQ(files_with_suffix(base + "/x/y/z", ".gpuleak").size(), 1u) << run_r.err;
}

// #17.4: GPULEAK_EXITCODE and --error-exitcode under `gpuleak run`.
TEST(Safety, RunReturnsTheLeakExitCodeOnlyOverSuccess) {
  std::string out = make_temp_dir("run-exitcode");
  auto env = shim_env(out);
  env["LD_PRELOAD"] = "";
  env["GPULEAK_LIB"] = GPULEAK_SHIM_PATH;
  auto gl_run = [&](std::vector<std::string> flags, std::vector<std::string> cmd) {
    std::vector<std::string> argv = {GPULEAK_CLI_PATH, "run", "--quiet", "--out", out};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.push_back("--");
    argv.insert(argv.end(), cmd.begin(), cmd.end());
    return run(argv, env);
  };
  std::vector<std::string> leaky = {program("prog_leaky_static"), "5"};
  EXPECT_EQ(gl_run({}, leaky).exit_code, 0) << "off by default";
  EXPECT_EQ(gl_run({"--error-exitcode", "9"}, leaky).exit_code, 9);
  EXPECT_EQ(gl_run({"--error-exitcode", "9"}, {program("prog_all_paths_static")}).exit_code, 0) << "no leak";
  EXPECT_EQ(gl_run({"--error-exitcode", "9"}, {program("prog_exit_status")}).exit_code, 7) << "its own failure wins";
  env["GPULEAK_EXITCODE"] = "23";
  EXPECT_EQ(gl_run({}, leaky).exit_code, 23);
  EXPECT_EQ(gl_run({"--error-exitcode", "9"}, leaky).exit_code, 9) << "the flag wins";
  env["GPULEAK_EXITCODE"] = "lots";
  Result bad = gl_run({}, leaky);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("GPULEAK_EXITCODE"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace gpuleak::test
