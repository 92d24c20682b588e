#include "output/report_segments.h"

#include <algorithm>
#include <cstdio>

#include "format/allocator_mode.h"
#include "format/words.h"
#include "output/text_summary.h"

namespace gpuleak::output {

using nlohmann::json;

json segments_json(const std::vector<analysis::SegmentSite> &segments,
                   const std::function<void(const analysis::Site &, json &)> &describe) {
  json out = json::array();
  for (const analysis::SegmentSite &s : segments) {
    json j;
    describe(s.site, j);
    j["device"] = s.device;
    j["count"] = s.count;
    j["peak_bytes"] = s.peak_bytes;
    j["live_at_exit_bytes"] = s.live_at_exit_bytes;
    j["live_at_exit_count"] = s.live_at_exit_count;
    json blocks = json::array();
    for (const analysis::SegmentBlock &b : s.blocks) {
      json x;
      describe(b.site, x);
      x["live_at_exit_bytes"] = b.live_at_exit_bytes;
      x["live_at_exit_count"] = b.live_at_exit_count;
      x["peak_bytes"] = b.peak_bytes;
      blocks.push_back(std::move(x));
    }
    j["blocks"] = std::move(blocks);
    out.push_back(std::move(j));
  }
  return out;
}

namespace {

uint64_t u64(const json &j, const char *key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

}  // namespace

std::string segments_owner(const json &report) {
  // The report's allocator mode names the framework (CuPy's pool chunks, JAX's arena, PyTorch's
  // caching allocator by default, and whenever PyTorch's objects were seen too).
  bool pytorch = false, cupy = false, jax = false;
  if (auto run = report.find("run"); run != report.end() && run->is_object()) {
    for (format::AllocatorMode m : format::AllocatorModes::parse(run->value("allocator_mode", std::string())).modes) {
      pytorch |= format::framework_of(m) == format::ModeFramework::kPyTorch;
      cupy |= format::framework_of(m) == format::ModeFramework::kCuPy;
      jax |= format::framework_of(m) == format::ModeFramework::kJax;
    }
  }
  if (cupy && !pytorch) return "CuPy's pool";
  if (jax && !pytorch) return "JAX's arena";
  return "PyTorch's caching allocator";
}

uint64_t segments_reserved_at_exit(const json &report, int64_t device) {
  auto list = report.find("segments");
  if (list == report.end() || !list->is_array()) return 0;
  uint64_t reserved = 0;
  for (const json &s : *list)
    if (s.is_object() && s.contains("device") && s["device"].is_number_integer() &&
        s["device"].get<int64_t>() == device)
      reserved += u64(s, "live_at_exit_bytes");
  return reserved;
}

std::string segments_text(const json &report, int64_t device) {
  auto list = report.find("segments");
  if (list == report.end() || !list->is_array()) return "";
  uint64_t sites = 0, count = 0, ever = 0, reserved = 0, in_tensors = 0, peak = 0;
  bool any_blocks = false;  // the allocator's trace reached gpuleak: which tensors are in the segments is known
  struct Tensors {
    const json *entry;
    uint64_t bytes, count;
  };
  std::vector<Tensors> tensors;
  for (const json &s : *list) {
    if (!s.is_object() || !s.contains("device") || !s["device"].is_number_integer() ||
        s["device"].get<int64_t>() != device)
      continue;
    ++sites;
    count += u64(s, "live_at_exit_count");
    ever += u64(s, "count");
    reserved += u64(s, "live_at_exit_bytes");
    peak += u64(s, "peak_bytes");
    auto blocks = s.find("blocks");
    if (blocks == s.end() || !blocks->is_array()) continue;
    any_blocks = any_blocks || !blocks->empty();
    for (const json &b : *blocks) {
      if (!b.is_object()) continue;
      const uint64_t bytes = u64(b, "live_at_exit_bytes");
      in_tensors += bytes;
      if (bytes == 0) continue;
      // One line per tensor site, over every segment site it lives in.
      auto same = std::find_if(tensors.begin(), tensors.end(), [&](const Tensors &t) {
        return t.entry->value("site_id", "") == b.value("site_id", "");
      });
      if (same == tensors.end())
        tensors.push_back({&b, bytes, u64(b, "live_at_exit_count")});
      else
        same->bytes += bytes, same->count += u64(b, "live_at_exit_count");
    }
  }
  if (sites == 0) return "";
  const std::string owner = segments_owner(report);
  const std::string object = owner.rfind("PyTorch", 0) == 0 ? "tensor" : "array";
  std::string out = "  segments: ";
  if (reserved == 0) {
    out += format::count_of(ever, "segment") + " of " + owner + " over the run (at most " + human_bytes(peak) +
           " reserved at once), none left at exit\n";
    return out;
  }
  out += human_bytes(static_cast<double>(reserved)) + " reserved by " + owner + " at exit (" +
         format::count_of(count, "segment") + ")";
  if (!any_blocks)
    return out + "; which " + object + "s are in them is not known (" +
           (object == "tensor" ? "PyTorch's allocator trace" : "the framework's view of its objects") +
           " was not seen)\n";
  char share[32];
  std::snprintf(share, sizeof share, " (%.0f %%)",
                100.0 * static_cast<double>(in_tensors) / static_cast<double>(reserved));
  out += ", " + human_bytes(static_cast<double>(in_tensors)) + " of it in " + object + "s" + share + "\n";
  std::stable_sort(tensors.begin(), tensors.end(),
                   [](const Tensors &a, const Tensors &b) { return a.bytes > b.bytes; });
  for (size_t i = 0; i < tensors.size() && i < 3; ++i)
    out += "    in them: " + human_bytes(static_cast<double>(tensors[i].bytes)) + " in " +
           format::count_of(tensors[i].count, object) + " at " + site_text(*tensors[i].entry) + "\n";
  return out;
}

}  // namespace gpuleak::output
