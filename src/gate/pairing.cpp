// The pairing of two reports' user lines (pairing.h): four tiers, each one to one over what the
// tiers before it left; exact, path_suffix and site greedily, moved as an alignment.
#include "gate/pairing.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <tuple>

#include "text/paths.h"

namespace gpuleak::gate {

namespace {

// What identifies one user line: its device and loop, the frame the analysis headlined and that
// frame's caller (a helper's line is one finding per line that called it).
struct Line {
  int device = 0;
  const Loop *loop = nullptr;
  const Frame *head = nullptr;    // nullptr: no frame of anybody's code is named (an unknown site)
  const Frame *caller = nullptr;  // nullptr: the headline is not in a helper (or an older report)
  const std::vector<size_t> *sites = nullptr;
};

std::vector<Line> lines_of(const Report &r) {
  std::vector<Line> out;
  for (const LeakGroup &g : r.leak_groups) {
    const Leak &largest = r.leaks[g.sites[0]];
    Line l;
    l.device = g.device;
    l.loop = r.loop_of(largest);
    // A group made from one leak (a report before leak_groups) is named by that leak's frame.
    if (g.headline && (g.headline->file || g.headline->function))
      l.head = &*g.headline, l.caller = g.caller ? &*g.caller : nullptr;
    else
      l.head = largest.stack.user_frame(), l.caller = largest.stack.caller ? &*largest.stack.caller : nullptr;
    l.sites = &g.sites;
    out.push_back(l);
  }
  return out;
}

constexpr size_t kSameFile = SIZE_MAX;  // equal paths (or both without one): better than any suffix

// How well two frames' files agree: kSameFile, the number of trailing components they share, or
// 0 when they are not the same file.
size_t file_score(const Frame &a, const Frame &b) {
  if (a.file.has_value() != b.file.has_value()) return 0;
  if (!a.file || *a.file == *b.file) return kSameFile;
  return common_path_suffix(*a.file, *b.file);
}

int64_t line_distance(const std::optional<int64_t> &a, const std::optional<int64_t> &b) {
  return a && b ? std::llabs(*a - *b) : 0;
}

// A candidate pair's cost in the greedy tiers (smaller pairs first).
struct Cost {
  size_t file = 0;   // file agreement (larger first)
  int64_t loop = 0;  // the loops' first-line distance (two loops of one function)
  bool operator<(const Cost &o) const { return std::tie(o.file, loop) < std::tie(file, o.loop); }
};

// The caller agrees when both lines have none, or both have one of the same function and file
// (`exact_line`: and line).
bool callers_agree(const Line &a, const Line &b, bool exact_line, size_t *file) {
  if (!a.caller || !b.caller) return !a.caller && !b.caller;
  const size_t f = file_score(*a.caller, *b.caller);
  if (f == 0 || a.caller->function != b.caller->function) return false;
  if (exact_line && a.caller->line != b.caller->line) return false;
  *file = std::min(*file, f);
  return true;
}

// The cost of pairing two lines in the exact, path_suffix or site tier (the moved tier is
// pair_moved's); nullopt when the tier does not pair them.
std::optional<Cost> tier_cost(PairedBy tier, const Line &a, const Line &b, const Report &ra, const Report &rb) {
  Cost c;
  c.loop = a.loop && b.loop ? line_distance(a.loop->first_line, b.loop->first_line) : 0;
  if (tier == PairedBy::kSite) {
    for (size_t i : *a.sites)
      for (size_t j : *b.sites)
        if (ra.leaks[i].site_id == rb.leaks[j].site_id) return c;
    return std::nullopt;
  }
  if (!a.head || !b.head || a.head->function != b.head->function || a.head->line != b.head->line) return std::nullopt;
  c.file = file_score(*a.head, *b.head);
  if (c.file == 0 || !callers_agree(a, b, true, &c.file)) return std::nullopt;
  if (tier == PairedBy::kExact && c.file != kSameFile) return std::nullopt;
  return c;
}

}  // namespace

const char *paired_by_name(PairedBy by) {
  switch (by) {
    case PairedBy::kExact:
      return "exact";
    case PairedBy::kPathSuffix:
      return "path_suffix";
    case PairedBy::kMoved:
      return "moved";
    case PairedBy::kSite:
      return "site";
  }
  return "?";
}

size_t common_path_suffix(const std::string &a, const std::string &b) {
  size_t n = 0, i = a.size(), j = b.size();
  while (i > 0 && j > 0) {
    const size_t sa = a.rfind('/', i - 1), sb = b.rfind('/', j - 1);
    const size_t ba = sa == std::string::npos ? 0 : sa + 1, bb = sb == std::string::npos ? 0 : sb + 1;
    if (a.compare(ba, i - ba, b, bb, j - bb) != 0 || i == ba) break;
    ++n;
    if (sa == std::string::npos || sb == std::string::npos) break;
    i = sa, j = sb;
  }
  return n;
}

bool loops_match(const Report &ra, const Loop *a, const Report &rb, const Loop *b) {
  if (!a || !b) return true;
  // One loop on each side: every leak of each report is of it, whatever each names it.
  if (ra.loops.size() == 1 && rb.loops.size() == 1) return true;
  if (a->name == b->name) return true;
  // An observed loop's name holds its line, which moves with the lines above it.
  if (a->file && a->function && b->file && b->function)
    return a->kind == b->kind && *a->function == *b->function &&
           (*a->file == *b->file || common_path_suffix(*a->file, *b->file) > 0);
  return false;
}

const LinePair *LinePairing::of_after(size_t index) const {
  for (const LinePair &p : pairs)
    if (p.after == index) return &p;
  return nullptr;
}

namespace {

// The moved tier: lines of one function (and one caller's function) that all shifted by the
// lines added above them keep their order, so within each such bucket the pairing is the
// order-preserving alignment that pairs the most lines and, among those, moves them the least in
// total (nearest-first alone would pair 44 with 43 when 40 -> 43 and 44 -> 47). On a tie the
// earlier baseline line pairs.
void pair_moved(const Report &ra, const std::vector<Line> &a, const Report &rb, const std::vector<Line> &b,
                std::vector<bool> &a_used, std::vector<bool> &b_used, LinePairing *out) {
  auto bucket_of = [](const Line &l) {
    std::string key = std::to_string(l.device) + '\n' + l.head->function.value_or("") + '\n' +
                      (l.head->file ? text::basename_of(*l.head->file) : "");
    if (l.caller)
      key += '\n' + l.caller->function.value_or("") + '\n' + (l.caller->file ? text::basename_of(*l.caller->file) : "");
    return key;
  };
  std::map<std::string, std::pair<std::vector<size_t>, std::vector<size_t>>> buckets;
  for (size_t i = 0; i < a.size(); ++i)
    if (!a_used[i] && a[i].head && a[i].head->function) buckets[bucket_of(a[i])].first.push_back(i);
  for (size_t j = 0; j < b.size(); ++j)
    if (!b_used[j] && b[j].head && b[j].head->function) buckets[bucket_of(b[j])].second.push_back(j);
  auto order = [](const std::vector<Line> &lines) {
    return [&lines](size_t x, size_t y) {
      auto key = [&](size_t k) {
        return std::make_pair(lines[k].head->line.value_or(0), lines[k].caller ? lines[k].caller->line.value_or(0) : 0);
      };
      return key(x) < key(y);
    };
  };
  for (auto &[key, sides] : buckets) {
    std::vector<size_t> &as = sides.first, &bs = sides.second;
    if (as.empty() || bs.empty()) continue;
    std::stable_sort(as.begin(), as.end(), order(a));
    std::stable_sort(bs.begin(), bs.end(), order(b));
    // best[i][j]: (pairs, -distance) of the best alignment of as[0, i) with bs[0, j).
    struct Score {
      size_t pairs = 0;
      int64_t distance = 0;
      bool better_than(const Score &o) const { return pairs != o.pairs ? pairs > o.pairs : distance < o.distance; }
    };
    const size_t n = as.size(), m = bs.size();
    std::vector<std::vector<Score>> best(n + 1, std::vector<Score>(m + 1));
    std::vector<std::vector<char>> step(n + 1, std::vector<char>(m + 1, 0));  // 'a' skip, 'b' skip, 'p' pair
    for (size_t i = 0; i <= n; ++i)
      for (size_t j = 0; j <= m; ++j) {
        if (i == 0 && j == 0) continue;
        Score s;
        char how = 0;
        // Skipping the later baseline line first: on a tie the earlier one keeps the pair.
        if (i > 0) s = best[i - 1][j], how = 'a';
        if (j > 0 && (how == 0 || best[i][j - 1].better_than(s))) s = best[i][j - 1], how = 'b';
        if (i > 0 && j > 0) {
          size_t file = kSameFile;
          const Line &x = a[as[i - 1]], &y = b[bs[j - 1]];
          if (loops_match(ra, x.loop, rb, y.loop) && file_score(*x.head, *y.head) > 0 &&
              callers_agree(x, y, false, &file)) {
            Score p = best[i - 1][j - 1];
            ++p.pairs;
            p.distance += line_distance(x.head->line, y.head->line) +
                          (x.caller && y.caller ? line_distance(x.caller->line, y.caller->line) : 0);
            if (p.better_than(s)) s = p, how = 'p';
          }
        }
        best[i][j] = s, step[i][j] = how;
      }
    std::vector<LinePair> found;
    for (size_t i = n, j = m; i > 0 || j > 0;) {
      const char how = step[i][j];
      if (how == 'p') found.push_back({as[i - 1], bs[j - 1], PairedBy::kMoved});
      if (how != 'b') --i;
      if (how != 'a') --j;
    }
    for (const LinePair &p : found) {
      a_used[p.before] = b_used[p.after] = true;
      out->pairs.push_back(p);
    }
  }
}

}  // namespace

LinePairing pair_lines(const Report &before, const Report &after) {
  const std::vector<Line> a = lines_of(before), b = lines_of(after);
  std::vector<bool> a_used(a.size(), false), b_used(b.size(), false);
  LinePairing out;
  for (PairedBy tier : {PairedBy::kExact, PairedBy::kPathSuffix, PairedBy::kMoved, PairedBy::kSite}) {
    if (tier == PairedBy::kMoved) {
      pair_moved(before, a, after, b, a_used, b_used, &out);
      continue;
    }
    struct Candidate {
      Cost cost;
      size_t i, j;
    };
    std::vector<Candidate> candidates;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a_used[i]) continue;
      for (size_t j = 0; j < b.size(); ++j) {
        if (b_used[j] || a[i].device != b[j].device || !loops_match(before, a[i].loop, after, b[j].loop)) continue;
        if (std::optional<Cost> c = tier_cost(tier, a[i], b[j], before, after)) candidates.push_back({*c, i, j});
      }
    }
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const Candidate &x, const Candidate &y) { return x.cost < y.cost; });
    for (const Candidate &c : candidates) {
      if (a_used[c.i] || b_used[c.j]) continue;
      a_used[c.i] = b_used[c.j] = true;
      out.pairs.push_back({c.i, c.j, tier});
    }
  }
  std::sort(out.pairs.begin(), out.pairs.end(), [](const LinePair &x, const LinePair &y) { return x.after < y.after; });
  for (size_t j = 0; j < b.size(); ++j)
    if (!b_used[j]) out.only_after.push_back(j);
  for (size_t i = 0; i < a.size(); ++i)
    if (!a_used[i]) out.only_before.push_back(i);
  return out;
}

bool rate_regressed(double before, double after, double tolerance) {
  return after > before && after - before > tolerance * before;
}

bool rate_improved(double before, double after, double tolerance) {
  return after < before && before - after > tolerance * before;
}

}  // namespace gpuleak::gate
