// Advice from what happens inside each iteration: churn (a buffer allocated and freed in every
// iteration), cache thrash (cached blocks released in one burst and allocated again, every
// iteration) and serialization (synchronous allocation calls eating the iteration's time).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "analysis/advice_internal.h"
#include "text/paths.h"

namespace gpuleak::analysis::detail {

using format::Kind;
using format::Op;

namespace {

struct ThrashDevice {
  std::vector<uint32_t> iterations;  // post-warm-up iterations with a burst (ascending, unique)
  std::vector<uint64_t> burst_ns;    // per entry of `iterations`: when its first burst began
  uint64_t blocks = 0, bytes = 0, born_in_loop = 0;
  uint64_t free_ns = 0, alloc_ns = 0;
  uint16_t example_free = 0;                           // a burst free's API (api_label)
  std::unordered_map<uint32_t, uint64_t> alloc_sites;  // site index -> blocks freed in bursts
};

// The empty_cache() call that started the bursts, from the marks gpuleak's Python hooks record
// (kEmptyCacheMark): per burst, the last such mark inside its iteration before it; the line most
// bursts follow, when it is at least half of them. {"", 0} when the program made no such call
// (a native program, plain LD_PRELOAD without gpuleak's Python package).
std::pair<std::string, uint32_t> emptied_at(const LoopView &loop, const ThrashDevice &dev) {
  std::vector<std::pair<uint64_t, uint32_t>> marks;  // time, label id
  const std::string_view prefix = kEmptyCacheMark;
  for (const format::MarkerRecord &m : loop.capture.markers)
    if (m.op == static_cast<uint8_t>(format::MarkerOp::kMark) &&
        loop.capture.string(m.label_id).compare(0, prefix.size(), prefix) == 0)
      marks.push_back({m.ts_ns, m.label_id});
  if (marks.empty()) return {"", 0};
  std::sort(marks.begin(), marks.end());
  std::unordered_map<uint32_t, size_t> votes;
  for (size_t i = 0; i < dev.iterations.size() && i < dev.burst_ns.size(); ++i) {
    const uint64_t at = dev.burst_ns[i], from = loop.start_ns[dev.iterations[i]];
    auto after = std::upper_bound(marks.begin(), marks.end(), std::make_pair(at, UINT32_MAX));
    if (after != marks.begin() && std::prev(after)->first >= from) ++votes[std::prev(after)->second];
  }
  std::pair<uint32_t, size_t> best{0, 0};
  for (const auto &[label, n] : votes)
    if (n > best.second || (n == best.second && label < best.first)) best = {label, n};
  if (best.second == 0 || best.second * 2 < dev.iterations.size()) return {"", 0};
  const std::string where = loop.capture.string(best.first).substr(prefix.size());
  const size_t colon = where.rfind(':');
  if (colon == std::string::npos || colon == 0) return {"", 0};
  const unsigned long line = std::strtoul(where.c_str() + colon + 1, nullptr, 10);
  if (line == 0 || line > UINT32_MAX) return {"", 0};
  return {where.substr(0, colon), static_cast<uint32_t>(line)};
}

// What "of the step" means: the median time from one post-warm-up iteration's start to the next's
// (the loop's period, everything between the marks included: an iteration found from the
// allocations starts and ends at allocations, which leaves their own calls' time outside it); with
// one such iteration, its own wall time.
double median_step_ns(const LoopView &loop) {
  std::vector<uint64_t> steps;
  for (uint32_t j = loop.w; j + 1 < loop.n; ++j)
    if (loop.start_ns[j + 1] > loop.start_ns[j]) steps.push_back(loop.start_ns[j + 1] - loop.start_ns[j]);
  if (steps.empty() && loop.n > loop.w && loop.end_ns[loop.n - 1] > loop.start_ns[loop.n - 1])
    steps.push_back(loop.end_ns[loop.n - 1] - loop.start_ns[loop.n - 1]);
  if (steps.empty()) return 0;
  std::nth_element(steps.begin(), steps.begin() + static_cast<std::ptrdiff_t>(steps.size() / 2), steps.end());
  return static_cast<double>(steps[steps.size() / 2]);
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
  a.device = loop.devices[slot];
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
  const double step = median_step_ns(loop);
  if (step > 0) a.evidence.push_back({"step_ns", step});
  const auto [file, line] = emptied_at(loop, dev);
  if (line > 0) {
    a.change_call = "torch.cuda.empty_cache()";
    a.change_file = file;
    a.change_line = line;
    const uint64_t n = static_cast<uint64_t>(blocks + 0.5);
    a.message = a.change_call + " at " + text::basename_of(file) + ":" + std::to_string(line) + " returns " +
                std::to_string(n) + (n == 1 ? " segment" : " segments") + " (" + bytes_text(bytes) +
                ") to CUDA every iteration, and the next iteration maps them again: " + duration_text(time) +
                (step > 0 ? ", " + share_text(std::min(1.0, time / step)) + " of the median step," : "") + " in " +
                api_text(dev.example_free) +
                " and the matching allocations (an upper bound: a synchronous free also waits for the GPU's queued "
                "work). Call it once after the loop, if at all.";
    out->push_back(std::move(a));
    return;
  }
  a.message = "Every iteration the device's cached blocks are released in one burst (" +
              std::to_string(static_cast<uint64_t>(blocks + 0.5)) + " blocks, " + bytes_text(bytes) +
              ", as torch.cuda.empty_cache() does) and allocated again: do not empty the cache inside the loop "
              "(once after it, if at all); that saves up to " +
              duration_text(time) + " per iteration spent in " + api_text(dev.example_free) +
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
  bool async = true;               // every allocation stream-ordered
  uint32_t example_birth = kNone;  // the earliest-born allocation counted, whose APIs the message names
  uint16_t example_alloc = 0, example_free = 0;
};

void churn_finding(const LoopView &loop, const ChurnSite &s, std::vector<Advice> *out) {
  const AdviceOptions &o = loop.options;
  if (!loop.most(s.iterations)) return;
  if (static_cast<double>(s.max_size) > o.churn_max_size_ratio * static_cast<double>(std::max<uint64_t>(s.min_size, 1)))
    return;
  const double it = static_cast<double>(s.iterations);
  const double time = static_cast<double>(s.alloc_ns + s.free_ns) / it;
  if (s.async) return;  // a stream-ordered pool reuses its blocks by design
  Advice a;
  a.kind = AdviceKind::kChurn;
  a.device = loop.devices[s.slot];
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
  std::string alloc_api = api_text(s.example_alloc), free_api = api_text(s.example_free);
  std::string calls = alloc_api == free_api ? alloc_api : alloc_api + "/" + free_api;
  char n[32];
  std::snprintf(n, sizeof n, count == static_cast<uint64_t>(count) ? "%.0f" : "%.1f", count);
  const double step = median_step_ns(loop);
  if (step > 0) a.evidence.push_back({"step_ns", step});
  a.message = std::string(n) + (count == 1 ? " buffer" : " buffers") + " of " + size +
              " allocated and freed here every iteration (" + duration_text(time) + " per iteration in " + calls +
              (step > 0 ? ", " + share_text(std::min(1.0, time / step)) + " of the median step" : std::string()) +
              "): allocate it once before the loop and reuse it, or use a stream-ordered pool "
              "(cudaMallocAsync/cudaFreeAsync).";
  out->push_back(std::move(a));
}

// One allocation's life once it is over, as churn and thrash read it.
struct Ended {
  LiveAllocation life;
  uint32_t death = 0;
  uint32_t death_iteration = kNone;  // the primary iteration holding `death`
  uint32_t free_ns = 0;              // duration of the call that ended it, when that was a free
  uint16_t free_api = 0;             // api_label of the record that ended it
};

// Cache thrash: a burst is consecutive frees of one device (no other change of that device in
// between) from one free call site (the recorder keeps no stack for frees today: then any
// consecutive frees), inside one iteration. Churn: allocations born and freed inside the same
// post-warm-up iteration, except those a counted burst freed. Both are decided as the device's
// changes arrive: a free extends the open burst or starts one; anything else closes it.
class ChurnAndThrash : public Rule, public Observer {
 public:
  explicit ChurnAndThrash(const LoopView &loop) : loop_(loop), ends_(loop.end), slots_(loop.devices.size()) {}
  Observer *first() override { return this; }

