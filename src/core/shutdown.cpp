// The end of a capture: drain, close, and one short summary on stderr.
#include <unistd.h>

#include <cinttypes>
#include <cstdio>

#include "core/recorder_state.h"

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

}  // namespace

void recorder_shutdown(const char *why) {
  State *s = state();
  // A vfork child (posix_spawn) shares our memory but is not us; a fork child has its own State.
  if (!s || s->pid != getpid()) return;
  int running = static_cast<int>(Phase::kRunning);
  if (!s->phase.compare_exchange_strong(running, static_cast<int>(Phase::kStopped))) {
    int idle = static_cast<int>(Phase::kIdle);
    s->phase.compare_exchange_strong(idle, static_cast<int>(Phase::kStopped));
    return;  // nothing was captured: no file, no output
  }
  (void)why;
  writer_stop(s);
  // Under `gpuleak run` the command prints the analyzed summary instead of this one.
  if (uint64_t missed = s->uncaptured.load())  // always said: it means a capture path is missing
    std::fprintf(stderr, "gpuleak: CUPTI saw %" PRIu64 " allocation calls that no hook saw (first: %s)\n", missed,
                 s->first_uncaptured.load() ? s->first_uncaptured.load() : "?");
  if (s->config.quiet || s->config.under_run || s->summary_printed.exchange(true)) return;
  const LiveTable &t = s->live;
  std::fprintf(stderr,
               "gpuleak: %" PRIu64 " allocations, %" PRIu64 " frees; live at exit: %" PRIu64
               " allocations, %s on device (peak %s)%s%s; capture: %s\n",
               s->allocations.load(), s->frees.load(), t.live_count(), human_bytes(t.total_device_live()).c_str(),
               human_bytes(t.total_device_peak()).c_str(), s->dropped.load() ? "; events dropped: " : "",
               s->dropped.load() ? std::to_string(s->dropped.load()).c_str() : "", s->path.c_str());
}

void recorder_flush_from_signal() {
  State *s = state();
  if (!s || s->pid != getpid() || s->phase.load() != static_cast<int>(Phase::kRunning)) return;
  writer_flush_from_signal(s);
}

}  // namespace gpuleak::core
