// Who keeps it (issue #30): the start-up hook's retention paths (capture format 1.7) joined to the
// allocations that held each path's address at the moment the path was sent.
//
// A path names the data pointer of one object that owns GPU memory (a tensor's storage, a CuPy
// array's buffer, a JAX array's buffer). Pass 1 of the replay keeps the live leak-candidate
// allocations by address (a framework's blocks, and device pointers); when the replay reaches a
// path's time, the block that starts at its address, else the device allocation whose range holds
// it, is the memory the path keeps: a block with all its bytes, a range inside a device allocation
// (a CuPy or JAX pool's chunk) with the object's bytes. After the verdicts, each leak gets the paths
// that hold its site's memory; a leak group takes the one that holds the most (retained_by).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>

#include "analysis/records.h"
#include "analysis/retention.h"

namespace gpuleak::analysis {

int64_t retained_by(const format::Capture &capture, const std::vector<const Leak *> &leaks, uint64_t *bytes) {
  // One path per object: the 53 tensors of `history` are 53 records of the same text, held together.
  std::map<std::string, std::pair<uint32_t, uint64_t>> held;  // text -> (its earliest record, bytes)
  for (const Leak *l : leaks)
    for (const auto &[path, b] : l->retained) {
      if (path >= capture.retentions.size()) continue;
      auto [it, fresh] = held.try_emplace(capture.retentions[path].text, path, 0);
      if (!fresh) it->second.first = std::min(it->second.first, path);
      it->second.second += b;
    }
  int64_t best = -1;
  uint64_t most = 0;
  for (const auto &[text, v] : held)
    if (v.second > most || (v.second == most && most > 0 && v.first < best)) best = v.first, most = v.second;
  if (bytes) *bytes = most;
  return best;
}

namespace detail {

RetentionJoin::RetentionJoin(const format::Capture &capture) : capture_(capture) {
  for (uint32_t i = 0; i < capture.retentions.size(); ++i)
    if (capture.retentions[i].address != 0) order_.push_back(i);
  std::stable_sort(order_.begin(), order_.end(),
                   [&](uint32_t a, uint32_t b) { return capture.retentions[a].ts_ns < capture.retentions[b].ts_ns; });
}

void RetentionJoin::born(uint32_t, const format::MemoryRecord &r, const LiveAllocation &a) {
  if (a.space != Space::kPoolBlock && a.space != Space::kDevicePtr) return;
  auto &live = a.space == Space::kPoolBlock ? blocks_ : device_;
  live[r.address] = Held{a.size, a.site, a.ordinal, a.slot};
}

void RetentionJoin::died(uint32_t, const format::MemoryRecord &r, const LiveAllocation &a) {
  if (a.space != Space::kPoolBlock && a.space != Space::kDevicePtr) return;
  auto &live = a.space == Space::kPoolBlock ? blocks_ : device_;
  auto it = live.find(r.address);
  if (it != live.end() && it->second.ordinal == a.ordinal) {
    live.erase(it);
    return;
  }
  // A context reset names no address: find the allocation by its ordinal.
  for (it = live.begin(); it != live.end(); ++it)
    if (it->second.ordinal == a.ordinal) {
      live.erase(it);
      return;
    }
}

void RetentionJoin::before(uint32_t, const format::MemoryRecord *r, const LiveSet &) {
  while (next_ < order_.size() && (!r || capture_.retentions[order_[next_]].ts_ns < r->ts_ns)) place(order_[next_++]);
}

void RetentionJoin::finish(const LiveSet &) {
  while (next_ < order_.size()) place(order_[next_++]);
}

void RetentionJoin::place(uint32_t path) {
  const format::Retention &p = capture_.retentions[path];
  auto block = blocks_.find(p.address);
  if (block != blocks_.end()) {
    matches_.push_back(Match{path, block->second.site, block->second.slot, block->second.size});
    return;
  }
  auto it = device_.upper_bound(p.address);
  if (it == device_.begin()) return;
  --it;
  const uint64_t start = it->first, size = it->second.size;
  if (p.address - start >= size) return;
  // Inside a device allocation: the object's bytes, at most what is left of the range.
  const uint64_t bytes = start == p.address ? size : std::min(p.size, size - (p.address - start));
  matches_.push_back(Match{path, it->second.site, it->second.slot, bytes});
}

void RetentionJoin::apply(const std::vector<int> &devices, const SiteTable &sites, Analysis *out) const {
  for (Leak &l : out->leaks) {
    std::map<uint32_t, uint64_t> held;
    for (const Match &m : matches_) {
      if (m.site >= sites.sites.size() || m.slot >= devices.size()) continue;
      if (devices[m.slot] == l.device && sites.sites[m.site] == l.site) held[m.path] += m.bytes;
    }
    l.retained.assign(held.begin(), held.end());
    std::stable_sort(l.retained.begin(), l.retained.end(),
                     [](const auto &a, const auto &b) { return a.second > b.second; });
  }
  const uint64_t anchor = capture_.header.monotonic_ns;
  for (const format::Retention &p : capture_.retentions) {
    if (p.address != 0) continue;
    RetentionWalk w;
    w.event = p.event;
    w.t_ns = since_start(p.ts_ns, anchor);
    w.duration_ns = p.size;
    unsigned long long objects = 0, paths = 0;
    char stopped[16] = "";
    if (std::sscanf(p.text.c_str(), "objects=%llu paths=%llu stopped=%15s", &objects, &paths, stopped) == 3) {
      w.objects = objects;
      w.paths = paths;
      w.stopped = stopped;
    }
    out->retention_walks.push_back(std::move(w));
  }
}

}  // namespace detail
}  // namespace gpuleak::analysis
