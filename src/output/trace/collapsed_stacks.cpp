#include "output/trace/collapsed_stacks.h"

#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include "output/trace/memory_replay.h"
#include "output/trace/trace_text.h"

namespace gpuleak::output::trace {

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
std::vector<std::pair<int, uint32_t>> moments(const MemoryReplay &replay, const analysis::Analysis &a, Moment at,
                                              std::string *error) {
  std::vector<std::pair<int, uint32_t>> out;
  switch (at) {
    case Moment::kEnd:
      for (int d : replay.devices) out.emplace_back(d, replay.size());
      break;
    case Moment::kPeak:
      for (size_t s = 0; s < replay.devices.size(); ++s)
        if (replay.peak[s] > 0) out.emplace_back(replay.devices[s], replay.peak_at[s]);
      break;
    case Moment::kOom:
      if (a.ooms.empty()) {
        *error = "export: the capture has no out-of-memory failure (--at oom)";
        break;
      }
      // Newest first: the failure the program met last, usually the one that ended it.
      out.emplace_back(a.ooms.front().device, replay.lower_bound(replay.anchor() + a.ooms.front().t_ns));
      break;
  }
  return out;
}

}  // namespace

bool collapsed_stacks(const format::Capture &capture, const analysis::Analysis &analysis, const SymbolizeFn &symbolize,
                      Moment at, std::string *out, std::string *error) {
  Sites sites(symbolize, site_options(capture));
  return collapsed_stacks(capture, analysis, sites, at, out, error);
}

bool collapsed_stacks(const format::Capture &capture, const analysis::Analysis &analysis, Sites &sites, Moment at,
                      std::string *out, std::string *error) {
  MemoryReplay replay(capture, analysis);
  error->clear();
  auto points = moments(replay, analysis, at, error);
  if (!error->empty()) return false;

  std::map<std::string, uint64_t> folded;
  for (const auto &[device, position] : points) {
    std::unordered_map<uint64_t, uint64_t> by_site;  // (stack, py stack) -> bytes
    for (uint32_t i : replay.live_before(position, device)) {
      const Life &l = replay.lives[i];
      by_site[static_cast<uint64_t>(l.stack_id) << 32 | l.py_stack_id] += l.size;
    }
    const std::string root = "cuda:" + std::to_string(device);
    for (const auto &[key, bytes] : by_site) {
      const Stack &frames = sites.resolve(static_cast<uint32_t>(key >> 32), static_cast<uint32_t>(key)).frames;
      std::string line = root;
      if (frames.empty()) line += ";unknown site";
      for (auto f = frames.rbegin(); f != frames.rend(); ++f) line += ";" + folded_frame(frame_label(*f));
      folded[line] += bytes;
    }
  }
  out->clear();
  for (const auto &[line, bytes] : folded) {
    if (bytes == 0) continue;  // zero-byte allocations draw nothing
    *out += line + " " + std::to_string(bytes) + "\n";
  }
  return true;
}

}  // namespace gpuleak::output::trace
