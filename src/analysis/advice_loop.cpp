// Advice from what happens inside each iteration: churn (a buffer allocated and freed in every
// iteration), cache thrash (cached blocks released in one burst and allocated again, every
// iteration) and serialization (synchronous allocation calls eating the iteration's time).
#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "analysis/advice_internal.h"

namespace gpuleak::analysis::detail {

using format::Kind;
using format::Op;

namespace {

bool is_free(const Timeline &t, uint32_t p) { return t.at(p).op == static_cast<uint8_t>(Op::kFree); }

uint64_t key_of(uint16_t slot, uint32_t site) { return static_cast<uint64_t>(slot) << 32 | site; }

// Stream-ordered calls return at once; everything else may wait for the device.
bool stream_ordered(const format::MemoryRecord &r) {
  switch (static_cast<format::Api>(r.api)) {
    case format::Api::cuMemAllocAsync:
    case format::Api::cuMemAllocAsync_ptsz:
    case format::Api::cuMemAllocFromPoolAsync:
    case format::Api::cuMemAllocFromPoolAsync_ptsz:
    case format::Api::cuMemFreeAsync:
    case format::Api::cuMemFreeAsync_ptsz:
      return true;
    default:
      return r.kind == static_cast<uint8_t>(Kind::kAsync);
  }
}

struct ThrashDevice {
  std::vector<uint32_t> iterations;  // post-warm-up iterations with a burst (ascending, unique)
  uint64_t blocks = 0, bytes = 0, born_in_loop = 0;
  uint64_t free_ns = 0, alloc_ns = 0;
  uint32_t example_free = 0;                           // a burst free's position, for the API name
  std::unordered_map<uint32_t, uint64_t> alloc_sites;  // site index -> blocks freed in bursts
};

// Finds the release bursts of one device; marks the allocations they freed in *in_burst.
ThrashDevice find_bursts(const LoopView &loop, uint16_t slot, std::vector<bool> *in_burst) {
  const Timeline &t = loop.timeline;
  const AdviceOptions &o = loop.options;
  ThrashDevice dev;
  const std::vector<Change> &changes = loop.changes(slot);
  uint64_t live = 0;
  size_t k = 0;
  while (k < changes.size()) {
    const Change &c = changes[k];
    // A stream-ordered free gives its block back to the pool, which keeps it: no cache is emptied.
    if (c.delta >= 0 || !is_free(t, c.pos) || stream_ordered(t.at(c.pos))) {
      live += c.delta;
      ++k;
      continue;
    }
    // A burst: consecutive frees of this device from one free call site (the recorder keeps no
    // stack for frees today: then any consecutive frees), inside one iteration.
    const format::MemoryRecord &first = t.at(c.pos);
    const uint64_t before = live;
    const uint32_t j = loop.iteration_of(c.pos);
    const uint32_t stop = j != kNone ? loop.end[j] : kNone;
    size_t e = k;
    uint64_t bytes = 0;
    while (e < changes.size() && changes[e].delta < 0 && changes[e].pos < stop && is_free(t, changes[e].pos) &&
           !stream_ordered(t.at(changes[e].pos)) && t.at(changes[e].pos).stack_id == first.stack_id &&
           t.at(changes[e].pos).py_stack_id == first.py_stack_id) {
      bytes += static_cast<uint64_t>(-changes[e].delta);
      ++e;
    }
    live -= bytes;
    bool counts = j != kNone && j >= loop.w && e - k >= o.thrash_min_blocks && before > 0 &&
                  static_cast<double>(bytes) >= o.thrash_min_release_share * static_cast<double>(before);
    if (counts) {
      if (dev.iterations.empty() || dev.iterations.back() != j) dev.iterations.push_back(j);
      dev.blocks += e - k;
      dev.bytes += bytes;
      dev.example_free = c.pos;
      for (size_t i = k; i < e; ++i) {
        const Alloc &a = loop.ledger.allocs[changes[i].alloc];
        (*in_burst)[changes[i].alloc] = true;
        ++dev.alloc_sites[a.site];
        dev.free_ns += t.at(changes[i].pos).duration_ns;
        dev.alloc_ns += t.at(a.birth).duration_ns;
        uint32_t born = loop.iteration_of(a.birth);
        if (born != kNone && born >= loop.w) ++dev.born_in_loop;
      }
    }
    k = e;
  }
  return dev;
}

void thrash_finding(const LoopView &loop, uint16_t slot, const ThrashDevice &dev, std::vector<Advice> *out) {
  if (!loop.most(dev.iterations.size()) || dev.born_in_loop * 2 < dev.blocks) return;
  // The site that allocated most of the released blocks: where the cache is refilled (the frees
  // carry no stack of their own).
  std::pair<uint32_t, uint64_t> best{0, 0};
  for (const auto &[site, count] : dev.alloc_sites)
    if (count > best.second || (count == best.second && site < best.first)) best = {site, count};
  const double it = static_cast<double>(dev.iterations.size());
  Advice a;
  a.kind = AdviceKind::kCacheThrash;
  a.device = loop.ledger.devices[slot];
  a.has_site = true;
  a.site = loop.sites.sites[best.first];
  const double blocks = static_cast<double>(dev.blocks) / it, bytes = static_cast<double>(dev.bytes) / it;
  const double reacquired = static_cast<double>(dev.born_in_loop) / it;
  const double time = static_cast<double>(dev.free_ns + dev.alloc_ns) / it;
  a.evidence = {{"blocks_freed_per_iteration", blocks},
                {"bytes_freed_per_iteration", bytes},
                {"blocks_reallocated_per_iteration", reacquired},
                {"free_time_ns_per_iteration", static_cast<double>(dev.free_ns) / it},
                {"alloc_time_ns_per_iteration", static_cast<double>(dev.alloc_ns) / it},
                {"iterations_with_pattern", it},
                {"post_warmup_iterations", static_cast<double>(loop.post())}};
  a.saving = {{"time_ns_per_iteration", time}};
  a.message = "Every iteration the device's cached blocks are released in one burst (" +
              std::to_string(static_cast<uint64_t>(blocks + 0.5)) + " blocks, " + bytes_text(bytes) +
              ", as torch.cuda.empty_cache() does) and allocated again: do not empty the cache inside the loop "
              "(once after it, if at all); that saves up to " +
              duration_text(time) + " per iteration spent in " + api_text(loop.timeline, dev.example_free) +
              " and the matching allocations (a synchronous free also waits for the GPU's queued work, which "
              "the loop would otherwise wait for elsewhere).";
  out->push_back(std::move(a));
}

struct ChurnSite {
  uint16_t slot = 0;
  uint32_t site = 0;
  uint32_t last_iteration = kNone;
  uint64_t iterations = 0, count = 0, bytes = 0;
  uint64_t min_size = UINT64_MAX, max_size = 0;
  uint64_t alloc_ns = 0, free_ns = 0;
  bool async = true;  // every allocation stream-ordered
  uint32_t example_alloc = 0, example_free = 0;
};

void churn_finding(const LoopView &loop, const ChurnSite &s, std::vector<Advice> *out) {
  const AdviceOptions &o = loop.options;
  if (!loop.most(s.iterations)) return;
  if (static_cast<double>(s.max_size) > o.churn_max_size_ratio * static_cast<double>(std::max<uint64_t>(s.min_size, 1)))
    return;
  const double it = static_cast<double>(s.iterations);
  const double time = static_cast<double>(s.alloc_ns + s.free_ns) / it;
  if (s.async && time < static_cast<double>(o.churn_min_async_ns)) return;
  Advice a;
  a.kind = AdviceKind::kChurn;
  a.device = loop.ledger.devices[s.slot];
  a.has_site = true;
  a.site = loop.sites.sites[s.site];
  const double count = static_cast<double>(s.count) / it;
  a.evidence = {{"allocs_per_iteration", count},
                {"bytes_per_iteration", static_cast<double>(s.bytes) / it},
                {"min_size_bytes", static_cast<double>(s.min_size)},
                {"max_size_bytes", static_cast<double>(s.max_size)},
                {"alloc_time_ns_per_iteration", static_cast<double>(s.alloc_ns) / it},
                {"free_time_ns_per_iteration", static_cast<double>(s.free_ns) / it},
                {"iterations_with_pattern", it},
                {"post_warmup_iterations", static_cast<double>(loop.post())}};
  a.saving = {{"time_ns_per_iteration", time}};
  std::string size = bytes_text(static_cast<double>(s.min_size));
  if (s.max_size != s.min_size) size += " to " + bytes_text(static_cast<double>(s.max_size));
  std::string alloc_api = api_text(loop.timeline, s.example_alloc), free_api = api_text(loop.timeline, s.example_free);
  std::string calls = alloc_api == free_api ? alloc_api : alloc_api + "/" + free_api;
  char n[32];
  std::snprintf(n, sizeof n, count == static_cast<uint64_t>(count) ? "%.0f" : "%.1f", count);
  a.message = std::string(n) + (count == 1 ? " buffer" : " buffers") + " of " + size +
              " allocated and freed here every iteration (" + duration_text(time) + " per iteration in " + calls +
              (s.async ? "): allocate it once before the loop and reuse it."
                       : "): allocate it once before the loop and reuse it, or use a stream-ordered pool "
                         "(cudaMallocAsync/cudaFreeAsync).");
  out->push_back(std::move(a));
}

}  // namespace

void advise_churn_and_thrash(const LoopView &loop, std::vector<Advice> *out) {
  const Ledger &ledger = loop.ledger;
  const Timeline &t = loop.timeline;
  std::vector<bool> in_burst(ledger.allocs.size(), false);
  for (uint16_t slot = 0; slot < ledger.devices.size(); ++slot)
    thrash_finding(loop, slot, find_bursts(loop, slot, &in_burst), out);

  std::unordered_map<uint64_t, size_t> index;
  std::vector<ChurnSite> sites;
  for (size_t i = 0; i < ledger.allocs.size(); ++i) {
    const Alloc &a = ledger.allocs[i];
    if (!on_device(a.space) || a.death == kNone || in_burst[i]) continue;
    uint32_t j = loop.iteration_of(a.birth);
    if (j == kNone || j < loop.w || loop.iteration_of(a.death) != j) continue;
    auto [it, fresh] = index.try_emplace(key_of(a.slot, a.site), sites.size());
    if (fresh) {
      sites.emplace_back();
      sites.back().slot = a.slot;
      sites.back().site = a.site;
      sites.back().example_alloc = a.birth;
      sites.back().example_free = a.death;
    }
    ChurnSite &s = sites[it->second];
    if (s.last_iteration != j) ++s.iterations, s.last_iteration = j;
    ++s.count;
    s.bytes += a.size;
    s.min_size = std::min(s.min_size, a.size);
    s.max_size = std::max(s.max_size, a.size);
    s.alloc_ns += t.at(a.birth).duration_ns;
    if (is_free(t, a.death)) s.free_ns += t.at(a.death).duration_ns;
    s.async = s.async && stream_ordered(t.at(a.birth));
  }
  for (const ChurnSite &s : sites) churn_finding(loop, s, out);
}

void advise_serialization(const LoopView &loop, std::vector<Advice> *out) {
  const Timeline &t = loop.timeline;
  const AdviceOptions &o = loop.options;
  std::vector<double> share, sync_ns, wall;
  uint64_t calls = 0;
  std::unordered_map<int, uint64_t> ns_by_device;
  uint32_t example = kNone;
  for (uint32_t j = loop.w; j < loop.n; ++j) {
    uint64_t ns = 0;
    for (uint32_t p = loop.begin[j]; p < loop.end[j]; ++p) {
      const format::MemoryRecord &r = t.at(p);
      switch (static_cast<Op>(r.op)) {
        case Op::kAlloc:
        case Op::kFree:
        case Op::kMap:
        case Op::kUnmap:
        case Op::kReserve:
        case Op::kReleaseVa:
          break;
        default:
          continue;
      }
      if (stream_ordered(r) || (r.flags & format::kFlagGraphReservation)) continue;
      ns += r.duration_ns;
      ns_by_device[device_of(r.device)] += r.duration_ns;
      ++calls;
      if (example == kNone) example = p;
    }
    uint64_t iteration_ns = loop.end_ns[j] > loop.start_ns[j] ? loop.end_ns[j] - loop.start_ns[j] : 0;
    sync_ns.push_back(static_cast<double>(ns));
    wall.push_back(static_cast<double>(iteration_ns));
    share.push_back(iteration_ns ? std::min(1.0, static_cast<double>(ns) / static_cast<double>(iteration_ns)) : 0.0);
  }
  if (share.empty() || example == kNone) return;
  auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  const double s = median(share), ns = median(sync_ns), it_ns = median(wall);
  if (s < o.serialization_min_share || ns < static_cast<double>(o.serialization_min_ns)) return;
  Advice a;
  a.kind = AdviceKind::kSerialization;
  a.device = std::max_element(ns_by_device.begin(), ns_by_device.end(), [](const auto &x, const auto &y) {
               return x.second != y.second ? x.second < y.second : x.first > y.first;
             })->first;
  a.evidence = {{"sync_calls_per_iteration", static_cast<double>(calls) / static_cast<double>(loop.post())},
                {"sync_time_ns_per_iteration", ns},
                {"iteration_ns", it_ns},
                {"sync_share", s},
                {"post_warmup_iterations", static_cast<double>(loop.post())}};
  a.saving = {{"time_ns_per_iteration", ns}};
  a.message = "Synchronous allocation calls (" + api_text(t, example) + " and the like) take " + share_text(s) +
              " of the median iteration (" + duration_text(ns) + " of " + duration_text(it_ns) +
              "): each one waits for the device, so the loop body runs serialized; move the allocations out "
              "of the loop or make them stream-ordered (cudaMallocAsync).";
  out->push_back(std::move(a));
}

}  // namespace gpuleak::analysis::detail
