#include "output/view/site_table.h"

#include <cinttypes>
#include <cstdio>

#include "output/report_json.h"
#include "text/paths.h"

namespace gpuleak::output::view {

using nlohmann::json;
using text::basename_of;
using text::hex;

namespace {

json text_or_null(const std::string &s) { return s.empty() ? json(nullptr) : json(s); }

}  // namespace

// Frames are shown, not matched by address: one source line is one frame whatever its address
// (an unknown function keeps its address, the only thing that tells such frames apart).
uint32_t SiteTable::frame_index(const Frame &f) {
  Frame shown = f;
  shown.module = basename_of(f.module);
  if (!shown.function.empty()) shown.address = 0;
  FrameKey key{f.kind == Frame::Kind::kNative, shown.function, shown.file, shown.module, shown.line, shown.address};
  auto [it, fresh] = by_frame_.try_emplace(key, static_cast<uint32_t>(frames_.size()));
  if (fresh) {
    frames_.push_back(std::move(shown));
    frame_user_.push_back(false);
  }
  return it->second;
}

uint32_t SiteTable::index(const analysis::Site &site) {
  uint64_t key = static_cast<uint64_t>(site.stack_id) << 32 | site.py_stack_id;
  auto [it, fresh] = by_site_.try_emplace(key, static_cast<uint32_t>(site_ids_.size()));
  if (!fresh) return it->second;
  const ResolvedSite &r = sites_.resolve(site);
  std::vector<uint32_t> indices;
  indices.reserve(r.frames.size());
  const std::vector<bool> user = user_frames(r.frames, sites_.options().user_code);
  for (size_t i = 0; i < r.frames.size(); ++i) {
    const uint32_t f = frame_index(r.frames[i]);
    // A frame is the user's when any stack it is in says so (a native frame's verdict can depend on
    // whether its stack has Python frames; one frame shown twice would read as a contradiction).
    if (user[i]) frame_user_[f] = true;
    indices.push_back(f);
  }
  site_ids_.push_back(r.id);
  site_frames_.push_back(std::move(indices));
  headline_.push_back(r.frames.empty() ? nlohmann::json(nullptr) : nlohmann::json(frame_index(r.headline.frame)));
  headline_text_.push_back(r.headline.text);
  return it->second;
}

json SiteTable::sites_json() const {
  return {{"site_id", site_ids_}, {"frames", site_frames_}, {"headline", headline_}, {"headline_text", headline_text_}};
}

json SiteTable::frames_json() const {
  json function = json::array(), file = json::array(), line = json::array(), module = json::array(),
       kind = json::array(), address = json::array(), user = json::array();
  for (const Frame &f : frames_) {
    function.push_back(text_or_null(f.function));
    file.push_back(text_or_null(f.file));
    line.push_back(f.line > 0 ? json(f.line) : json(nullptr));
    module.push_back(text_or_null(f.module));
    kind.push_back(f.kind == Frame::Kind::kNative ? "native" : "python");
    address.push_back(f.address ? json(hex(f.address)) : json(nullptr));
  }
  for (bool u : frame_user_) user.push_back(u ? 1 : 0);
  return {{"function", std::move(function)}, {"file", std::move(file)}, {"line", std::move(line)},
          {"module", std::move(module)},     {"kind", std::move(kind)}, {"address", std::move(address)},
          {"user", std::move(user)}};
}

}  // namespace gpuleak::output::view
