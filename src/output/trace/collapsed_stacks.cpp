#include "output/trace/collapsed_stacks.h"

#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "analysis/lives.h"
#include "text/escape.h"

namespace gpuleak::output::trace {

using text::valid_utf8;

bool parse_moment(const std::string &text, Moment *out) {
  if (text == "end")
    *out = Moment::kEnd;
  else if (text == "peak")
    *out = Moment::kPeak;
  else if (text == "oom")
    *out = Moment::kOom;
  else
    return false;
  return true;
}

const char *moment_name(Moment at) {
  switch (at) {
    case Moment::kEnd:
      return "end";
    case Moment::kPeak:
      return "peak";
    case Moment::kOom:
      return "oom";
  }
  return "end";
}

std::string folded_frame(const std::string &name) {
  std::string s = name;
  for (char &c : s) {
    if (c == ';')
      c = ',';
    else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      c = ' ';
  }
  return valid_utf8(s);
}

namespace {

// (device, moment position): whose live allocations to fold.
std::vector<std::pair<int, uint32_t>> moments(const analysis::Lives &lives, uint64_t anchor,
                                              const analysis::Analysis &a, Moment at, std::string *error) {
  std::vector<std::pair<int, uint32_t>> out;
  switch (at) {
    case Moment::kEnd:
      for (const analysis::DeviceCurve &d : lives.devices) out.emplace_back(d.device, lives.size());
      break;
    case Moment::kPeak:  // just after the event that first reached the peak
      for (const analysis::DeviceCurve &d : lives.devices)
        if (d.live.peak > 0) out.emplace_back(d.device, d.live.peak_position + 1);
      break;
    case Moment::kOom:
      if (a.ooms.empty()) {
        *error = "export: the capture has no out-of-memory failure (--at oom)";
        break;
      }
      // Newest first: the failure the program met last, usually the one that ended it.
      out.emplace_back(a.ooms.front().device, lives.position_at(anchor + a.ooms.front().t_ns));
      break;
  }
  return out;
}

}  // namespace

bool collapsed_stacks(const format::Capture &capture, const analysis::Analysis &analysis, const SymbolizeFn &symbolize,
                      Moment at, std::string *out, std::string *error) {
  Sites sites(symbolize, site_options(capture, analysis.user_code));
  return collapsed_stacks(capture, analysis, sites, at, out, error);
}

namespace {

// Groups the allocations live on each (device, position) by call site; only those born at or
// after `born_from` (an event position) count.
void group_live(const analysis::Lives &lives, Sites &sites, const std::vector<std::pair<int, uint32_t>> &points,
                uint32_t born_from, std::vector<LiveStack> *out) {
  out->clear();
  for (const auto &[device, position] : points) {
    std::map<uint64_t, LiveStack> by_site;  // (stack, py stack) -> live
    for (uint32_t i : lives.live_before(position, device, /*per_tensor=*/true)) {
      const analysis::AllocationLife &l = lives.lives[i];
      if (l.birth < born_from) continue;
      LiveStack &s = by_site[static_cast<uint64_t>(l.site.stack_id) << 32 | l.site.py_stack_id];
      s.bytes += l.size;
      s.count += 1;
    }
    for (auto &[key, s] : by_site) {
      s.device = device;
      s.frames = sites.resolve(static_cast<uint32_t>(key >> 32), static_cast<uint32_t>(key)).frames;
      out->push_back(std::move(s));
    }
  }
}

}  // namespace

bool live_stacks(const format::Capture &capture, const analysis::Analysis &analysis, Sites &sites, Moment at,
                 std::vector<LiveStack> *out, std::string *error) {
  const std::shared_ptr<const analysis::Lives> lives = analysis::lives_of(capture, analysis);
  error->clear();
  auto points = moments(*lives, capture.header.monotonic_ns, analysis, at, error);
  if (!error->empty()) return false;
  group_live(*lives, sites, points, 0, out);
  return true;
}

bool parse_iteration_span(const std::string &text, IterationSpan *out) {
  auto number = [](const std::string &t, uint32_t *v) {
    if (t.empty() || t.size() > 9 || t.find_first_not_of("0123456789") != std::string::npos) return false;
    *v = static_cast<uint32_t>(std::stoul(t));
    return true;
  };
  size_t colon = text.find(':');
  if (colon == std::string::npos) {
    if (!number(text, &out->first)) return false;
    out->last = out->first;
    return true;
  }
  return number(text.substr(0, colon), &out->first) && number(text.substr(colon + 1), &out->last) &&
         out->first <= out->last;
}

bool live_stacks_in_iterations(const format::Capture &capture, const analysis::Analysis &analysis, Sites &sites,
                               IterationSpan span, std::vector<LiveStack> *out, std::string *error) {
  const analysis::Iteration *first = nullptr, *last = nullptr;
  uint32_t count = 0;
  for (const analysis::Iteration &it : analysis.iterations) {
    if (!it.primary) continue;
    ++count;
    if (it.index == span.first) first = &it;
    if (it.index == span.last) last = &it;
  }
  if (!first || !last) {
    *error = count == 0 ? "export: the capture has no iterations (--iterations)"
                        : "export: --iterations " + std::to_string(span.first) + ":" + std::to_string(span.last) +
                              " is outside the capture's iterations 0:" + std::to_string(count - 1);
    return false;
  }
  const std::shared_ptr<const analysis::Lives> lives = analysis::lives_of(capture, analysis);
  error->clear();
  const uint64_t anchor = capture.header.monotonic_ns;
  const uint32_t born_from = lives->position_at(anchor + first->start_ns);
  const uint32_t end = lives->position_at(anchor + last->end_ns);
  std::vector<std::pair<int, uint32_t>> points;
  for (const analysis::DeviceCurve &d : lives->devices) points.emplace_back(d.device, end);
  group_live(*lives, sites, points, born_from, out);
  return true;
}

bool collapsed_stacks(const format::Capture &capture, const analysis::Analysis &analysis, Sites &sites, Moment at,
                      std::string *out, std::string *error) {
  std::vector<LiveStack> live;
  if (!live_stacks(capture, analysis, sites, at, &live, error)) return false;
  *out = collapsed_stacks(live);
  return true;
}

std::string collapsed_stacks(const std::vector<LiveStack> &live) {
  std::map<std::string, uint64_t> folded;
  for (const LiveStack &s : live) {
    std::string line = "cuda:" + std::to_string(s.device);
    if (s.frames.empty()) line += ";unknown site";
    for (auto f = s.frames.rbegin(); f != s.frames.rend(); ++f) line += ";" + folded_frame(frame_label(*f));
    folded[line] += s.bytes;
  }
  std::string out;
  for (const auto &[line, bytes] : folded) {
    if (bytes == 0) continue;  // zero-byte allocations draw nothing
    out += line + " " + std::to_string(bytes) + "\n";
  }
  return out;
}

}  // namespace gpuleak::output::trace
