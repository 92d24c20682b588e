// The ledger: memory records replayed in effective-time order, keeping only what is live (a hash
// table keyed by address), the devices' live and peak bytes, and the per-iteration numbers. Every
// birth and death is handed to the observers (replay_observer.h) as it happens: what outlives an
// allocation is theirs to aggregate. O(n) per replay plus O(open iterations) per event.
//
// Per-iteration numbers are sparse (issue #18): a (device, iteration) cell exists only when the
// device allocated or released memory while the iteration was open. Every other cell is the
// device's live bytes at the iteration's boundaries, read from its steps (LiveStep): one entry
// per stretch between boundaries in which the device changed. Devices x iterations of a capture
// that names 32 devices and marks a million iterations cost nothing; memory follows the events.
#include <algorithm>
#include <cstdint>
#include <exception>
#include <numeric>
#include <system_error>
#include <thread>

#include "analysis/ledger.h"
#include "format/huge_pages.h"

namespace gpuleak::analysis::detail {

using format::Capture;
using format::Kind;
using format::MemoryRecord;
using format::Op;

int Ledger::slot_of(int device) const {
  auto it = std::lower_bound(devices.begin(), devices.end(), device);
  return it != devices.end() && *it == device ? static_cast<int>(it - devices.begin()) : -1;
}

IterationDevice Ledger::row(uint32_t span, size_t slot) const {
  const auto first = cells.begin() + cell_start[span], last = cells.begin() + cell_start[span + 1];
  const int device = devices[slot];
  auto it = std::lower_bound(first, last, device, [](const IterationDevice &c, int d) { return c.device < d; });
  if (it != last && it->device == device) return *it;
  return idle_row(device, live_steps[slot], span_bounds[span].first, span_bounds[span].second);
}

namespace {

class Replayer {
 public:
  Replayer(const Capture &capture, const Timeline &timeline, const SiteTable &sites, const std::vector<Span> &spans,
           const std::vector<uint32_t> &primary_ends, const std::vector<Observer *> &observers, Ledger *out,
           bool light = false)
      : light_(light),
        capture_(capture),
        timeline_(timeline),
        sites_(sites),
        spans_(spans),
        observers_(observers),
        out_(*out),
        primary_ends_(primary_ends) {}

  void run() {
    out_.devices = timeline_.devices;
    if (!out_.devices.empty()) {
      lookup_.assign(static_cast<size_t>(out_.devices.back()) + 1, -1);
      for (size_t i = 0; i < out_.devices.size(); ++i) lookup_[out_.devices[i]] = static_cast<int>(i);
    }
    size_t slots = out_.devices.size();
    live_.assign(slots, 0);
    out_.totals.assign(slots, DeviceTotals{});
    out_.live_steps.assign(slots, {});
    if (light_) {
      observe();
      return;
    }
    // A device's steps are at most one per stretch between boundaries (2 a span) and one per
    // event: room for them at once on a few devices, rather than a vector copied at each doubling
    // (capacity never written is never touched).
    if (slots <= 8)
      for (std::vector<LiveStep> &steps : out_.live_steps)
        steps.reserve(std::min<size_t>(2 * spans_.size() + 1, timeline_.size + size_t{1}));
    step_epoch_.assign(slots, 0);
    by_begin_.resize(spans_.size());
    by_end_.resize(spans_.size());
    std::iota(by_begin_.begin(), by_begin_.end(), 0u);
    std::iota(by_end_.begin(), by_end_.end(), 0u);
    // Both are usually in order already (spans come sorted by start): then nothing moves.
    auto by_begin = [&](uint32_t a, uint32_t b) { return spans_[a].begin < spans_[b].begin; };
    auto by_end = [&](uint32_t a, uint32_t b) { return spans_[a].end < spans_[b].end; };
    if (!std::is_sorted(by_begin_.begin(), by_begin_.end(), by_begin))
      std::stable_sort(by_begin_.begin(), by_begin_.end(), by_begin);
    if (!std::is_sorted(by_end_.begin(), by_end_.end(), by_end))
      std::stable_sort(by_end_.begin(), by_end_.end(), by_end);
    open_pos_.assign(spans_.size(), kNone);
    // Usually one cell per span or more: room for one each at once, rather than a vector grown by
    // doubling through 10 MB (each growth a copy onto fresh pages) when every span touches a device.
    // Capacity that no span uses is never touched.
    out_.cells.reserve(spans_.size());
    format::prefer_huge_pages(out_.cells);
    cell_span_.reserve(spans_.size());
    observe();
    for (size_t d = 0; d < slots; ++d) out_.totals[d].live = live_[d];
    index_cells();
    out_.accounting.events = timeline_.source->size();
    out_.accounting.host_pinned_live_at_exit_bytes = host_live_;
    out_.accounting.host_pinned_peak_bytes = host_peak_;
  }