  void born(uint32_t, const format::MemoryRecord &, const LiveAllocation &a) override {
    if (!on_device(a.space)) return;
    Slot &s = slots_[a.slot];
    close(a.slot);
    s.live += a.size;
  }

  void died(uint32_t k, const format::MemoryRecord &r, const LiveAllocation &a) override {
    if (!on_device(a.space)) return;
    Slot &s = slots_[a.slot];
    Ended e{a, k, loop_.iteration_at(k, ends_.through(k)), is_free(r) ? r.duration_ns : 0, api_label(r)};
    // A release of nothing takes no part in a burst, nor does a stream-ordered free: it gives its
    // block back to the pool, which keeps it (no cache is emptied).
    if (!is_free(r) || a.size == 0 || stream_ordered(r)) {
      close(a.slot);
      s.live -= a.size;
      churn(e);
      return;
    }
    if (!(s.open && k < s.stop && r.stack_id == s.stack_id && r.py_stack_id == s.py_stack_id)) {
      close(a.slot);
      s.open = true;
      s.before = s.live;
      s.bytes = 0;
      s.iteration = e.death_iteration;
      s.stop = s.iteration != kNone ? loop_.end[s.iteration] : kNone;
      s.stack_id = r.stack_id;
      s.py_stack_id = r.py_stack_id;
      s.first_api = api_label(r);
      s.first_ns = r.ts_ns;
    }
    s.members.push_back(e);
    s.bytes += a.size;
    s.live -= a.size;
  }

