#include "output/trace/speedscope_export.h"

#include <map>
#include <nlohmann/json.hpp>
#include <tuple>
#include <vector>

#include "text/escape.h"

namespace gpuleak::output::trace {

using text::valid_utf8;

namespace {

// Shares one frame entry per distinct (name, file, line): speedscope keys its call-tree nodes on
// the frame index, so the same function at the same line must be one index everywhere.
class FrameTable {
 public:
  int add(const std::string &name, const std::string &file, int line) {
    auto key = std::make_tuple(name, file, line);
    auto [it, inserted] = index_.emplace(key, static_cast<int>(frames_.size()));
    if (inserted) {
      nlohmann::json f = {{"name", name}};
      if (!file.empty()) f["file"] = file;
      if (line > 0) f["line"] = line;
      frames_.push_back(std::move(f));
    }
    return it->second;
  }
  nlohmann::json take() { return std::move(frames_); }

 private:
  std::map<std::tuple<std::string, std::string, int>, int> index_;
  nlohmann::json frames_ = nlohmann::json::array();
};

}  // namespace

std::string speedscope_profile(const std::vector<LiveStack> &live, const std::string &name) {
  FrameTable frames;
  nlohmann::json samples = nlohmann::json::array(), weights = nlohmann::json::array();
  uint64_t total = 0;
  for (const LiveStack &s : live) {
    if (s.bytes == 0) continue;  // zero-byte allocations draw nothing
    nlohmann::json stack = nlohmann::json::array();
    stack.push_back(frames.add("cuda:" + std::to_string(s.device), "", 0));
    if (s.frames.empty()) stack.push_back(frames.add("unknown site", "", 0));
    for (auto f = s.frames.rbegin(); f != s.frames.rend(); ++f)
      stack.push_back(frames.add(valid_utf8(frame_label(*f)), valid_utf8(f->file), f->line));
    samples.push_back(std::move(stack));
    weights.push_back(s.bytes);
    total += s.bytes;
  }
  const std::string title = valid_utf8(name);
  nlohmann::json doc = {
      {"$schema", "https://www.speedscope.app/file-format-schema.json"},
      {"exporter", "gpuleak"},
      {"name", title},
      {"activeProfileIndex", 0},
      {"shared", {{"frames", frames.take()}}},
      {"profiles", nlohmann::json::array({{{"type", "sampled"},
                                           {"name", title},
                                           {"unit", "bytes"},
                                           {"startValue", 0},
                                           {"endValue", total},
                                           {"samples", std::move(samples)},
                                           {"weights", std::move(weights)}}})},
  };
  return doc.dump() + "\n";
}

}  // namespace gpuleak::output::trace
