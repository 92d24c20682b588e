// Iterations from the Python frames, with no marks: the loop is read off the program's own source
// lines instead of the allocation sequence, so that it is found when the sequence differs from
// step to step (data-dependent ops, random augmentation, JAX's dispatch) and when a pool makes the
// sequence's period that of its chunks, not of the loop.
//
// Each allocation with Python frames lists, outermost first, the frames of the code that made it.
// A frame of one code object (file + function) whose line *goes back* between two consecutive
// allocations that pass through it has started a new pass of a loop: `for x in data: a = f(x)
// (line 10); b = g(a) (line 11)` gives lines 10 11 10 11 ..., and every 11 -> 10 starts a pass.
// Consecutive allocations at one line are one pass (one statement may allocate several times); a
// function called once per step goes back too (its next call starts at its first line again),
// which is the same iteration.
//
// 1. Candidates: the code objects of the user's own code (user_code.h: not the standard library,
//    site-packages, a framework's package, <frozen ...>; a --user-code root is): a loop in a library
//    (torch.nn.Sequential over its layers) is not the program's loop.
// 2. Tally (one walk of the allocation sequence): per candidate, the allocations through it, how
//    often its line went back, and the lowest line a pass started at (the loop's first allocating
//    line: lines above it ran before the loop).
// 3. Choice: a candidate needs min_repetitions passes and min_coverage of the allocations that
//    carry Python frames. Among those within 5% of the best coverage (the frames nearly every
//    allocation goes through), the fewest passes wins (an outer loop rather than the per-layer or
//    per-micro-batch loop nested in it), then the innermost (`main`'s loop rather than `<module>`).
// 4. Cutting (a second walk, for the chosen candidate only): the first pass starts at the first
//    allocation through the frame at the loop's first line or later, the others wherever the line
//    goes back. The last pass ends at the first allocation through the frame at a line past the
//    loop body (past the highest line of the earlier passes: code after the loop), and never lasts
//    more than the median pass (in events).
//
// The allocations of all threads are read in time order: a frame's lines are only its own, but
// several threads running the same function at once interleave their passes (use --loop then).
//
// Cost: one walk over the allocation sequence per stage, each allocation visiting the user frames
// of its site (precomputed once per site); memory proportional to sites, candidates and passes.
#include <algorithm>
#include <unordered_map>

#include "analysis/iteration_finding.h"
#include "analysis/timeline.h"
#include "text/paths.h"