  void finish(const LiveSet &) override {
    for (uint16_t slot = 0; slot < slots_.size(); ++slot) close(slot);
  }

  void findings(const std::vector<OomEvent> &, std::vector<Advice> *out) override {
    for (uint16_t slot = 0; slot < slots_.size(); ++slot) thrash_finding(loop_, slot, slots_[slot].thrash, out);
    // In the order the sites first churned: the order of their earliest allocation.
    std::stable_sort(sites_.begin(), sites_.end(),
                     [](const ChurnSite &a, const ChurnSite &b) { return a.example_birth < b.example_birth; });
    for (const ChurnSite &s : sites_) churn_finding(loop_, s, out);
  }

 private:
  struct Slot {
    uint64_t live = 0;
    bool open = false;  // a burst
    uint32_t iteration = kNone, stop = kNone, stack_id = 0, py_stack_id = 0;
    uint16_t first_api = 0;
    uint64_t first_ns = 0;  // the burst's first free
    uint64_t before = 0, bytes = 0;
    std::vector<Ended> members;
    ThrashDevice thrash;
  };

  void close(uint16_t slot) {
    Slot &s = slots_[slot];
    if (!s.open) return;
    s.open = false;
    const AdviceOptions &o = loop_.options;
    const uint32_t j = s.iteration;
    bool counts = j != kNone && j >= loop_.w && s.members.size() >= o.thrash_min_blocks && s.before > 0 &&
                  static_cast<double>(s.bytes) >= o.thrash_min_release_share * static_cast<double>(s.before);
    if (!counts) {
      for (const Ended &e : s.members) churn(e);
      s.members.clear();
      return;
    }
    ThrashDevice &dev = s.thrash;
    if (dev.iterations.empty() || dev.iterations.back() != j)
      dev.iterations.push_back(j), dev.burst_ns.push_back(s.first_ns);
    dev.blocks += s.members.size();
    dev.bytes += s.bytes;
    dev.example_free = s.first_api;
    for (const Ended &e : s.members) {
      ++dev.alloc_sites[e.life.site];
      dev.free_ns += e.free_ns;
      dev.alloc_ns += e.life.birth_ns;
      uint32_t born = loop_.iteration_born(e.life);
      if (born != kNone && born >= loop_.w) ++dev.born_in_loop;
    }
    s.members.clear();
  }

  void churn(const Ended &e) {
    const LiveAllocation &a = e.life;
    uint32_t j = loop_.iteration_born(a);
    if (j == kNone || j < loop_.w || e.death_iteration != j) return;
    auto [it, fresh] = index_.try_emplace(slot_site_key(a.slot, a.site), sites_.size());
    if (fresh) {
      sites_.emplace_back();
      sites_.back().slot = a.slot;
      sites_.back().site = a.site;
    }
    ChurnSite &s = sites_[it->second];
    if (a.birth < s.example_birth) {
      s.example_birth = a.birth;
      s.example_alloc = a.api;
      s.example_free = e.free_api;
    }
    if (s.last_iteration != j) ++s.iterations, s.last_iteration = j;
    ++s.count;
    s.bytes += a.size;
    s.min_size = std::min(s.min_size, a.size);
    s.max_size = std::max(s.max_size, a.size);
    s.alloc_ns += a.birth_ns;
    s.free_ns += e.free_ns;
    s.async = s.async && a.async;
  }

  const LoopView &loop_;
  PositionCursor ends_;  // over loop_.end, at the replay's position
  std::vector<Slot> slots_;
  std::unordered_map<uint64_t, size_t> index_;
  std::vector<ChurnSite> sites_;
};

// Serialization: per post-warm-up iteration, the time its synchronous memory calls took.
class Serialization : public Rule, public Observer {
 public:
  explicit Serialization(const LoopView &loop) : loop_(loop), walk_(loop), sync_ns_(loop.n, 0) {}
  Observer *first() override { return this; }