 private:
  // The events in order, each told to the observers. Every observer is told before and after each
  // event, until its before() or after() turns out to be the one that does nothing (after the
  // first event). A light replay keeps only what the observers see (the live set and each
  // allocation's state): no iteration cells, no device steps.
  void observe() {
    std::vector<Observer *> before = observers_, after = observers_;
    bool pruned = false;
    timeline_.replay([&](uint32_t k, const MemoryRecord &r) {
      if (!light_) boundaries(k);
      for (Observer *o : before) o->before(k, &r, live_map_);
      apply(k, r);
      for (Observer *o : after) o->after(k, live_map_);
      if (!pruned) {
        pruned = true;
        before.erase(std::remove_if(before.begin(), before.end(), [](Observer *o) { return o->default_before(); }),
                     before.end());
        after.erase(std::remove_if(after.begin(), after.end(), [](Observer *o) { return o->default_after(); }),
                    after.end());
      }
    });
    if (!light_) boundaries(timeline_.size);
    for (Observer *o : observers_) o->before(timeline_.size, nullptr, live_map_);
    for (Observer *o : observers_) o->finish(live_map_);
  }

  int slot(int16_t device) const { return lookup_[device_of(device)]; }

  // Open before closing, so that an empty span [k, k) opens and closes at the same moment.
  void boundaries(size_t k) {
    const size_t nb = nb_, ne = ne_;
    for (; nb_ < by_begin_.size() && spans_[by_begin_[nb_]].begin <= k; ++nb_) open_span(by_begin_[nb_]);
    for (; ne_ < by_end_.size() && spans_[by_end_[ne_]].end <= k; ++ne_) close_span(by_end_[ne_]);
    if (nb_ != nb || ne_ != ne) ++epoch_;
  }

  void open_span(uint32_t s) {
    open_pos_[s] = static_cast<uint32_t>(open_.size());
    open_.push_back(s);
    if (open_cells_.size() < open_.size()) open_cells_.emplace_back();  // else a cleared one is reused
  }
  void close_span(uint32_t s) {
    uint32_t pos = open_pos_[s];
    if (pos == kNone) return;
    for (const auto &[slot, cell] : open_cells_[pos]) out_.cells[cell].live_end_bytes = live_[slot];
    open_pos_[open_.back()] = pos;
    open_[pos] = open_.back();
    open_.pop_back();
    // The closed span's list goes past the open ones, emptied but keeping its capacity: a span
    // per allocation (a loop of one pair) allocated and freed one list each.
    std::swap(open_cells_[pos], open_cells_[open_.size()]);
    open_cells_[open_.size()].clear();
    open_pos_[s] = kNone;
  }

  // The cell of the span open at `pos` for `slot`, made on the device's first change inside it:
  // until then the device's live bytes were `live_before` all through the span.
  IterationDevice &cell(size_t pos, uint16_t slot, uint64_t live_before) {
    auto &mine = open_cells_[pos];
    for (const auto &[s, c] : mine)
      if (s == slot) return out_.cells[c];
    mine.emplace_back(slot, static_cast<uint32_t>(out_.cells.size()));
    IterationDevice row;
    row.device = out_.devices[slot];
    row.peak_bytes = live_before;
    out_.cells.push_back(row);
    cell_span_.push_back(open_[pos]);
    return out_.cells.back();
  }

  // The slot's live bytes after event k, kept for the boundaries that come after it: a change with
  // no boundary since the slot's previous one replaces that one's entry.
  void step(uint32_t k, uint16_t slot) {
    std::vector<LiveStep> &steps = out_.live_steps[slot];
    if (!steps.empty() && step_epoch_[slot] == epoch_) {
      steps.back() = LiveStep{k, live_[slot]};
      return;
    }
    steps.push_back(LiveStep{k, live_[slot]});
    step_epoch_[slot] = epoch_;
  }

  // The cells by span, then device: Ledger::cells and cell_start. They are made in that order
  // whenever spans do not overlap (one loop, its passes one after another): then nothing moves.
  void index_cells() {
    std::vector<IterationDevice> &cells = out_.cells;
    auto before = [&](size_t a, size_t b) {
      return cell_span_[a] != cell_span_[b] ? cell_span_[a] < cell_span_[b] : cells[a].device < cells[b].device;
    };
    bool sorted = true;
    for (size_t i = 1; i < cells.size() && sorted; ++i) sorted = !before(i, i - 1);
    if (!sorted) {
      std::vector<uint32_t> order(cells.size());
      std::iota(order.begin(), order.end(), 0u);
      std::stable_sort(order.begin(), order.end(), before);
      std::vector<IterationDevice> by_span;
      by_span.reserve(cells.size());
      std::vector<uint32_t> spans;
      spans.reserve(cells.size());
      for (uint32_t i : order) by_span.push_back(cells[i]), spans.push_back(cell_span_[i]);
      cells.swap(by_span);
      cell_span_.swap(spans);
    }
    out_.cell_start.assign(spans_.size() + 1, 0);
    for (uint32_t span : cell_span_) ++out_.cell_start[span + 1];
    for (size_t s = 0; s < spans_.size(); ++s) out_.cell_start[s + 1] += out_.cell_start[s];
    std::vector<uint32_t>().swap(cell_span_);
    out_.span_bounds.reserve(spans_.size());
    for (const Span &s : spans_) out_.span_bounds.emplace_back(s.begin, s.end);
  }

