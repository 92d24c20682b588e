// Iterations from marks the program left: the gpuleak_iteration_* C API (strongest) and NVTX
// ranges whose name says "step" (DESIGN.md "Iterations"). Automatic detection, for programs with
// neither, is in period_detection.cpp.
#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <unordered_map>

#include "analysis/iteration_finding.h"
#include "analysis/timeline.h"
#include "format/huge_pages.h"

namespace gpuleak::analysis::detail {

using format::Capture;

namespace {

template <typename Record>
std::vector<const Record *> by_time(const std::vector<Record> &records) {
  std::vector<const Record *> out;
  out.reserve(records.size());
  format::prefer_huge_pages(out);
  for (const auto &r : records) out.push_back(&r);
  // Stable: each thread's records are already in order, and must stay so at equal times.
  std::stable_sort(out.begin(), out.end(), [](const Record *a, const Record *b) { return a->ts_ns < b->ts_ns; });
  return out;
}

std::string lower(std::string s) {
  for (char &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// "Batch-12" -> "Batch": the number that tells iterations apart is not part of the loop's name.
std::string without_number(const std::string &s) {
  size_t end = s.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(s[end - 1]))) --end;
  if (end == s.size()) return s;
  while (end > 0 && std::string(" _:#-").find(s[end - 1]) != std::string::npos) --end;
  return end == 0 ? s : s.substr(0, end);
}

}  // namespace

// Several loops may be open at once (eval inside train). A begin closes the previous iteration
// of its own loop; an end names its loop when the recorder knew it, else it closes the innermost
// open iteration of its thread (or of any thread). What is still open at the end of the capture
// closes there: a run killed mid-iteration keeps its last, partial iteration.
std::vector<Span> spans_from_markers(const Capture &capture, uint64_t capture_end_ns) {
  struct Open {
    size_t span;
    uint32_t tid;
    uint64_t seq;
  };
  std::vector<Span> spans;
  std::map<std::string, Open> open;
  uint64_t seq = 0;
  for (const format::MarkerRecord *m : by_time(capture.markers)) {
    auto op = static_cast<format::MarkerOp>(m->op);
    if (op == format::MarkerOp::kIterationBegin) {
      const std::string &loop = capture.string(m->label_id);
      auto it = open.find(loop);
      if (it != open.end()) spans[it->second.span].end_ns = m->ts_ns;
      open[loop] = Open{spans.size(), m->tid, seq++};
      Span s;
      s.loop = loop;
      s.start_ns = m->ts_ns;
      spans.push_back(std::move(s));
    } else if (op == format::MarkerOp::kIterationEnd) {
      auto target = open.end();
      if (m->label_id != 0) target = open.find(capture.string(m->label_id));
      if (target == open.end()) {
        bool same_thread = false;
        for (auto it = open.begin(); it != open.end(); ++it) {
          bool mine = it->second.tid == m->tid;
          if (target == open.end() || (mine && !same_thread) ||
              (mine == same_thread && it->second.seq > target->second.seq)) {
            target = it;
            same_thread = mine;
          }
        }
      }
      if (target == open.end()) continue;  // an end with nothing open
      spans[target->second.span].end_ns = m->ts_ns;
      open.erase(target);
    }
  }
  for (auto &[loop, o] : open) spans[o.span].end_ns = std::max(capture_end_ns, spans[o.span].start_ns);
  return spans;
}

// Push/pop pair per thread (a pop with nothing pushed is ignored), start/end by range id. Only
// ranges whose whole message matches count; the loop's name is the pattern's first group,
// lowercased ("Step 12" -> "step"), or without a group the message less its trailing number. A
// matching range inside another matching range is part of it: only the outermost is kept.
std::vector<Span> spans_from_nvtx(const Capture &capture, const RangeMatcher &is_range, uint64_t capture_end_ns) {
  std::unordered_map<uint32_t, std::optional<std::string>> names;  // message id -> loop name
  auto loop_of = [&](uint32_t message_id) -> const std::optional<std::string> & {
    auto [it, fresh] = names.try_emplace(message_id);
    if (fresh && message_id != 0) {
      const std::string &text = capture.string(message_id);
      std::optional<std::string> group;
      if (is_range(text, &group)) it->second = lower(group ? *group : without_number(text));
    }
    return it->second;
  };
  struct Pending {
    uint32_t message;
    uint64_t ts;
  };
  std::vector<Span> found;
  auto close = [&](const Pending &p, uint64_t end) {
    const auto &loop = loop_of(p.message);
    if (!loop) return;
    Span s;
    s.loop = *loop;
    s.start_ns = p.ts;
    s.end_ns = std::max(end, p.ts);
    found.push_back(std::move(s));
  };
  std::unordered_map<uint32_t, std::vector<Pending>> stacks;  // per thread
  std::unordered_map<uint64_t, Pending> started;              // by range id
  for (const format::NvtxRecord *r : by_time(capture.nvtx)) {
    switch (static_cast<format::NvtxOp>(r->op)) {
      case format::NvtxOp::kPush:
        stacks[r->tid].push_back({r->message_id, r->ts_ns});
        break;
      case format::NvtxOp::kPop: {
        auto it = stacks.find(r->tid);
        if (it == stacks.end() || it->second.empty()) break;
        close(it->second.back(), r->ts_ns);
        it->second.pop_back();
        break;
      }
      case format::NvtxOp::kStart:
        started[r->range_id] = {r->message_id, r->ts_ns};
        break;
      case format::NvtxOp::kEnd: {
        auto it = started.find(r->range_id);
        if (it == started.end()) break;
        close(it->second, r->ts_ns);
        started.erase(it);
        break;
      }
      default:
        break;
    }
  }
  for (auto &[tid, stack] : stacks)
    for (const Pending &p : stack) close(p, capture_end_ns);
  for (auto &[id, p] : started) close(p, capture_end_ns);

  std::sort(found.begin(), found.end(), [](const Span &a, const Span &b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
  std::vector<Span> outermost;
  uint64_t covered_to = 0;
  for (Span &s : found) {
    if (!outermost.empty() && s.end_ns <= covered_to) continue;  // inside a kept range
    covered_to = s.end_ns;
    outermost.push_back(std::move(s));
  }
  return outermost;
}

std::string primary_loop(const std::vector<Span> &spans) {
  std::map<std::string, std::pair<size_t, uint64_t>> loops;  // name -> (count, first start)
  std::pair<size_t, uint64_t> *loop = nullptr;               // the previous span's: spans come in runs
  for (size_t s = 0; s < spans.size(); ++s) {
    if (!loop || spans[s].loop != spans[s - 1].loop)
      loop = &loops.try_emplace(spans[s].loop, 0, spans[s].start_ns).first->second;
    ++loop->first;
    loop->second = std::min(loop->second, spans[s].start_ns);
  }
  const std::string *best = nullptr;
  std::pair<size_t, uint64_t> best_key{0, 0};
  for (const auto &[name, key] : loops) {
    if (!best || key.first > best_key.first || (key.first == best_key.first && key.second < best_key.second)) {
      best = &name;
      best_key = key;
    }
  }
  return best ? *best : std::string();
}

}  // namespace gpuleak::analysis::detail