  void before(uint32_t k, const format::MemoryRecord *r, const LiveSet &) override {
    walk_.advance(
        k, [](uint32_t) {}, [](uint32_t) {});
    const uint32_t j = walk_.current();
    if (!r || j == kNone || j < loop_.w) return;
    switch (static_cast<Op>(r->op)) {
      case Op::kAlloc:
      case Op::kFree:
      case Op::kMap:
      case Op::kUnmap:
      case Op::kReserve:
      case Op::kReleaseVa:
        break;
      default:
        return;
    }
    // A caching allocator's hand-out (a pool block) waits for nothing: only calls into CUDA do.
    if (stream_ordered(*r) || (r->flags & format::kFlagGraphReservation) ||
        r->kind == static_cast<uint8_t>(format::Kind::kPoolBlock))
      return;
    sync_ns_[j] += r->duration_ns;
    ns_by_device_[device_of(r->device)] += r->duration_ns;
    ++calls_;
    if (!example_) example_ = true, example_api_ = api_label(*r);
  }

  void findings(const std::vector<OomEvent> &, std::vector<Advice> *out) override {
    const AdviceOptions &o = loop_.options;
    std::vector<double> share, sync_ns, wall;
    for (uint32_t j = loop_.w; j < loop_.n; ++j) {
      uint64_t iteration_ns = loop_.end_ns[j] > loop_.start_ns[j] ? loop_.end_ns[j] - loop_.start_ns[j] : 0;
      sync_ns.push_back(static_cast<double>(sync_ns_[j]));
      wall.push_back(static_cast<double>(iteration_ns));
      share.push_back(iteration_ns ? std::min(1.0, static_cast<double>(sync_ns_[j]) / static_cast<double>(iteration_ns))
                                   : 0.0);
    }
    if (share.empty() || !example_) return;
    // The median iteration by share, and that same iteration's time in calls and wall time: three
    // independent medians made "100 % (217.0 us of 73.7 us)".
    std::vector<size_t> order(share.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    auto mid = order.begin() + static_cast<std::ptrdiff_t>(order.size() / 2);
    std::nth_element(order.begin(), mid, order.end(), [&](size_t x, size_t y) {
      return share[x] != share[y] ? share[x] < share[y] : sync_ns[x] < sync_ns[y];
    });
    const double s = share[*mid], ns = sync_ns[*mid], it_ns = wall[*mid];
    if (s < o.serialization_min_share || ns < static_cast<double>(o.serialization_min_ns)) return;
    Advice a;
    a.kind = AdviceKind::kSerialization;
    a.device = std::max_element(ns_by_device_.begin(), ns_by_device_.end(), [](const auto &x, const auto &y) {
                 return x.second != y.second ? x.second < y.second : x.first > y.first;
               })->first;
    a.evidence = {{"sync_calls_per_iteration", static_cast<double>(calls_) / static_cast<double>(loop_.post())},
                  {"sync_time_ns_per_iteration", ns},
                  {"iteration_ns", it_ns},
                  {"sync_share", s},
                  {"post_warmup_iterations", static_cast<double>(loop_.post())}};
    // At most the iteration itself can be saved.
    a.saving = {{"time_ns_per_iteration", std::min(ns, it_ns)}};
    // Calls on several threads can add up to more than the iteration's wall time: then the share
    // is all of it, and the sentence says why the call time is the larger number.
    const std::string took = ns <= it_ns
                                 ? "take " + share_text(s) + " of the median iteration (" + duration_text(ns) + " of " +
                                       duration_text(it_ns) + ")"
                                 : "take all of the median iteration (" + duration_text(ns) +
                                       " of calls, on several threads at once, in " + duration_text(it_ns) + ")";
    a.message = "Synchronous allocation calls (" + api_text(example_api_) + " and the like) " + took +
                ": each one waits for the device, so the loop body runs serialized; move the allocations out "
                "of the loop or make them stream-ordered (cudaMallocAsync).";
    out->push_back(std::move(a));
  }

 private:
  const LoopView &loop_;
  LoopWalk walk_;
  std::vector<uint64_t> sync_ns_;  // per primary iteration
  std::unordered_map<int, uint64_t> ns_by_device_;
  uint64_t calls_ = 0;
  bool example_ = false;
  uint16_t example_api_ = 0;
};

}  // namespace

std::unique_ptr<Rule> churn_and_thrash_rule(const LoopView &loop) { return std::make_unique<ChurnAndThrash>(loop); }
std::unique_ptr<Rule> serialization_rule(const LoopView &loop) { return std::make_unique<Serialization>(loop); }

}  // namespace gpuleak::analysis::detail
