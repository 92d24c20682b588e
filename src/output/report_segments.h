// The report's segments[] (docs/report-format.md "segments"): a framework allocator's segments by
// site, and the blocks (tensors) that lived in them, when the capture has blocks (format 1.3).
// Renders analysis::SegmentSite and decides nothing; the text summary's lines come from the JSON.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/analysis.h"

namespace gpuleak::output {

// `describe` adds a call site's "site_id", "stack" and "headline" to an object (report_json.cpp).
nlohmann::json segments_json(const std::vector<analysis::SegmentSite> &segments,
                             const std::function<void(const analysis::Site &, nlohmann::json &)> &describe);

// The text summary's lines for one device (`device` the report's index): "segments: 160.0 MiB
// reserved by PyTorch's caching allocator at exit (3 segments), 131.2 MiB of it in tensors (82 %)"
// (without block data: that which tensors are in them is not known), then the largest tensor
// sites in them. "" when the report has no segments on that device.
std::string segments_text(const nlohmann::json &report, int64_t device);
// Bytes of the device's framework segments still reserved at exit (0 without segments).
uint64_t segments_reserved_at_exit(const nlohmann::json &report, int64_t device);
// Whose segments they are, as the summary names it: "PyTorch's caching allocator" (the default),
// "CuPy's pool" or "JAX's arena", from the report's allocator mode.
std::string segments_owner(const nlohmann::json &report);

}  // namespace gpuleak::output
