// The end of a capture: drain, close, one short summary on stderr, and the at-exit report.
// Two ways in: recorder_shutdown at an ordinary exit (on_exit), and recorder_exit_now from _exit
// and _Exit, which may run in a signal handler that interrupted malloc: that path and
// everything after the file is closed are async-signal-safe (signal_safe.h, docs/safety.md).
#include <unistd.h>

#include <cstring>

#include "core/recorder_state.h"
#include "core/signal_safe.h"

namespace gpuleak::core {

namespace {

// Idle or running -> stopped; true when a capture was running (there is a file to finish).
bool stop(State *s) {
  // A vfork child (posix_spawn) shares our memory but is not us; a fork child has its own State.
  if (!s || s->pid != getpid()) return false;
  int running = static_cast<int>(Phase::kRunning);
  if (s->phase.compare_exchange_strong(running, static_cast<int>(Phase::kStopped))) return true;
  int idle = static_cast<int>(Phase::kIdle);
  s->phase.compare_exchange_strong(idle, static_cast<int>(Phase::kStopped));
  return false;  // nothing was captured: no file, no output
}

// After the capture file is closed. Async-signal-safe. `totals` null: the counters could not be
// read (no summary line). Returns GPULEAK_EXITCODE when the at-exit report found a leak and it
// was asked for, else -1.
int finish(State *s, const BufferCounters *totals) {
  if (uint64_t missed = s->counters.uncaptured.load()) {  // always said: it means a capture path is missing
    const char *first = s->counters.first_uncaptured.load();
    Line()
        .text("gpuleak: CUPTI saw ")
        .num(missed)
        .text(" allocation calls that no hook saw (first: ")
        .text(first ? first : "?")
        .text(")")
        .emit();
  }
  if (s->config.self_time) say_self_time(s->self_time, s->stacks.unwinder_name());
  // Under `gpuleak run` the command prints the analyzed summary instead of this one.
  if (s->config.under_run || s->counters.summary_printed.exchange(true)) return -1;
  if (!s->config.quiet && totals) {
    const LiveTally &t = s->drain.tally;
    Line line;
    // Plurals as format::count_of says them, without its std::string: this path is signal-safe.
    auto noun = [](uint64_t n, const char *one, const char *many) { return n == 1 ? one : many; };
    line.text("gpuleak: ").num(totals->allocations).text(noun(totals->allocations, " allocation, ", " allocations, "));
    line.num(totals->frees).text(noun(totals->frees, " free; ", " frees; "));
    const uint64_t live = t.live_count();
    line.text("live at exit: ").num(live).text(noun(live, " allocation, ", " allocations, "));
    line.bytes(t.total_live());
    line.text(" on device (peak ").bytes(t.total_peak()).text(")");
    if (uint64_t dropped = s->counters.dropped.load()) line.text("; events dropped: ").num(dropped);
    line.text("; capture: ").text(s->drain.path.c_str()).emit();
  }
  int report = s->writer.report.run(s->config.report_timeout_s);
  return report == 1 && s->config.exit_code ? static_cast<int>(s->config.exit_code) : -1;
}

}  // namespace

int recorder_shutdown(const char *why) {
  State *s = state();
  if (!stop(s)) return -1;
  // NVML (dlopen, nvmlInit) only here, on the ordinary exit path.
  if (std::strcmp(why, "exit") == 0) record_device_usage(s);
  writer_stop(s);
  BufferCounters totals = counter_totals(s);
  return finish(s, &totals);
}

int recorder_exit_now() {
  State *s = state();
  if (!stop(s)) return -1;
  // No writer_stop: joining a thread, NVML and the module map all take locks the interrupted
  // thread may hold. The buffers go out as they are, with the final Stats record.
  BufferCounters totals;
  bool finished = writer_finish_from_signal(s, &totals);
  return finish(s, finished ? &totals : nullptr);
}

void recorder_flush_from_signal() {
  State *s = state();
  if (!s || s->pid != getpid() || s->phase.load() != static_cast<int>(Phase::kRunning)) return;
  writer_flush_from_signal(s);
}

bool recorder_before_exec() {
  State *s = state();
  if (!s || s->pid != getpid() || s->phase.load() != static_cast<int>(Phase::kRunning)) return false;
  return writer_flush_before_exec(s);
}

void recorder_after_failed_exec() {
  if (State *s = state()) writer_resume_after_exec(s);
}

}  // namespace gpuleak::core
