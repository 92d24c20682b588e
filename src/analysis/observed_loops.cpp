// Iterations from the observed Python loops (capture format 1.5: LoopRecord, LoopPassRecord; the
// observer is tools/python/gpuleak/_observe.py): every loop level and callback of the user's code
// is a candidate, and the one whose passes explain the memory is chosen (DESIGN.md "Iterations").
//
// 1. Passes. A loop's back edges end its passes. Each run (a thread, an asyncio task) has passes
//    of its own (issue #33: a handler called on four worker threads makes one pass per call, a
//    coroutine per request one per request). Consecutive back edges of a run are one pass
//    unless a pass of an enclosing level (its parent chain, on the same run) ran in between:
//    then the loop ran again from the start (an instance per request, say). An instance's first
//    pass starts at its first allocation through the loop's own lines (the loop's code object, a
//    line of its body), after the enclosing level's last event; its last, when the loop was left
//    by a `break` or an exception rather than by its head, ends at its last allocation through
//    those lines before the enclosing level's next event. A callback's pass is a call: from its
//    start to its return.
// 2. Candidates: levels with min_auto_repetitions passes whose passes hold at least half as many
//    allocations as the level holding the most.
// 3. What each pass keeps: the bytes born in it still live at the end of the level's last pass.
//    A level whose passes run on several threads at once (a handler on a pool of workers) counts
//    an allocation of one of those threads in that thread's pass only: by time alone, another
//    worker's call would take it, and the handler would look irregular beside its inner loop.
//    Over the steady passes (the first tenth, at least one, and the last are left out: warm-up,
//    and what the last pass is still using), a level "explains" the memory when its passes keep
//    something regularly (at least 1 pass in 20). Among the levels keeping at least half of the
//    most any level keeps, the most regular wins (a request loop whose every pass keeps its
//    cache, not the token loop where most passes keep nothing); levels within 0.1 of it are a
//    tie, and the one with the fewest passes, the outer, wins. When no level keeps anything, the
//    outer level wins.
// 4. Every loop of the run (issue #33): the candidates are grouped by their outermost candidate
//    ancestor (levels nested in one another: a request loop and its token loop), groups whose
//    passes overlap in time are merged (a dispatcher's loop and its handler on worker threads),
//    and step 3 picks one level per group; the group of the level picked over all candidates
//    keeps that one, the primary. Each picked level is judged on its own passes (analysis.cpp).
//
// Cost: one replay to time the allocations, one to place the candidates' passes, one to score
// them; memory proportional to sites, allocations through user lines, passes and live allocations.
#include <algorithm>
#include <map>
#include <unordered_map>

#include "analysis/iteration_finding.h"
#include "analysis/records.h"
#include "analysis/replay_observer.h"
#include "analysis/timeline.h"
#include "text/paths.h"