namespace gpuleak::analysis::detail {

namespace {

struct UserFrame {
  uint32_t code = 0;   // dense candidate index
  uint32_t line = 0;   // 1-based
  uint32_t depth = 0;  // from the outermost recorded frame (0)
};

struct Frames {
  std::vector<uint64_t> code_keys;           // candidate -> file id << 32 | function id
  std::vector<std::vector<UserFrame>> site;  // per site: its user frames, each code object once
  std::vector<bool> python;                  // per site: it has Python frames at all
};

Frames user_frames(const format::Capture &capture, const SiteTable &sites, const UserCode &user) {
  Frames out;
  out.site.resize(sites.sites.size());
  out.python.resize(sites.sites.size(), false);
  std::unordered_map<uint64_t, uint32_t> index;
  std::unordered_map<uint32_t, bool> library;  // file string id -> not the user's
  for (size_t s = 0; s < sites.sites.size(); ++s) {
    auto it = capture.stacks.find(sites.sites[s].py_stack_id);
    if (sites.sites[s].py_stack_id == 0 || it == capture.stacks.end() || it->second.kind != format::StackKind::kPython)
      continue;
    const std::vector<uint64_t> &w = it->second.frames;
    const size_t n = w.size() / 2;
    out.python[s] = n > 0;
    for (size_t d = 0; d < n; ++d) {  // outermost first: the stack is innermost first
      const uint64_t key = w[2 * (n - 1 - d)];
      const uint64_t line = w[2 * (n - 1 - d) + 1];
      const uint32_t file = static_cast<uint32_t>(key >> 32);
      if (line == 0 || line > UINT32_MAX || file == 0) continue;
      auto [lib, fresh] = library.try_emplace(file, false);
      if (fresh) lib->second = !is_user_python_file(capture.string(file), user);
      if (lib->second) continue;
      auto [c, added] = index.try_emplace(key, static_cast<uint32_t>(out.code_keys.size()));
      if (added) out.code_keys.push_back(key);
      std::vector<UserFrame> &f = out.site[s];
      // Recursion: the outermost frame of a code object is the one a loop can live in.
      if (std::none_of(f.begin(), f.end(), [&](const UserFrame &u) { return u.code == c->second; }))
        f.push_back({c->second, static_cast<uint32_t>(line), static_cast<uint32_t>(d)});
    }
  }
  return out;
}

struct Tally {
  uint64_t allocations = 0;  // through this code object
  uint64_t depth_sum = 0;
  uint32_t last_line = 0;
  uint32_t backs = 0;                // times the line went back: passes - 1
  uint32_t first_line = UINT32_MAX;  // the lowest line a pass started at
};

}  // namespace

std::vector<Span> spans_from_python_loop(const format::Capture &capture, const Timeline &timeline,
                                         const SiteTable &sites, const UserCode &user, int min_repetitions,
                                         double min_coverage) {
  const std::vector<uint32_t> &seq = sites.alloc_sequence;
  const uint32_t reps = static_cast<uint32_t>(std::max(2, min_repetitions));
  if (seq.size() < reps) return {};
  const Frames frames = user_frames(capture, sites, user);
  if (frames.code_keys.empty()) return {};

  std::vector<Tally> tally(frames.code_keys.size());
  uint64_t with_python = 0;
  for (uint32_t site : seq) {
    with_python += frames.python[site];
    for (const UserFrame &f : frames.site[site]) {
      Tally &t = tally[f.code];
      if (t.allocations > 0 && f.line < t.last_line) ++t.backs, t.first_line = std::min(t.first_line, f.line);
      t.last_line = f.line;
      ++t.allocations;
      t.depth_sum += f.depth;
    }
  }

  uint64_t best_coverage = 0;
  auto eligible = [&](const Tally &t) {
    return t.backs + 1 >= reps && static_cast<double>(t.allocations) >= min_coverage * static_cast<double>(with_python);
  };
  for (const Tally &t : tally)
    if (eligible(t)) best_coverage = std::max(best_coverage, t.allocations);
  if (best_coverage == 0) return {};
  uint32_t pick = kNone;
  for (uint32_t c = 0; c < tally.size(); ++c) {
    const Tally &t = tally[c];
    if (!eligible(t) || t.allocations * 20 < best_coverage * 19) continue;
    if (pick == kNone) {
      pick = c;
      continue;
    }
    const Tally &p = tally[pick];
    // Fewest passes; then the deepest frame (mean depth compared by cross-multiplication).
    if (t.backs != p.backs ? t.backs < p.backs : t.depth_sum * p.allocations > p.depth_sum * t.allocations) pick = c;
  }
  const Tally &chosen = tally[pick];

  // The cuts: the first allocation at a line at or past the loop's first line, then every line
  // that goes back. The highest line of every pass but the last bounds the last one: an allocation
  // through the frame past it is code after the loop.
  std::vector<uint32_t> line_of(frames.site.size(), 0);  // per site: its line in the chosen frame
  for (size_t s = 0; s < frames.site.size(); ++s)
    for (const UserFrame &f : frames.site[s])
      if (f.code == pick) line_of[s] = f.line;
  std::vector<uint32_t> starts;
  uint32_t last_line = 0, top = 0, body_top = 0;
  for (uint32_t i = 0; i < seq.size(); ++i) {
    const uint32_t line = line_of[seq[i]];
    if (line == 0) continue;
    if (starts.empty() ? line >= chosen.first_line : line < last_line) {
      if (!starts.empty()) body_top = std::max(body_top, top);
      starts.push_back(i);
      top = 0;
    }
    if (!starts.empty()) top = std::max(top, line);
    last_line = line;
  }
  uint32_t tail = kNone;
  for (uint32_t i = starts.empty() ? 0 : starts.back() + 1; i < seq.size() && tail == kNone; ++i)
    if (line_of[seq[i]] > body_top) tail = i;
  if (starts.size() < reps) return {};
  const std::string loop = capture.string(static_cast<uint32_t>(frames.code_keys[pick])) + " (" +
                           text::basename_of(capture.string(static_cast<uint32_t>(frames.code_keys[pick] >> 32))) +
                           ":" + std::to_string(chosen.first_line) + ")";
  return spans_from_starts(timeline, sites, loop, starts, tail);
}

}  // namespace gpuleak::analysis::detail
