#include "early_analysis.h"

#include <poll.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "format/capture_peek.h"
#include "log/log.h"
#include "output/report_json.h"
#include "text/escape.h"

#ifndef GPULEAK_VERSION
#define GPULEAK_VERSION "0.0.0"
#endif

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434  // the same number on every architecture (Linux 5.3)
#endif

namespace gpuleak::cli {

EarlyAnalysis::EarlyAnalysis(const std::string &dir, const std::string &token, const output::ReadOptions &options,
                             bool enabled)
    : dir_(dir), token_(token), options_(options) {
  if (!enabled) return;
  inotify_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_ >= 0 && inotify_add_watch(inotify_, dir.c_str(), IN_CLOSE_WRITE) < 0) {
    close(inotify_);
    inotify_ = -1;
  }
}

EarlyAnalysis::~EarlyAnalysis() {
  if (worker_.joinable()) worker_.join();
  if (inotify_ >= 0) close(inotify_);
}

int EarlyAnalysis::wait(pid_t child) {
  int status = 0;
  const int pidfd = inotify_ >= 0 ? static_cast<int>(syscall(SYS_pidfd_open, child, 0)) : -1;
  if (pidfd >= 0) {
    // The child's end and the folder's closes, until the child has ended (EINTR: a signal was
    // forwarded to it; keep waiting).
    pollfd fds[2] = {{pidfd, POLLIN, 0}, {inotify_, POLLIN, 0}};
    for (;;) {
      if (poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        break;  // waitpid below, as without a pidfd
      }
      if (fds[1].revents & POLLIN) {
        alignas(inotify_event) char buf[4096];
        ssize_t n;
        while ((n = read(inotify_, buf, sizeof buf)) > 0) {
          for (ssize_t at = 0; at < n;) {
            const auto *e = reinterpret_cast<const inotify_event *>(buf + at);
            if ((e->mask & IN_CLOSE_WRITE) && e->len > 0) closed(e->name, child);
            at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
          }
        }
      }
      if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) break;
    }
    close(pidfd);
  }
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (worker_.joinable()) {
    const auto before = std::chrono::steady_clock::now();
    worker_.join();
    GPULEAK_LOG_DEBUG("run: the early analysis ended %.1f ms after the program",
                      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - before).count());
  }
  return status;
}

// A capture was closed: when it is the child's, of this run (its header's pid, its RunInfo's token),
// and ends with the final Stats record of an exit, its analysis starts (an exec closes the file
// without one, and the next image goes on running). The worker checks the whole file again.
void EarlyAnalysis::closed(const std::string &name, pid_t child) {
  const std::string ext = ".gpuleak";
  if (worker_.joinable() || name.size() <= ext.size() || name.compare(name.size() - ext.size(), ext.size(), ext) != 0)
    return;
  // The shim names a capture <program>.<pid>[.rankN][.K].gpuleak: a neighbour's (a --out shared
  // with other runs) is passed over without reading it.
  if (name.find("." + std::to_string(child) + ".") == std::string::npos) return;
  const std::string path = dir_ + "/" + name;
  format::CapturePeek peek;
  if (!format::peek_capture(path, &peek) || peek.pid != static_cast<uint32_t>(child) || peek.run_token != token_ ||
      !peek.finished)
    return;
  GPULEAK_LOG_DEBUG("run: %s is complete; analyzing it while the program ends", text::printable(path).c_str());
  try {
    worker_ = std::thread([this, path, child] {
      try {
        std::string error;
        std::unique_ptr<output::AnalyzedCapture> a = output::open_and_analyze(path, options_, &error);
        if (!a || !a->capture().stats || a->capture().stats->final_record != 1 ||
            a->capture().header.pid != static_cast<uint32_t>(child))
          return;
        // The report as `gpuleak report` writes it of this capture alone (the usual case: a run
        // whose processes wrote one capture); with several, the report makes them again.
        output::ReportContext ctx;
        ctx.gpuleak_version = GPULEAK_VERSION;
        result_.single = output::make_report_document(a->capture(), a->analysis(), a->sites(), ctx);
        result_.opened = std::move(a);
      } catch (...) {  // out of memory: the report after the run makes it again
      }
    });
  } catch (const std::system_error &) {  // no thread: the report after the run makes it
  }
}

std::map<std::string, PreparedReport> EarlyAnalysis::take() {
  std::map<std::string, PreparedReport> out;
  if (worker_.joinable()) worker_.join();
  if (result_.opened) {
    std::string path = result_.opened->path();
    out.emplace(std::move(path), std::move(result_));
  }
  return out;
}

}  // namespace gpuleak::cli