  void apply(uint32_t k, const MemoryRecord &r) {
    Op op = static_cast<Op>(r.op);
    if (r.result != 0) {
      if (op == Op::kAlloc) ++out_.accounting.failed_allocations;
      return;  // a failed call changes nothing
    }
    switch (op) {
      case Op::kAlloc:
        return alloc(k, r);
      case Op::kFree:
        return free(k, r);
      case Op::kMap:
        return map(k, r);
      case Op::kContextReset:
        return reset(k, r);
      default:
        return;  // unmap, reserve, pool ops: no owned bytes change (VMM counts at create)
    }
  }

  LiveKey key_of(uint64_t address, int16_t device, Space space) const {
    return LiveKey{address, space == Space::kHost ? -1 : device_of(device), space};
  }

  void alloc(uint32_t k, const MemoryRecord &r) {
    if (r.flags & format::kFlagGraphReservation) {
      ++out_.accounting.graph_reservations;
      return;
    }
    Space space = space_of(r.kind);
    if (space == Space::kNotOwned) {
      ++out_.accounting.not_owned;
      return;
    }
    LiveAllocation a;
    a.size = r.size;
    a.birth = k;
    a.site = sites_.of(r);
    a.birth_ns = r.duration_ns;
    a.ordinal = static_cast<uint32_t>(out_.accounting.allocations);
    a.ends_at_birth = primary_ends_.through(k);
    a.slot = static_cast<uint16_t>(slot(r.device));
    a.api = api_label(r);
    a.space = space;
    a.async = stream_ordered(r);
    LiveKey key = key_of(r.address, r.device, space);
    if (LiveAllocation *old = live_map_.find(key)) {  // its free was never seen: the old allocation ends here
      LiveAllocation gone = *old;
      live_map_.erase(key);
      release(k, r, gone, false);
    }
    live_map_.try_emplace(key, a);
    ++out_.accounting.allocations;
    if (space == Space::kPoolBlock) {
      ++out_.accounting.pool_blocks;  // inside a segment counted already: no device bytes (pool_blocks.h)
    } else if (space == Space::kHost) {
      host_live_ += a.size;
      host_peak_ = std::max(host_peak_, host_live_);
    } else {
      uint64_t &live = live_[a.slot];
      const uint64_t before = live;
      live += a.size;
      DeviceTotals &t = out_.totals[a.slot];
      t.peak = std::max(t.peak, live);
      ++t.allocs;
      for (size_t pos = 0; pos < open_.size(); ++pos) {
        IterationDevice &it_dev = cell(pos, a.slot, before);
        it_dev.allocated_bytes += a.size;
        ++it_dev.alloc_count;
        it_dev.peak_bytes = std::max(it_dev.peak_bytes, live);
      }
      if (!light_) step(k, a.slot);
    }
    for (Observer *o : observers_) o->born(k, r, a);
  }

  // The live allocation a free or map refers to: its key, or false. A free whose kind was not
  // recorded is tried in every space; a device pointer freed while another device was current is
  // looked for on the other devices.
  LiveAllocation *find(uint64_t address, int16_t device, uint8_t kind, LiveKey *key) {
    static const Space kAll[] = {Space::kDevicePtr, Space::kArray, Space::kVmm, Space::kHost, Space::kPoolBlock};
    Space space = space_of(kind);
    for (Space s : kAll) {
      if (kind != 0 ? s != space : s == Space::kPoolBlock) continue;  // a block's free always names its kind
      *key = key_of(address, device, s);
      if (LiveAllocation *found = live_map_.find(*key)) return found;
      if (s == Space::kHost) continue;
      for (int dev : out_.devices) {
        if (dev == device_of(device)) continue;
        *key = LiveKey{address, dev, s};
        if (LiveAllocation *found = live_map_.find(*key)) return found;
      }
    }
    return nullptr;
  }

  void free(uint32_t k, const MemoryRecord &r) {
    if (r.flags & format::kFlagGraphReservation) return;
    if (r.kind != 0 && space_of(r.kind) == Space::kNotOwned) return;  // closing an import
    LiveKey key;
    LiveAllocation *found = find(r.address, r.device, r.kind, &key);
    if (!found) {
      ++out_.accounting.unmatched_frees;
      return;
    }
    LiveAllocation gone = *found;
    live_map_.erase(key);
    release(k, r, gone, true);
  }

