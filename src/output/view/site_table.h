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
#include "output/sites.h"

namespace gpuleak::output::view {

class SiteTable {
 public:
  // `sites` names each site as the report does (frames, site_id, headline); it must outlive the
  // table.
  explicit SiteTable(Sites &sites) : sites_(sites) {}

  // The site's index in the table, adding it (and its frames) on first use.
  uint32_t index(const analysis::Site &site);

  // {"site_id": [...], "frames": [[frame index, innermost first], ...], "headline": [frame index
  // of the report's headline, null for an unknown site], "headline_text": [...]} and the frame table
  // {"function": [...], "file": [...], "line": [...], "module": [...], "kind": [...],
  // "address": [...], "user": [1 when the user's own code (user_frames), else 0]}, columns of equal
  // length; unknown values are null. A frame's address is kept only when its function is unknown
  // (it is then all there is). site_id is the report's.
  nlohmann::json sites_json() const;
  nlohmann::json frames_json() const;
  size_t size() const { return site_ids_.size(); }

 private:
  uint32_t frame_index(const Frame &f);

  Sites &sites_;
  std::unordered_map<uint64_t, uint32_t> by_site_;
  std::vector<std::string> site_ids_;
  std::vector<std::vector<uint32_t>> site_frames_;
  std::vector<nlohmann::json> headline_;  // frame index or null
  std::vector<std::string> headline_text_;
  using FrameKey = std::tuple<bool, std::string, std::string, std::string, int, uint64_t>;
  std::map<FrameKey, uint32_t> by_frame_;
  std::vector<Frame> frames_;
  std::vector<bool> frame_user_;
};

}  // namespace gpuleak::output::view
