#include "output/trace/leak_markers.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "output/trace/event_selection.h"

namespace gpuleak::output::trace {

std::vector<int> leak_of_lives(const MemoryEvents &events, const analysis::Analysis &a) {
  const std::vector<analysis::AllocationLife> &lives = events.lives().lives;
  std::vector<int> out(lives.size(), -1);
  if (a.leaks.empty()) return out;
  auto key = [](uint32_t stack, uint32_t py) { return static_cast<uint64_t>(stack) << 32 | py; };
  std::unordered_multimap<uint64_t, int> leaks;
  for (size_t i = 0; i < a.leaks.size(); ++i)
    leaks.emplace(key(a.leaks[i].site.stack_id, a.leaks[i].site.py_stack_id), static_cast<int>(i));
  for (size_t i = 0; i < lives.size(); ++i) {
    const analysis::AllocationLife &l = lives[i];
    auto range = leaks.equal_range(key(l.site.stack_id, l.site.py_stack_id));
    for (auto it = range.first; it != range.second; ++it)
      if (a.leaks[it->second].device == l.device) out[i] = it->second;
  }
  return out;
}

std::vector<LeakMarker> leak_markers(const MemoryEvents &events, const analysis::Analysis &a, size_t budget) {
  std::vector<LeakMarker> out;
  if (a.leaks.empty()) return out;
  std::vector<size_t> primary;  // indices into a.iterations, by start time
  for (size_t i = 0; i < a.iterations.size(); ++i)
    if (a.iterations[i].primary) primary.push_back(i);
  std::stable_sort(primary.begin(), primary.end(),
                   [&](size_t x, size_t y) { return a.iterations[x].start_ns < a.iterations[y].start_ns; });
  // The primary iteration holding time t (ns since the start), or none.
  auto iteration_at = [&](int64_t t) -> const size_t * {
    if (t < 0) return nullptr;
    const uint64_t u = static_cast<uint64_t>(t);
    auto it = std::upper_bound(primary.begin(), primary.end(), u,
                               [&](uint64_t v, size_t i) { return v < a.iterations[i].start_ns; });
    if (it == primary.begin()) return nullptr;
    --it;
    return u <= a.iterations[*it].end_ns ? &*it : nullptr;
  };

  // Per leak, per iteration (std::map: in iteration order).
  std::vector<std::map<size_t, LeakMarker>> by_iteration(a.leaks.size());
  const std::vector<int> leak_of = leak_of_lives(events, a);
  const std::vector<analysis::AllocationLife> &lives = events.lives().lives;
  for (size_t i = 0; i < lives.size(); ++i) {
    const analysis::AllocationLife &l = lives[i];
    if (leak_of[i] < 0 || l.death != analysis::kStillAlive) continue;
    const int64_t born = events.time(l.birth);
    const size_t *iteration = iteration_at(born);
    if (!iteration) continue;
    auto [it, fresh] = by_iteration[leak_of[i]].try_emplace(*iteration);
    LeakMarker &m = it->second;
    if (fresh) {
      m.leak = static_cast<size_t>(leak_of[i]);
      m.iteration = *iteration;
      m.ts_ns = born;
    }
    m.bytes += l.size;
    ++m.count;
  }
  const size_t per_leak = budget / a.leaks.size();
  for (const auto &leak : by_iteration) {
    std::vector<LeakMarker> markers;
    for (const auto &[i, m] : leak) markers.push_back(m);
    std::sort(markers.begin(), markers.end(),
              [](const LeakMarker &x, const LeakMarker &y) { return x.ts_ns < y.ts_ns; });
    thin_evenly(&markers, per_leak);
    out.insert(out.end(), markers.begin(), markers.end());
  }
  std::stable_sort(out.begin(), out.end(), [](const LeakMarker &x, const LeakMarker &y) { return x.ts_ns < y.ts_ns; });
  return out;
}

}  // namespace gpuleak::output::trace
