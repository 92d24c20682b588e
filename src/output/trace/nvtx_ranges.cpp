#include "output/trace/nvtx_ranges.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <unordered_map>

namespace gpuleak::output::trace {

using format::NvtxOp;
using format::NvtxRecord;

namespace {

// Lanes for start/end ranges: the fewest tracks on which none overlap (interval partitioning).
uint16_t assign_lanes(std::vector<NvtxRange> &ranges) {
  using Slot = std::pair<int64_t, uint16_t>;  // (end of the lane's last range, lane)
  std::priority_queue<Slot, std::vector<Slot>, std::greater<Slot>> busy;
  std::priority_queue<uint16_t, std::vector<uint16_t>, std::greater<uint16_t>> free_lanes;
  uint16_t lanes = 0;
  for (NvtxRange &r : ranges) {
    if (!r.async) continue;
    while (!busy.empty() && busy.top().first <= r.start_ns) {
      free_lanes.push(busy.top().second);
      busy.pop();
    }
    if (!free_lanes.empty()) {
      r.lane = free_lanes.top();
      free_lanes.pop();
    } else {
      r.lane = lanes < UINT16_MAX ? lanes++ : static_cast<uint16_t>(UINT16_MAX - 1);
    }
    busy.push({r.end_ns, r.lane});
  }
  return lanes;
}

}  // namespace

NvtxTimeline pair_nvtx(const format::Capture &capture, int64_t end_ns) {
  NvtxTimeline out;
  const uint64_t anchor = capture.header.monotonic_ns;
  std::vector<const NvtxRecord *> records;
  records.reserve(capture.nvtx.size());
  for (const auto &r : capture.nvtx) records.push_back(&r);
  // Stable: one thread's records are in order already and must stay so at equal times.
  std::stable_sort(records.begin(), records.end(),
                   [](const NvtxRecord *a, const NvtxRecord *b) { return a->ts_ns < b->ts_ns; });

  std::map<std::pair<uint32_t, uint32_t>, std::vector<size_t>> stacks;  // (tid, domain) -> open ranges
  std::unordered_map<uint64_t, size_t> started;                         // range id -> open range
  for (const NvtxRecord *r : records) {
    const int64_t ts = static_cast<int64_t>(r->ts_ns - anchor);
    switch (static_cast<NvtxOp>(r->op)) {
      case NvtxOp::kPush: {
        auto &stack = stacks[{r->tid, r->domain_id}];
        NvtxRange range;
        range.start_ns = ts;
        range.tid = r->tid;
        range.message_id = r->message_id;
        range.domain_id = r->domain_id;
        range.depth = static_cast<uint16_t>(std::min<size_t>(stack.size(), UINT16_MAX));
        stack.push_back(out.ranges.size());
        out.ranges.push_back(range);
        break;
      }
      case NvtxOp::kPop: {
        auto it = stacks.find({r->tid, r->domain_id});
        if (it == stacks.end() || it->second.empty()) {
          ++out.unmatched;
          break;
        }
        out.ranges[it->second.back()].end_ns = std::max(ts, out.ranges[it->second.back()].start_ns);
        it->second.pop_back();
        break;
      }
      case NvtxOp::kStart: {
        NvtxRange range;
        range.start_ns = ts;
        range.tid = r->tid;
        range.message_id = r->message_id;
        range.domain_id = r->domain_id;
        range.range_id = r->range_id;
        range.async = true;
        auto [it, fresh] = started.try_emplace(r->range_id, out.ranges.size());
        if (!fresh) {  // an id handed out again while its range was open: close the old one here
          out.ranges[it->second].end_ns = ts;
          it->second = out.ranges.size();
        }
        out.ranges.push_back(range);
        break;
      }
      case NvtxOp::kEnd: {
        auto it = started.find(r->range_id);
        if (it == started.end()) {
          ++out.unmatched;
          break;
        }
        out.ranges[it->second].end_ns = std::max(ts, out.ranges[it->second].start_ns);
        started.erase(it);
        break;
      }
      case NvtxOp::kMark:
        out.marks.push_back({ts, r->tid, r->message_id, r->domain_id});
        break;
      default:
        break;  // a newer writer's op
    }
  }
  auto close_at_end = [&](size_t i) {
    out.ranges[i].end_ns = std::max(end_ns, out.ranges[i].start_ns);
    out.ranges[i].closed = false;
  };
  for (auto &[key, stack] : stacks)
    for (size_t i : stack) close_at_end(i);
  for (auto &[id, i] : started) close_at_end(i);
  out.lanes = assign_lanes(out.ranges);
  return out;
}

}  // namespace gpuleak::output::trace