namespace gpuleak::analysis::detail {

namespace {

using format::LoopPassOp;
using format::LoopRecord;

struct Event {
  uint64_t ts;
  uint8_t op;
};

// Where a pass runs: its thread and its asyncio task (0: none). Passes of one run follow each
// other; runs apart overlap (a handler on four worker threads, requests in flight on one thread).
using Run = std::pair<uint32_t, uint64_t>;

struct Level {
  const LoopRecord *loop = nullptr;
  std::map<Run, std::vector<Event>> runs;  // each in time order
  size_t event_count = 0;
  // While its passes are placed, one run at a time: that run's events and the enclosing levels'
  // events on the same run, in time order.
  std::vector<Event> events;
  std::vector<uint64_t> outer;
  std::vector<Span> spans;
  // Scoring.
  uint64_t allocations = 0;   // born inside its passes
  std::vector<int64_t> kept;  // per pass: bytes born in it alive at the end of the last pass
  double regular = 0;         // share of steady passes that keep something
  int64_t kept_total = 0;     // bytes kept by the steady passes
};

std::string where(const format::Capture &capture, const LoopRecord &l) {
  std::string at = text::basename_of(capture.string(l.file_id)) + ":" + std::to_string(l.first_line);
  if (l.last_line > l.first_line) at += "-" + std::to_string(l.last_line);
  return at;
}

// Per site: whether one of its Python frames is in `loop`'s code object at a line of its body.
std::vector<bool> sites_in(const format::Capture &capture, const SiteTable &sites, const LoopRecord &loop) {
  std::vector<bool> in(sites.sites.size(), false);
  const uint64_t key = static_cast<uint64_t>(loop.file_id) << 32 | loop.function_id;
  for (size_t s = 0; s < sites.sites.size(); ++s) {
    auto it = capture.stacks.find(sites.sites[s].py_stack_id);
    if (sites.sites[s].py_stack_id == 0 || it == capture.stacks.end() || it->second.kind != format::StackKind::kPython)
      continue;
    const std::vector<uint64_t> &w = it->second.frames;
    for (size_t i = 0; i + 1 < w.size(); i += 2)
      if (w[i] == key && w[i + 1] >= loop.first_line && w[i + 1] <= loop.last_line) {
        in[s] = true;
        break;
      }
  }
  return in;
}

// The first time in `times` (ascending) within (lo, hi), or kNone64.
constexpr uint64_t kNever = UINT64_MAX;
uint64_t first_between(const std::vector<uint64_t> &times, uint64_t lo, uint64_t hi) {
  auto it = std::upper_bound(times.begin(), times.end(), lo);
  return it != times.end() && *it < hi ? *it : kNever;
}
uint64_t last_between(const std::vector<uint64_t> &times, uint64_t lo, uint64_t hi) {
  auto it = std::lower_bound(times.begin(), times.end(), hi);
  if (it == times.begin()) return kNever;
  --it;
  return *it > lo ? *it : kNever;
}

void add_span(Level &level, const std::string &name, uint64_t start, uint64_t end) {
  Span s;
  s.loop = name;
  s.start_ns = start;
  s.end_ns = std::max(start, end);
  level.spans.push_back(std::move(s));
}

// Step 1 for a loop: passes between back edges, instances split by the enclosing levels' events.
void loop_passes(Level &level, const std::string &name, const std::vector<uint64_t> &own, uint64_t end_ns) {
  const std::vector<Event> &ev = level.events;
  size_t i = 0;
  while (i < ev.size()) {
    // One instance: back edges with no enclosing event in between.
    size_t j = i;
    auto next_outer = [&](uint64_t t) {
      auto it = std::upper_bound(level.outer.begin(), level.outer.end(), t);
      return it == level.outer.end() ? kNever : *it;
    };
    while (j + 1 < ev.size() && next_outer(ev[j].ts) > ev[j + 1].ts) ++j;
    auto before = std::lower_bound(level.outer.begin(), level.outer.end(), ev[i].ts);
    const uint64_t lo = before == level.outer.begin() ? 0 : *(before - 1);
    const uint64_t hi = std::min(next_outer(ev[j].ts), end_ns + 1);
    const uint64_t first = first_between(own, lo, ev[i].ts);
    if (first != kNever) add_span(level, name, first, ev[i].ts);
    for (size_t k = i; k < j; ++k) add_span(level, name, ev[k].ts, ev[k + 1].ts);
    const uint64_t last = last_between(own, ev[j].ts, hi);
    if (last != kNever) add_span(level, name, ev[j].ts, last);
    i = j + 1;
  }
}

// Step 1 for a callback: each call, start to return (a start with no return: to the next start).
void callback_passes(Level &level, const std::string &name, const std::vector<uint64_t> &own, uint64_t end_ns) {
  std::vector<uint64_t> open;
  const std::vector<Event> &ev = level.events;
  for (size_t k = 0; k < ev.size(); ++k) {
    if (ev[k].op == static_cast<uint8_t>(LoopPassOp::kCallStart)) {
      if (open.size() > 0 && k > 0 && ev[k - 1].op == static_cast<uint8_t>(LoopPassOp::kCallStart) &&
          open.size() == 1) {
        // The previous call never said it returned (it raised): it ends where this one starts.
        add_span(level, name, open.back(), ev[k].ts);
        open.pop_back();
      }
      open.push_back(ev[k].ts);
    } else if (!open.empty()) {
      if (open.size() == 1) add_span(level, name, open.back(), ev[k].ts);  // the outermost call of a recursion
      open.pop_back();
    }
  }
  if (open.size() == 1) {
    const uint64_t last = last_between(own, open.back(), end_ns + 1);
    if (last != kNever) add_span(level, name, open.back(), last);
  }
}

// Step 3: one replay, every candidate's passes at once.
void score(const Timeline &timeline, std::vector<Level *> &levels) {
  struct Cursor {
    size_t next = 0;
  };
  std::vector<Cursor> cursors(levels.size());
  std::vector<uint32_t> last_end(levels.size());
  // Passes that overlap in time (requests in flight on one thread): an allocation goes to the
  // latest-begun pass that holds it, at its birth as at its free (pass_of); the cursor, which
  // takes the first pass not yet ended, only serves passes that follow one another.
  std::vector<char> overlapping(levels.size(), 0);
  for (size_t c = 0; c < levels.size(); ++c) {
    Level &l = *levels[c];
    std::sort(l.spans.begin(), l.spans.end(), [](const Span &a, const Span &b) { return a.begin < b.begin; });
    l.kept.assign(l.spans.size(), 0);
    last_end[c] = l.spans.empty() ? 0 : l.spans.back().end;
    uint32_t reach = 0;
    for (const Span &s : l.spans) {
      overlapping[c] = overlapping[c] || s.begin < reach;
      reach = std::max(reach, s.end);
    }
  }
  struct Born {
    uint64_t size;
    uint32_t birth;
    uint32_t tid;
  };
  std::unordered_map<LiveKey, Born, LiveKeyHash> live;
  const bool blocks = timeline.pool_block_allocs > 0;
  auto pass_of = [&](const Level &l, uint32_t p) -> size_t {
    auto it =
        std::upper_bound(l.spans.begin(), l.spans.end(), p, [](uint32_t x, const Span &s) { return x < s.begin; });
    if (it == l.spans.begin()) return SIZE_MAX;
    --it;
    return p < it->end ? static_cast<size_t>(it - l.spans.begin()) : SIZE_MAX;
  };
  // A level whose passes run on several threads: each thread's passes (indices, by begin). An
  // allocation on one of those threads is in that thread's pass or in none; another thread's (a
  // framework's worker making a step's outputs) goes by time, as on one thread.
  std::vector<std::unordered_map<uint32_t, std::vector<uint32_t>>> by_thread(levels.size());
  for (size_t c = 0; c < levels.size(); ++c)
    for (uint32_t i = 0; i < levels[c]->spans.size(); ++i)
      if (levels[c]->spans[i].tid) by_thread[c][levels[c]->spans[i].tid].push_back(i);
  auto thread_pass = [&](size_t c, uint32_t p, uint32_t tid, size_t *pass) {
    auto t = by_thread[c].find(tid);
    if (t == by_thread[c].end()) return false;
    const std::vector<Span> &spans = levels[c]->spans;
    auto it = std::upper_bound(t->second.begin(), t->second.end(), p,
                               [&](uint32_t x, uint32_t i) { return x < spans[i].begin; });
    *pass = it != t->second.begin() && p < spans[*(it - 1)].end ? *(it - 1) : SIZE_MAX;
    return true;
  };
  // Passes that follow one another: the one at the cursor, which only moves forward.
  auto at_cursor = [&](size_t c, uint32_t k) {
    const Level &l = *levels[c];
    Cursor &cur = cursors[c];
    while (cur.next < l.spans.size() && l.spans[cur.next].end <= k) ++cur.next;
    return cur.next < l.spans.size() && l.spans[cur.next].begin <= k ? cur.next : pass_of(l, k);
  };
  auto release = [&](const Born &b, uint32_t k) {
    for (size_t c = 0; c < levels.size(); ++c) {
      if (k >= last_end[c]) continue;  // alive at the end of that level's last pass: kept
      size_t i;
      if (!thread_pass(c, b.birth, b.tid, &i)) i = pass_of(*levels[c], b.birth);
      if (i != SIZE_MAX) levels[c]->kept[i] -= static_cast<int64_t>(b.size);
    }
  };
  timeline.replay([&](uint32_t k, const format::MemoryRecord &r) {
    const Space space = space_of(r.kind);
    const LiveKey key{r.address, space == Space::kHost ? -1 : device_of(r.device), space};
    if (r.op == static_cast<uint8_t>(format::Op::kFree)) {
      auto it = live.find(key);
      if (it != live.end()) release(it->second, k), live.erase(it);
      return;
    }
    if (!owned_alloc(r)) return;
    if (blocks ? space != Space::kPoolBlock : !on_device(space)) return;
    auto [it, fresh] = live.try_emplace(key, Born{r.size, k, r.tid});
    if (!fresh) release(it->second, k), it->second = Born{r.size, k, r.tid};
    for (size_t c = 0; c < levels.size(); ++c) {
      Level &l = *levels[c];
      size_t i;
      if (!thread_pass(c, k, r.tid, &i)) i = overlapping[c] ? pass_of(l, k) : at_cursor(c, k);
      if (i == SIZE_MAX) continue;
      ++l.allocations;
      l.kept[i] += static_cast<int64_t>(r.size);
    }
  });
  for (Level *l : levels) {
    const size_t n = l->spans.size();
    const size_t from = std::max<size_t>(1, n / 10), to = n > 0 ? n - 1 : 0;
    size_t keeping = 0;
    for (size_t i = from; i < to; ++i)
      if (l->kept[i] > 0) ++keeping, l->kept_total += l->kept[i];
    l->regular = to > from ? static_cast<double>(keeping) / static_cast<double>(to - from) : 0;
    if (l->regular < 0.05) l->regular = 0, l->kept_total = 0;
  }
}

}  // namespace

namespace {

// The level that explains the memory among `candidates` (step 3 of the top comment), null when
// none holds allocations.
Level *choose(const std::vector<Level *> &candidates) {
  uint64_t most = 0;
  for (Level *l : candidates) most = std::max(most, l->allocations);
  std::vector<Level *> eligible;
  for (Level *l : candidates)
    if (most > 0 && l->allocations * 2 >= most) eligible.push_back(l);
  if (eligible.empty()) return nullptr;
  int64_t most_kept = 0;
  for (Level *l : eligible) most_kept = std::max(most_kept, l->kept_total);
  double best_regular = 0;
  for (Level *l : eligible)
    if (l->kept_total * 2 >= most_kept) best_regular = std::max(best_regular, l->regular);
  Level *pick = nullptr;
  for (Level *l : eligible) {
    if (most_kept > 0 && (l->kept_total * 2 < most_kept || l->regular + 0.1 < best_regular)) continue;
    // The outer one: fewest passes, then the shallower, then the one defined first.
    if (!pick || l->spans.size() < pick->spans.size() ||
        (l->spans.size() == pick->spans.size() && l->loop->depth < pick->loop->depth))
      pick = l;
  }
  return pick;
}

bool test_file(const std::string &file) {
  const std::string base = text::basename_of(file);
  const size_t n = base.size();
  return n > 3 && base.compare(n - 3, 3, ".py") == 0 &&
         (base.compare(0, 5, "test_") == 0 || (n > 8 && base.compare(n - 8, 8, "_test.py") == 0));
}

// LoopJudgment::test: the innermost function named test* of `level`'s chain, its own first.
std::string test_of(const format::Capture &capture, const std::vector<Level> &levels,
                    const std::unordered_map<uint32_t, size_t> &index, const Level &level) {
  const LoopRecord *l = level.loop;
  for (int guard = 0; l && guard < 64; ++guard) {
    const std::string qualname = capture.string(l->function_id);
    const size_t dot = qualname.rfind('.');
    const std::string name = dot == std::string::npos ? qualname : qualname.substr(dot + 1);
    const std::string file = capture.string(l->file_id);
    if (name.compare(0, 4, "test") == 0 && test_file(file) && qualname.find('<') == std::string::npos) {
      std::string id = text::basename_of(file);
      size_t from = 0;
      for (size_t to; (to = qualname.find('.', from)) != std::string::npos; from = to + 1)
        id += "::" + qualname.substr(from, to - from);
      return id + "::" + qualname.substr(from);
    }
    auto it = index.find(l->parent_id);
    l = l->parent_id != 0 && it != index.end() ? levels[it->second].loop : nullptr;
  }
  return {};
}

}  // namespace

std::vector<Span> spans_from_observed(const format::Capture &capture, const Timeline &timeline, const SiteTable &sites,
                                      int min_repetitions, IterationChoice *choice, std::vector<LoopJudgment> *judged) {
  for (const format::Observer &o : capture.observers) {
    choice->observer = o.note;
    choice->observed = o.method == static_cast<uint32_t>(format::ObserverMethod::kMonitoring);
  }
  if (capture.loops.empty() || sites.alloc_positions.empty()) return {};
  const uint32_t reps = static_cast<uint32_t>(std::max(2, min_repetitions));

  std::unordered_map<uint32_t, size_t> index;
  std::vector<Level> levels(capture.loops.size());
  for (size_t i = 0; i < capture.loops.size(); ++i) {
    levels[i].loop = &capture.loops[i];
    index.emplace(capture.loops[i].id, i);
  }
  // Events per level and run (thread, asyncio task).
  for (const format::LoopPassRecord &p : capture.loop_passes) {
    auto it = index.find(p.loop_id);
    if (it == index.end()) continue;
    levels[it->second].runs[{p.tid, p.task_id}].push_back({p.ts_ns, p.op});
    ++levels[it->second].event_count;
  }
  for (Level &l : levels)
    for (auto &[run, ev] : l.runs)
      std::stable_sort(ev.begin(), ev.end(), [](const Event &a, const Event &b) { return a.ts < b.ts; });

  // The allocations' times, once, for the first and last passes of each instance.
  const std::vector<uint64_t> alloc_ts = times_at(timeline, sites.alloc_positions);
  std::vector<Level *> candidates;
  for (size_t i = 0; i < levels.size(); ++i) {
    Level &l = levels[i];
    if (l.event_count + 1 < reps) continue;
    const std::vector<bool> in = sites_in(capture, sites, *l.loop);
    std::vector<uint64_t> own;
    for (size_t a = 0; a < sites.alloc_sequence.size() && a < alloc_ts.size(); ++a)
      if (in[sites.alloc_sequence[a]]) own.push_back(alloc_ts[a]);
    std::sort(own.begin(), own.end());
    const std::string name = capture.string(l.loop->function_id) + " (" + where(capture, *l.loop) + ")";
    // Each run on its own: a pass belongs to its thread or task (issue #33). Passes on several
    // threads overlap in time: each is then tagged with its thread, whose allocations it holds.
    bool threads = false;
    for (const auto &entry : l.runs) threads = threads || entry.first.first != l.runs.begin()->first.first;
    for (const auto &[run, ev] : l.runs) {
      const size_t first_span = l.spans.size();
      l.events = ev;
      l.outer.clear();
      uint32_t parent = l.loop->parent_id;
      for (int guard = 0; parent != 0 && guard < 64; ++guard) {  // a cycle in untrusted records ends here
        auto it = index.find(parent);
        if (it == index.end() || it->second == i) break;
        auto same = levels[it->second].runs.find(run);
        if (same != levels[it->second].runs.end())
          for (const Event &e : same->second) l.outer.push_back(e.ts);
        parent = levels[it->second].loop->parent_id;
      }
      std::sort(l.outer.begin(), l.outer.end());
      if (l.loop->kind == static_cast<uint8_t>(format::LoopKind::kCallback))
        callback_passes(l, name, own, timeline.end_ns);
      else
        loop_passes(l, name, own, timeline.end_ns);
      if (threads)
        for (size_t k = first_span; k < l.spans.size(); ++k) l.spans[k].tid = run.first;
    }
    std::vector<Event>().swap(l.events);
    std::vector<uint64_t>().swap(l.outer);
    if (l.spans.size() >= reps) candidates.push_back(&l);
  }
  choice->levels = static_cast<uint32_t>(candidates.size());
  if (candidates.empty()) return {};

  std::vector<Span *> all;
  for (Level *l : candidates)
    for (Span &s : l->spans) all.push_back(&s);
  place_spans(timeline, all);
  score(timeline, candidates);

  Level *pick = choose(candidates);
  if (!pick) return {};
  const LoopRecord &chosen = *pick->loop;
  const bool callback = chosen.kind == static_cast<uint8_t>(format::LoopKind::kCallback);
  choice->kind = callback ? "callback" : "loop";
  choice->file = capture.string(chosen.file_id);
  choice->function = capture.string(chosen.function_id);
  choice->first_line = chosen.first_line;
  choice->last_line = chosen.last_line;
  choice->passes = static_cast<uint32_t>(pick->spans.size());
  choice->summary = std::to_string(pick->spans.size()) + (callback ? " calls of " : " passes of the loop at ") +
                    (callback ? choice->function + " at " : std::string()) + where(capture, chosen);

  // Every other group of levels nested in one another (by their outermost candidate) is judged
  // too, by its own choice: the loops of a run one after the other, the tests of a suite.
  std::map<size_t, std::vector<Level *>> groups;
  auto root_of = [&](Level *l) {
    size_t root = static_cast<size_t>(l - levels.data());
    uint32_t parent = l->loop->parent_id;
    for (int guard = 0; parent != 0 && guard < 64; ++guard) {
      auto it = index.find(parent);
      if (it == index.end()) break;
      if (levels[it->second].spans.size() >= reps) root = it->second;
      parent = levels[it->second].loop->parent_id;
    }
    return root;
  };
  for (Level *l : candidates) groups[root_of(l)].push_back(l);
  // Groups whose passes overlap in time are one: a dispatcher's loop and the handler it runs on
  // other threads or tasks explain the same memory, and the step-3 choice picks between them.
  struct Cluster {
    uint64_t start = UINT64_MAX, end = 0;
    std::vector<Level *> members;
  };
  std::vector<Cluster> clusters;
  for (auto &[root, members] : groups) {
    Cluster c;
    for (Level *l : members)
      for (const Span &sp : l->spans) c.start = std::min(c.start, sp.start_ns), c.end = std::max(c.end, sp.end_ns);
    c.members = std::move(members);
    clusters.push_back(std::move(c));
  }
  std::sort(clusters.begin(), clusters.end(), [](const Cluster &a, const Cluster &b) { return a.start < b.start; });
  std::vector<Cluster> merged;
  for (Cluster &c : clusters) {
    if (!merged.empty() && c.start < merged.back().end) {
      merged.back().end = std::max(merged.back().end, c.end);
      merged.back().members.insert(merged.back().members.end(), c.members.begin(), c.members.end());
    } else {
      merged.push_back(std::move(c));
    }
  }
  std::vector<Level *> chosen_levels;
  for (Cluster &c : merged) {
    const bool has_pick = std::find(c.members.begin(), c.members.end(), pick) != c.members.end();
    Level *p = has_pick ? pick : choose(c.members);
    if (p) chosen_levels.push_back(p);
  }
  std::vector<Span> out;
  for (Level *l : chosen_levels) {
    LoopJudgment j;
    j.name = l->spans.front().loop;
    j.kind = l->loop->kind == static_cast<uint8_t>(format::LoopKind::kCallback) ? "callback" : "loop";
    j.file = capture.string(l->loop->file_id);
    j.function = capture.string(l->loop->function_id);
    j.first_line = l->loop->first_line;
    j.last_line = l->loop->last_line;
    j.test = test_of(capture, levels, index, *l);
    j.primary = l == pick;
    j.threads = static_cast<uint32_t>(l->runs.size());
    if (judged) judged->push_back(std::move(j));
    for (Span &s : l->spans) out.push_back(std::move(s));
  }
  return out;
}

std::string suggest_loop(const format::Capture &capture, const SiteTable &sites, const UserCode &user) {
  // The outermost observed loop that most allocations pass through.
  const LoopRecord *best = nullptr;
  size_t best_count = 0;
  for (const LoopRecord &l : capture.loops) {
    if (l.kind != static_cast<uint8_t>(format::LoopKind::kLoop)) continue;
    const std::vector<bool> in = sites_in(capture, sites, l);
    size_t count = 0;
    for (uint32_t s : sites.alloc_sequence) count += in[s];
    if (count == 0) continue;
    if (!best || l.depth < best->depth || (l.depth == best->depth && count > best_count)) best = &l, best_count = count;
  }
  if (best) return text::basename_of(capture.string(best->file_id)) + ":" + std::to_string(best->first_line);
  // Without observed loops: the user's code object that the most allocations pass through (the
  // innermost of those within 5 % of the most: the function that runs the loop, not `<module>`),
  // at the line most of them pass through: `--loop FILE:LINE` on a statement marks each of its
  // executions.
  struct Code {
    uint64_t allocations = 0, depth_sum = 0;
    std::unordered_map<uint32_t, uint64_t> lines;
  };
  std::unordered_map<uint64_t, Code> codes;
  std::unordered_map<uint32_t, bool> library;
  for (uint32_t s : sites.alloc_sequence) {
    auto it = capture.stacks.find(sites.sites[s].py_stack_id);
    if (sites.sites[s].py_stack_id == 0 || it == capture.stacks.end() || it->second.kind != format::StackKind::kPython)
      continue;
    const std::vector<uint64_t> &w = it->second.frames;
    for (size_t i = 0; i + 1 < w.size(); i += 2) {
      const uint32_t file = static_cast<uint32_t>(w[i] >> 32);
      auto [lib, fresh] = library.try_emplace(file, false);
      if (fresh) lib->second = file == 0 || !is_user_python_file(capture.string(file), user);
      if (lib->second || w[i + 1] == 0 || w[i + 1] > UINT32_MAX) continue;
      Code &c = codes[w[i]];
      ++c.allocations;
      c.depth_sum += (w.size() - i) / 2;  // from the outermost frame
      ++c.lines[static_cast<uint32_t>(w[i + 1])];
    }
  }
  uint64_t most = 0;
  for (const auto &[key, c] : codes) most = std::max(most, c.allocations);
  const std::pair<const uint64_t, Code> *pick = nullptr;
  for (const auto &entry : codes) {
    const Code &c = entry.second;
    if (c.allocations * 20 < most * 19) continue;
    if (!pick || c.depth_sum * pick->second.allocations > pick->second.depth_sum * c.allocations ||
        (c.depth_sum * pick->second.allocations == pick->second.depth_sum * c.allocations && entry.first < pick->first))
      pick = &entry;
  }
  if (!pick) return {};
  uint32_t line = 0;
  uint64_t count = 0;
  for (const auto &[l, n] : pick->second.lines)
    if (n > count || (n == count && l < line)) line = l, count = n;
  return text::basename_of(capture.string(static_cast<uint32_t>(pick->first >> 32))) + ":" + std::to_string(line);
}

}  // namespace gpuleak::analysis::detail
