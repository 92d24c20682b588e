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

// The text summary's lines for one device (`device` the report's index): "segments: 3 of
// PyTorch's, 160.0 MiB reserved, 131.2 MiB in tensors (82 %)", then the largest tensor sites in
// them. "" when the report has no segments on that device.
std::string segments_text(const nlohmann::json &report, int64_t device);

}  // namespace gpuleak::output
