// `gpuleak run`'s wait for the program, with the program's own capture analyzed while the process
// is still ending. A CUDA process lives on after gpuleak's exit handler has closed its capture: the
// kernel and the driver release its context and the device's memory (bench/exit_gap.py measures
// how long). The report needs nothing from that time, so the analysis starts as soon as the
// capture file is closed (inotify IN_CLOSE_WRITE) and says it is complete (the final Stats record
// of an exit), and the report after the run uses it.
//
// Only the capture of the process `gpuleak run` started is taken early, and only once complete:
// a capture closed by exec (the next image goes on running) or by a child process (the program goes
// on running) is analyzed after the program, as before, so that the analysis never competes with
// a program that still runs. Without inotify or pidfd_open (Linux 5.3) this is a plain waitpid.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <thread>

#include "cli.h"

namespace gpuleak::cli {

class EarlyAnalysis {
 public:
  // Before the program starts (no close may be missed): watches `dir` for captures that carry the
  // run's `token`. `enabled` false: wait() is waitpid alone.
  EarlyAnalysis(const std::string &dir, const std::string &token, const output::ReadOptions &options, bool enabled);
  ~EarlyAnalysis();
  EarlyAnalysis(const EarlyAnalysis &) = delete;
  EarlyAnalysis &operator=(const EarlyAnalysis &) = delete;

  // waitpid(child) (its status), analyzing the child's capture meanwhile, as described above.
  int wait(pid_t child);
  // After wait(): the capture analyzed while the program ended, and its report as a single
  // capture's, by path (empty when none was).
  std::map<std::string, PreparedReport> take();

 private:
  void closed(const std::string &name, pid_t child);

  std::string dir_, token_;
  output::ReadOptions options_;
  int inotify_ = -1;
  std::thread worker_;
  PreparedReport result_;  // the worker's, read after it is joined
};

}  // namespace gpuleak::cli
