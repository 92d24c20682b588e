// The end of a capture: drain, close, and one short summary on stderr.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/recorder_state.h"
#include "format/words.h"

namespace gpuleak::core {

namespace {

std::string human_bytes(uint64_t b) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

extern "C" char **environ;

// Under plain LD_PRELOAD, analysis runs in the installed CLI, never in this process (DESIGN.md):
// `gpuleak report CAPTURE`, bounded in time, without our preload in its environment.
// Returns the CLI's exit status (1: a leak was found, asked for with --fail-on-leak), or -1.
int spawn_report(const State *s) {
  const Config &c = s->config;
  if (c.under_run || c.report_timeout_s == 0) return -1;
  if (c.cli_path.empty() || access(c.cli_path.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "gpuleak: analyze it with: gpuleak report %s\n", s->path.c_str());
    return -1;
  }
  std::vector<std::string> env_strings;
  for (char **e = environ; e && *e; ++e)
    if (std::strncmp(*e, "LD_PRELOAD=", 11) != 0) env_strings.emplace_back(*e);
  std::vector<char *> envp;
  for (auto &e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = {c.cli_path, "report"};
  if (c.quiet) args.push_back("--quiet");
  if (c.exit_code) args.push_back("--fail-on-leak");
  args.push_back(s->path);
  std::vector<char *> argv;
  for (auto &a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid;
  if (posix_spawn(&pid, c.cli_path.c_str(), nullptr, nullptr, argv.data(), envp.data()) != 0) return -1;
  for (unsigned waited_ms = 0;; waited_ms += 10) {
    int status;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (r < 0 && errno != EINTR) return -1;
    if (waited_ms >= c.report_timeout_s * 1000u) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      std::fprintf(stderr, "gpuleak: analysis took over %us; run: gpuleak report %s\n", c.report_timeout_s,
                   s->path.c_str());
      return -1;
    }
    usleep(10000);
  }
}

}  // namespace

int recorder_shutdown(const char *why) {
  State *s = state();
  // A vfork child (posix_spawn) shares our memory but is not us; a fork child has its own State.
  if (!s || s->pid != getpid()) return -1;
  int running = static_cast<int>(Phase::kRunning);
  if (!s->phase.compare_exchange_strong(running, static_cast<int>(Phase::kStopped))) {
    int idle = static_cast<int>(Phase::kIdle);
    s->phase.compare_exchange_strong(idle, static_cast<int>(Phase::kStopped));
    return -1;  // nothing was captured: no file, no output
  }
  // NVML (dlopen, nvmlInit) only on the ordinary exit path: _exit may be called from a signal
  // handler that interrupted the loader or malloc.
  if (std::strcmp(why, "exit") == 0) record_device_usage(s);
  writer_stop(s);
  // Under `gpuleak run` the command prints the analyzed summary instead of this one.
  if (uint64_t missed = s->uncaptured.load())  // always said: it means a capture path is missing
    std::fprintf(stderr, "gpuleak: CUPTI saw %" PRIu64 " allocation calls that no hook saw (first: %s)\n", missed,
                 s->first_uncaptured.load() ? s->first_uncaptured.load() : "?");
  if (s->config.under_run || s->summary_printed.exchange(true)) return -1;
  if (!s->config.quiet) {
    const LiveTable &t = s->live;
    BufferCounters totals = counter_totals(s);
    using format::count_of;
    std::fprintf(stderr, "gpuleak: %s, %s; live at exit: %s, %s on device (peak %s)%s%s; capture: %s\n",
                 count_of(totals.allocations, "allocation").c_str(), count_of(totals.frees, "free").c_str(),
                 count_of(t.live_count(), "allocation").c_str(), human_bytes(t.total_device_live()).c_str(),
                 human_bytes(t.total_device_peak()).c_str(), s->dropped.load() ? "; events dropped: " : "",
                 s->dropped.load() ? std::to_string(s->dropped.load()).c_str() : "", s->path.c_str());
  }
  int report = spawn_report(s);
  return report == 1 && s->config.exit_code ? static_cast<int>(s->config.exit_code) : -1;
}

void recorder_flush_from_signal() {
  State *s = state();
  if (!s || s->pid != getpid() || s->phase.load() != static_cast<int>(Phase::kRunning)) return;
  writer_flush_from_signal(s);
}

}  // namespace gpuleak::core
