// The at-exit `gpuleak report` of plain LD_PRELOAD runs (DESIGN.md: analysis never runs in the
// profiled process). Everything the child needs (argv, envp, the CLI's path) is built when the
// capture starts, in ordinary context; starting and awaiting it at exit uses async-signal-safe
// calls only, because _exit may be called from a signal handler that interrupted malloc.
//
// The child is created with clone(CLONE_VM | CLONE_VFORK), like posix_spawn, while SIGCHLD is
// blocked and at its default action: the program's own SIGCHLD handler never fires for it, and
// SIG_IGN cannot reap it automatically (so its status and the timeout hold). A child without an
// exit signal would be simpler, but the kernel turns its exit signal back into SIGCHLD once it
// has exec'ed. It runs in a process group of its own, killed whole when the timeout passes (no
// orphaned grandchildren). It ignores SIGPIPE: a stderr whose reader has gone costs its lines,
// never its exit status (which GPULEAK_EXITCODE reads).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "core/config.h"
#include "core/run_facts.h"
#include "core/signal_safe.h"

namespace gpuleak::core {

class ReportCommand {
 public:
  // Ordinary context (allocates). Leaves the command unprepared when there is nothing to run:
  // under `gpuleak run`, GPULEAK_REPORT_TIMEOUT=0, or no executable CLI (then `hint_only`).
  // The report runs in the capture's folder (`file.dir_fd`, held open since the capture was
  // created) on the capture's name: a folder renamed or swapped for a symlink meanwhile is never
  // read or written through. The descriptor stays open for the process's life.
  void prepare(const Config &config, const CaptureFile &file);
  bool ready() const { return ready_; }
  bool hint_only() const { return hint_only_; }  // say "analyze it with: gpuleak report PATH"

  // Async-signal-safe. Runs the prepared command and returns its exit status, or -1 (not
  // prepared, could not start, killed by a signal, or past `timeout_s`, then said in one line).
  int run(unsigned timeout_s) const;

 private:
  int await(pid_t pid, unsigned timeout_s) const;

  std::vector<std::string> args_, env_;  // fixed once prepared: the pointers below point into them
  std::vector<char *> argv_, envp_;
  std::string capture_path_;
  int dir_fd_ = -1;
  FileId dir_id_;  // what dir_fd_ was when prepared: a program that closed it may have reused the number
  bool ready_ = false;
  bool hint_only_ = false;
};

}  // namespace gpuleak::core
