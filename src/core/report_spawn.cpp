#include "core/report_spawn.h"

#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/signal_safe.h"

extern "C" char **environ;

namespace gpuleak::core {

namespace {

// The vfork child's stack. Static: nothing may be allocated at exit. One spawn per process.
alignas(64) char g_child_stack[64 * 1024];

struct ChildArgs {
  const char *path;
  int dir_fd;  // the capture's folder: the child's working directory
  char *const *argv;
  char *const *envp;
  bool quiet;  // our stderr is not safe to write to: give the child /dev/null instead
};

// Runs in the child, which shares the parent's memory until execve (the parent is suspended):
// only system calls, nothing that touches the parent's heap or locks.
int child_main(void *arg) {
  auto *a = static_cast<const ChildArgs *>(arg);
  setpgid(0, 0);  // a group of its own: the timeout kills the CLI and anything it started
  // The program's handlers must not run in this shared memory, and must not be inherited.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN)
      sigaction(sig, &dfl, nullptr);
  }
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, nullptr);  // gpuleak's own process: EPIPE, never death, on a gone stderr
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (a->dir_fd >= 0 && fchdir(a->dir_fd) != 0) syscall(SYS_exit_group, 127);
  if (a->quiet) {
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
      dup2(null, 1);
      dup2(null, 2);
    }
  }
  execve(a->path, a->argv, a->envp);
  syscall(SYS_exit_group, 127);  // not _exit: that is ours
  return 127;
}

void sleep_ms(long ms) {
  timespec t{0, ms * 1000000L};
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}

}  // namespace

void ReportCommand::prepare(const Config &c, const CaptureFile &file) {
  ready_ = hint_only_ = false;
  capture_path_ = file.path;
  dir_fd_ = file.dir_fd;
  dir_id_ = file_id(file.dir_fd);
  if (c.under_run || c.report_timeout_s == 0) return;
  if (c.cli_path.empty() || access(c.cli_path.c_str(), X_OK) != 0) {
    hint_only_ = true;
    return;
  }
  // Absolute: the child starts in the capture's folder.
  std::string cli = c.cli_path;
  char cwd[PATH_MAX];
  if (cli[0] != '/' && getcwd(cwd, sizeof cwd)) cli = std::string(cwd) + "/" + cli;
  args_ = {cli, "report"};
  if (c.quiet) args_.push_back("--quiet");
  if (c.exit_code) args_.push_back("--fail-on-leak");
  args_.push_back(file.name);  // in the folder itself (child_main's fchdir)
  // The environment as it is now, without our preload: the CLI must not profile itself.
  env_.clear();
  for (char **e = environ; e && *e; ++e)
    if (std::strncmp(*e, "LD_PRELOAD=", 11) != 0) env_.emplace_back(*e);
  argv_.clear();
  envp_.clear();
  for (std::string &a : args_) argv_.push_back(a.data());
  argv_.push_back(nullptr);
  for (std::string &e : env_) envp_.push_back(e.data());
  envp_.push_back(nullptr);
  ready_ = true;
}

int ReportCommand::run(unsigned timeout_s) const {
  // The folder's descriptor is the program's now (it closed ours): no report from a folder we
  // cannot vouch for, only the hint.
  const bool folder_gone = ready_ && !still_same_file(dir_fd_, dir_id_);
  if (hint_only_ || folder_gone)
    Line().text("gpuleak: analyze it with: gpuleak report ").text(capture_path_.c_str()).emit();
  if (!ready_ || folder_gone) return -1;
  ChildArgs a{argv_[0], dir_fd_, argv_.data(), envp_.data(), !stderr_is_safe()};
  // SIGCHLD is the program's: blocked on this thread and set to SIG_DFL while the child lives, so
  // that SIG_IGN (or SA_NOCLDWAIT) cannot reap it behind our back and the program's handler never
  // runs for it; setting SIG_DFL again after the reap discards the pending SIGCHLD (POSIX: a
  // pending signal whose action becomes "ignore" is discarded), then the program's action is put
  // back. Every other signal is blocked across the clone: the child starts with them blocked and
  // resets the program's handlers before it lets any in.
  sigset_t all, chld, old_mask;
  sigfillset(&all);
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  struct sigaction dfl {
  }, old_chld{};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  pthread_sigmask(SIG_SETMASK, &all, &old_mask);
  sigaction(SIGCHLD, &dfl, &old_chld);
  pid_t pid = clone(child_main, g_child_stack + sizeof g_child_stack, CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
  sigset_t waiting = old_mask;
  sigaddset(&waiting, SIGCHLD);
  pthread_sigmask(SIG_SETMASK, &waiting, nullptr);
  int result = -1;
  if (pid > 0) result = await(pid, timeout_s);
  sigaction(SIGCHLD, &dfl, nullptr);  // discards the SIGCHLD pending for our child
  sigaction(SIGCHLD, &old_chld, nullptr);
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  return result;
}

int ReportCommand::await(pid_t pid, unsigned timeout_s) const {
  int status = 0;
  for (unsigned waited_ms = 0;; waited_ms += 10) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (r < 0 && errno != EINTR) return -1;
    if (waited_ms >= timeout_s * 1000u) break;
    sleep_ms(10);
  }
  kill(-pid, SIGKILL);  // the group: the CLI and whatever it started
  kill(pid, SIGKILL);   // in case it never got to make its group
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  Line()
      .text("gpuleak: analysis took over ")
      .num(timeout_s)
      .text("s; run: gpuleak report ")
      .text(capture_path_.c_str())
      .emit();
  return -1;
}

}  // namespace gpuleak::core
