#include "core/capture_aggregate.h"

#include <algorithm>
#include <cstring>
#include <iterator>

#include "format/address_space.h"
#include "format/free_pairing.h"
#include "format/record_framing.h"

namespace gpuleak::core {

namespace {

using format::RecordHeader;
using format::RecordType;

using format::append_record;
using format::each_record;

// The spaces whose memory a replay counts (format/address_space.h): only those are folded. The
// rest (imported memory, address reservations, pools) stays raw: a replay never counts it.
bool folded_space(format::AddressSpace space) {
  using format::AddressSpace;
  return space == AddressSpace::kDevicePtr || space == AddressSpace::kArray || space == AddressSpace::kVmm ||
         space == AddressSpace::kHost || space == AddressSpace::kPoolBlock;
}

// A record's space: the one its hook said (1.9), else its kind's.
format::AddressSpace space_of(const format::MemoryRecord &r) {
  return r.space ? static_cast<format::AddressSpace>(r.space - 1) : format::address_space_of(r.kind);
}

uint64_t key_of(const format::MemoryRecord &r) {
  return format::pairing_key(static_cast<uint8_t>(static_cast<uint8_t>(space_of(r)) + 1), r.address);
}

}  // namespace

void CaptureAggregator::observe_raw(const uint8_t *data, size_t n) {
  each_record(data, n, [&](const RecordHeader &h, const uint8_t *body, size_t) {
    if (h.type != static_cast<uint16_t>(RecordType::kMarker) || h.size < sizeof(format::MarkerRecord)) return;
    format::MarkerRecord m;
    std::memcpy(&m, body, sizeof m);
    marker(m, true);
  });
}

void CaptureAggregator::start(uint64_t now_ns, bool low_disk) {
  active_ = true;
  low_disk_ = low_disk;
  switched_at_ = start_ns_ = last_ns_ = now_ns;
  uint64_t most = 0;
  for (const auto &[label, count] : begins_)
    if (count > most || (count == most && label < loop_)) most = count, loop_ = label;
  loop_chosen_ = most > 0;
  open_ = false;
  if (loop_chosen_)
    for (const auto &[tid, labels] : open_by_thread_)
      if (std::find(labels.begin(), labels.end(), loop_) != labels.end()) open_ = true, loop_tid_ = tid;
  open_at_start_ = first_begin_seen_ = open_;
  open_since_ = first_begin_ns_ = now_ns;
}

// Returns nothing: every marker is either the tracked loop's (a window boundary) or dropped and
// counted, except the program's own marks (gpuleak_mark), which the caller keeps raw.
void CaptureAggregator::marker(const format::MarkerRecord &m, bool raw) {
  std::vector<uint32_t> &mine = open_by_thread_[m.tid];
  const auto op = static_cast<format::MarkerOp>(m.op);
  if (op == format::MarkerOp::kIterationBegin) {
    if (raw) ++begins_[m.label_id];
    if (!raw && !loop_chosen_) loop_chosen_ = true, loop_ = m.label_id;
    mine.erase(std::remove(mine.begin(), mine.end(), m.label_id), mine.end());  // a begin closes its loop's last
    mine.push_back(m.label_id);
    if (raw) return;
    touch(m.ts_ns);
    if (m.label_id != loop_) return void(++dropped_);
    if (open_) {
      open_ = false;
      boundary_end(m.ts_ns);
    }
    open_ = true;
    open_since_ = m.ts_ns;
    loop_tid_ = m.tid;
    if (!first_begin_seen_) first_begin_seen_ = true, first_begin_ns_ = m.ts_ns;
    return;
  }
  // An end names its loop when the recorder knew it, else it closes the thread's innermost.
  uint32_t target = m.label_id;
  if (!target && !mine.empty()) target = mine.back();
  if (!target && open_ && loop_chosen_) target = loop_;
  auto it = std::find(mine.rbegin(), mine.rend(), target);
  if (it != mine.rend()) mine.erase(std::next(it).base());
  if (raw) return;
  touch(m.ts_ns);
  if (!loop_chosen_ || target != loop_ || !open_) return void(++dropped_);
  open_ = false;
  boundary_end(m.ts_ns);
}

void CaptureAggregator::boundary_end(uint64_t ts) {
  ++iterations_;
  iterations_end_ns_ = ts;
  if (iterations_ >= width_) close_window(ts, 0, out_);
}

void CaptureAggregator::touch(uint64_t ts) { last_ns_ = std::max(last_ns_, ts); }

void CaptureAggregator::memory(const format::MemoryRecord &r, const uint8_t *record, size_t record_n,
                               std::string *out) {
  touch(r.ts_ns);
  const auto op = static_cast<format::Op>(r.op);
  // A free's graph flag says its stream was capturing, not that its allocation was a reservation:
  // whether that allocation was folded decides (a reservation never is).
  const bool foldable = (op == format::Op::kAlloc || op == format::Op::kFree) && r.result == 0 &&
                        !(op == format::Op::kAlloc && (r.flags & format::kFlagGraphReservation)) &&
                        folded_space(space_of(r));
  if (op == format::Op::kContextReset && r.result == 0)  // a replay drops the device's memory at the raw record
    for (auto it = live_.begin(); it != live_.end();) it = it->second.device == r.device ? live_.erase(it) : ++it;
  if (!foldable) return void(out->append(reinterpret_cast<const char *>(record), record_n));
  const uint64_t key = key_of(r);
  auto it = live_.find(key);
  auto count_free = [&](const Born &b) {
    Row &row = rows_[RowKey{b.stack_id, b.py_stack_id, b.window, b.device, b.kind}];
    ++row.frees;
    row.freed_bytes += b.size;
  };
  if (op == format::Op::kFree) {
    // Not folded when it was allocated: its allocation's record is raw, and so is its free.
    if (it == live_.end()) return void(out->append(reinterpret_cast<const char *>(record), record_n));
    if (r.ts_ns < it->second.birth_ns) {
      // Older than the allocation at its address: it frees one that allocation replaced (a free
      // appended after another thread's re-use of the address went out). Counted at the re-use
      // when that one was folded; else its allocation is raw, and so is it.
      if (it->second.late_frees == 0) return void(out->append(reinterpret_cast<const char *>(record), record_n));
      --it->second.late_frees;
      return;
    }
    count_free(it->second);
    live_.erase(it);
  } else {
    Born b{r.size, r.ts_ns, r.stack_id, r.py_stack_id, number_, r.device, r.kind, 0};
    if (it != live_.end()) {
      if (it->second.birth_ns > r.ts_ns) {
        // Older than the allocation at its address (drained after it): gone before that one began.
        // Its free, still to come, is that entry's late free.
        ++it->second.late_frees;
        Row &row = rows_[RowKey{b.stack_id, b.py_stack_id, b.window, b.device, b.kind}];
        ++row.allocs, ++row.frees;
        row.alloc_bytes += r.size, row.freed_bytes += r.size;
        ++events_;
        ++folded_;
        return;
      }
      count_free(it->second);  // an address handed out again: the old one is gone, its free late
      b.late_frees = it->second.late_frees + 1;
    }
    live_[key] = b;
    Row &row = rows_[RowKey{b.stack_id, b.py_stack_id, b.window, b.device, b.kind}];
    ++row.allocs;
    row.alloc_bytes += r.size;
  }
  ++events_;
  ++folded_;
}

void CaptureAggregator::fold(const uint8_t *data, size_t n, std::string *out) {
  out_ = out;
  order_.clear();
  each_record(data, n, [&](const RecordHeader &h, const uint8_t *body, size_t at) {
    const bool timed =
        (h.type == static_cast<uint16_t>(RecordType::kMemory) && h.size >= sizeof(format::MemoryRecord)) ||
        (h.type == static_cast<uint16_t>(RecordType::kMarker) && h.size >= sizeof(format::MarkerRecord)) ||
        (h.type == static_cast<uint16_t>(RecordType::kNvtx) && h.size >= sizeof(format::NvtxRecord)) ||
        (h.type == static_cast<uint16_t>(RecordType::kOom) && h.size >= sizeof(format::OomRecord));
    if (!timed) {  // strings, stacks, modules, statistics...: as they are, ahead of what refers to them
      out->append(reinterpret_cast<const char *>(data + at), sizeof h + h.size);
      return;
    }
    uint64_t ts;  // the first field of all four
    std::memcpy(&ts, body, sizeof ts);
    order_.push_back(Timed{ts, at});
  });
  // Each thread's records are in time order already; the threads' are merged here.
  std::stable_sort(order_.begin(), order_.end(), [](const Timed &a, const Timed &b) { return a.ts < b.ts; });
  // The window begins at the first record folded, which the drain took before the switch.
  if (first_fold_ && !order_.empty() && order_.front().ts < start_ns_) {
    switched_at_ = start_ns_ = last_ns_ = order_.front().ts;
    if (open_at_start_) first_begin_ns_ = start_ns_;
  }
  if (!order_.empty()) first_fold_ = false;
  for (const Timed &t : order_) {
    RecordHeader h;
    std::memcpy(&h, data + t.at, sizeof h);
    const uint8_t *body = data + t.at + sizeof h;
    if (h.type == static_cast<uint16_t>(RecordType::kMemory)) {
      format::MemoryRecord r;
      std::memcpy(&r, body, sizeof r);
      memory(r, data + t.at, sizeof h + h.size, out);
    } else if (h.type == static_cast<uint16_t>(RecordType::kMarker)) {
      format::MarkerRecord m;
      std::memcpy(&m, body, sizeof m);
      if (m.op == static_cast<uint8_t>(format::MarkerOp::kMark))
        out->append(reinterpret_cast<const char *>(data + t.at), sizeof h + h.size);
      else
        marker(m, false);
    } else if (h.type == static_cast<uint16_t>(RecordType::kOom)) {
      // An out-of-memory failure closes the window there: what a reader unfolds is then exactly
      // the live set, by site, at the failure (the OOM record's own evidence).
      if (!rows_.empty() || iterations_ || events_) close_window(t.ts, 0, out);
      touch(t.ts);
      out->append(reinterpret_cast<const char *>(data + t.at), sizeof h + h.size);
    } else {
      touch(t.ts);
      ++dropped_;  // NVTX ranges: the timeline's, lost in the aggregated stretch
    }
  }
  out_ = nullptr;
}

void CaptureAggregator::close_window(uint64_t end_ns, uint32_t extra_flags, std::string *out) {
  if (!out) return;
  for (const auto &[k, row] : rows_) {
    format::AggregateSiteRecord a{};
    a.alloc_bytes = row.alloc_bytes;
    a.freed_bytes = row.freed_bytes;
    a.allocs = row.allocs;
    a.frees = row.frees;
    a.stack_id = k.stack_id;
    a.py_stack_id = k.py_stack_id;
    a.birth_window = k.birth;
    a.device = k.device;
    a.kind = k.kind;
    append_record(out, RecordType::kAggregateSite, &a, sizeof a);
  }
  format::AggregateWindowRecord w{};
  w.start_ns = start_ns_;
  w.first_begin_ns = first_begin_seen_ ? first_begin_ns_ : start_ns_;
  w.iterations_end_ns = iterations_ ? iterations_end_ns_ : w.first_begin_ns;
  w.last_begin_ns = open_ ? open_since_ : 0;
  w.end_ns = std::max({end_ns, last_ns_, start_ns_});
  w.events = events_;
  w.dropped = dropped_;
  w.number = number_;
  w.iterations = iterations_;
  w.loop_id = loop_chosen_ ? loop_ : 0;
  w.tid = loop_tid_;
  w.flags = extra_flags | (number_ == 1 && low_disk_ ? format::kWindowLowDisk : 0u) |
            (open_at_start_ ? format::kWindowOpenAtStart : 0u) | (open_ ? format::kWindowOpenAtEnd : 0u);
  append_record(out, RecordType::kAggregateWindow, &w, sizeof w);
  if (iterations_ > 0 && ++at_width_ >= kWindowsPerWidth) width_ *= 2, at_width_ = 0;
  rows_.clear();
  ++number_;
  start_ns_ = last_ns_ = w.end_ns;
  iterations_ = 0;
  events_ = dropped_ = 0;
  open_at_start_ = first_begin_seen_ = open_;
  first_begin_ns_ = w.end_ns;
}

void CaptureAggregator::close_if_stale(uint64_t now_ns, std::string *out) {
  if (!active_ || now_ns < start_ns_ + kMaxWindowNs) return;
  if (rows_.empty() && iterations_ == 0 && dropped_ == 0) return;
  close_window(last_ns_, 0, out);
}

void CaptureAggregator::finish(std::string *out) {
  if (active_) close_window(last_ns_, format::kWindowFinal, out);
}

}  // namespace gpuleak::core
