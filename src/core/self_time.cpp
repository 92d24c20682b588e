#include "core/self_time.h"

#include "core/signal_safe.h"

namespace gpuleak::core {

namespace {

// Microseconds on the clock's line; without one (no invariant TSC) the raw ticks, said so.
Line &micros(Line &line, uint64_t ticks) {
  uint64_t mult = detail::g_line.mult.load(std::memory_order_relaxed);
  if (!mult) return line.num(ticks).text(" ticks");
  return line.num(detail::scale(ticks, mult) / 1000).text(" us");
}

}  // namespace

void say_self_time(const SelfTime &t, const char *unwinder) {
  const uint64_t unwinds = t.unwinds.count.load(), hits = t.memo_hits.load();
  Line line;
  line.text("gpuleak: own time in the hooks (GPULEAK_SELF_TIME): ").num(t.records.count.load());
  micros(line.text(" allocation records in "), t.records.ticks.load());
  line.text(", ").num(t.frees.count.load() / 2);  // each free is timed in its two halves
  micros(line.text(" free records in "), t.frees.ticks.load());
  line.text("; native stacks (").text(unwinder).text("): ").num(unwinds).text(" (").num(hits).text(" from the memo, ");
  line.num(unwinds > hits ? t.frames.load() / (unwinds - hits) : 0).text(" frames per unwind) in ");
  micros(line, t.unwinds.ticks.load());
  line.text(", ").num(t.proofs.count.load()).text(" with proof in ");
  micros(line, t.proofs.ticks.load());
  line.text("; Python stacks: ").num(t.python.count.load()).text(" in ");
  micros(line, t.python.ticks.load()).emit();
}

}  // namespace gpuleak::core