  void release(uint32_t k, const MemoryRecord &r, const LiveAllocation &a, bool counted) {
    if (counted) ++out_.accounting.frees;
    if (a.space == Space::kPoolBlock) {
      // no device bytes of its own
    } else if (a.space != Space::kHost) {
      const uint64_t before = live_[a.slot];
      live_[a.slot] -= a.size;
      ++out_.totals[a.slot].frees;
      for (size_t pos = 0; pos < open_.size(); ++pos) {
        IterationDevice &it_dev = cell(pos, a.slot, before);
        it_dev.freed_bytes += a.size;
        ++it_dev.free_count;
      }
      if (!light_) step(k, a.slot);
    } else {
      host_live_ -= a.size;
    }
    for (Observer *o : observers_) o->died(k, r, a);
  }

  // A mapping names the site that made the segment grow: the physical memory is charged to it
  // (the first mapping of a handle only).
  void map(uint32_t k, const MemoryRecord &r) {
    LiveKey key;
    LiveAllocation *found = find(r.aux, r.device, static_cast<uint8_t>(Kind::kVmm), &key);
    if (!found || found->mapped) return;
    found->mapped = true;
    const uint32_t old = found->site;
    found->site = sites_.of(r);
    if (found->site != old)
      for (Observer *o : observers_) o->remapped(k, old, *found);
  }

  void reset(uint32_t k, const MemoryRecord &r) {
    ++out_.accounting.context_resets;
    int s = slot(r.device);
    std::vector<std::pair<LiveKey, LiveAllocation>> dropped;
    live_map_.for_each([&](const LiveKey &key, const LiveAllocation &a) {
      if (a.slot == s) dropped.emplace_back(key, a);
    });
    // In birth order, as the allocations were made.
    std::sort(dropped.begin(), dropped.end(),
              [](const auto &a, const auto &b) { return a.second.birth < b.second.birth; });
    for (const auto &[key, a] : dropped) {
      live_map_.erase(key);
      release(k, r, a, false);
    }
  }

  const bool light_;  // only the observers' view (observe())
  const Capture &capture_;
  const Timeline &timeline_;
  const SiteTable &sites_;
  const std::vector<Span> &spans_;
  const std::vector<Observer *> &observers_;
  Ledger &out_;
  PositionCursor primary_ends_;
  std::vector<int> lookup_;     // device index -> slot
  std::vector<uint64_t> live_;  // per slot
  uint64_t host_live_ = 0, host_peak_ = 0;
  LiveSet live_map_;
  std::vector<uint32_t> by_begin_, by_end_;  // spans by begin, by end
  size_t nb_ = 0, ne_ = 0;
  std::vector<uint32_t> open_;  // spans open at the current position
  std::vector<uint32_t> open_pos_;
  // Per open span (same order as open_): the (slot, index into out_.cells) of the devices it touched.
  // Entries past open_.size() are empty lists kept for the next spans.
  std::vector<std::vector<std::pair<uint16_t, uint32_t>>> open_cells_;
  std::vector<uint32_t> cell_span_;   // per cell of out_.cells (in the order they were made): its span
  uint64_t epoch_ = 0;                // how many positions had a span open or close so far
  std::vector<uint64_t> step_epoch_;  // per slot: epoch_ at its last LiveStep
};

}  // namespace

void replay(const Capture &capture, const Timeline &timeline, const SiteTable &sites, const std::vector<Span> &spans,
            const std::vector<uint32_t> &primary_ends, const std::vector<Observer *> &observers, Ledger *ledger,
            const std::vector<Observer *> &beside) {
  *ledger = Ledger{};
  std::vector<Observer *> all = observers;
  std::thread other;
  std::exception_ptr failed;
  if (!beside.empty() && timeline.source->concurrent_replays() && std::thread::hardware_concurrency() > 1) {
    try {
      other = std::thread([&] {
        try {
          Ledger unused;
          Replayer(capture, timeline, sites, spans, primary_ends, beside, &unused, true).run();
        } catch (...) {
          failed = std::current_exception();
        }
      });
    } catch (const std::system_error &) {  // no thread: one replay tells them all
    }
  }
  if (!other.joinable()) all.insert(all.end(), beside.begin(), beside.end());
  try {
    Replayer(capture, timeline, sites, spans, primary_ends, all, ledger).run();
  } catch (...) {
    if (other.joinable()) other.join();
    throw;
  }
  if (other.joinable()) other.join();
  if (failed) std::rethrow_exception(failed);
}

}  // namespace gpuleak::analysis::detail
