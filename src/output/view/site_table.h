// Call sites for the viewer's flame graphs: each site's symbolized stack, with frames interned
// into one table so that a frame shared by ten thousand stacks is written once.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/analysis.h"
#include "output/frame.h"

namespace gpuleak::output::view {

class SiteTable {
 public:
  // `symbolize` as for make_report(): a stack id to frames, innermost first. It must outlive
  // the table and is called at most once per stack id.
  explicit SiteTable(const std::function<Stack(uint32_t)> &symbolize) : symbolize_(symbolize) {}

  // The site's index in the table, adding it (and its frames) on first use.
  uint32_t index(const analysis::Site &site);

  // {"site_id": [...], "frames": [[frame index, innermost first], ...]} and the frame table
  // {"function": [...], "file": [...], "line": [...], "module": [...], "kind": [...],
  // "address": [...]}, columns of equal length; unknown values are null. A frame's address is
  // kept only when its function is unknown (it is then all there is). site_id is the report's.
  nlohmann::json sites_json() const;
  nlohmann::json frames_json() const;
  size_t size() const { return site_ids_.size(); }

 private:
  const Stack &stack(uint32_t id);
  uint32_t frame_index(const Frame &f);

  const std::function<Stack(uint32_t)> &symbolize_;
  std::unordered_map<uint32_t, Stack> stacks_;
  std::unordered_map<uint64_t, uint32_t> by_site_;
  std::vector<std::string> site_ids_;
  std::vector<std::vector<uint32_t>> site_frames_;
  using FrameKey = std::tuple<bool, std::string, std::string, std::string, int, uint64_t>;
  std::map<FrameKey, uint32_t> by_frame_;
  std::vector<Frame> frames_;
};

}  // namespace gpuleak::output::view
