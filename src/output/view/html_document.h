// The HTML report: the viewer's built template (viewer/, one self-contained file) with the data
// spliced into its `<script type="application/json" id="gpuleak-data">` element.
//
// Program strings end up in that element (function names, file paths, NVTX names, the command
// line), so the JSON text is escaped to be inert inside a script element: every '<' becomes
// \u003c (no "</script>" can close the element and no "<!--" can switch the parser into its
// escaped states), and U+2028/U+2029 become \u2028/\u2029. JSON.parse gives back the very same
// strings.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpuleak::output::view {

// The element's text in the template, replaced by the data: exactly one must be present.
inline constexpr std::string_view kDataPlaceholder = "\"__GPULEAK_DATA__\"";

// JSON text -> the same JSON, safe inside a <script> element (see above). Input must be JSON
// (a '<' outside a string would not survive, and never occurs in JSON).
std::string escape_json_for_script(std::string_view json_text);

// The document embedded in the page, as compact JSON with invalid UTF-8 replaced by U+FFFD, escaped
// as above: {"schema": "gpuleak.html/1", "report": ..., "iterations": ..., "view": ...}. `report`
// is the report less its "iterations" array, which moves to "iterations" as columns (the same
// numbers, a third of the bytes: a long run has hundreds of thousands); `view` may be null.
std::string embedded_data(nlohmann::json report, const nlohmann::json &view);

// The report's iterations[] as columns: {"loops": [names], "loop": [index into loops], "index",
// "primary" (0/1), "start_ns", "end_ns", "devices": [{"index", "live_end_bytes", "peak_bytes",
// "allocated_bytes", "freed_bytes", "alloc_count", "free_count"}]}, one entry per device of the
// first iteration (at most text::kMaxDevices, else std::runtime_error). A report without
// iterations gives empty columns.
nlohmann::json iteration_columns(const nlohmann::json &iterations);

// The template with its placeholder replaced by `data`. Throws std::runtime_error when the
// template holds no placeholder or more than one (not a gpuleak viewer template).
std::string splice_into_template(const std::string &html_template, const std::string &data);

// Where the built template is looked for, first found wins: `explicit_path` when not empty (and
// then nothing else), <dir of the executable>/../share/gpuleak/viewer.html, then the source
// tree's viewer/dist/index.html and viewer/prebuilt/viewer.html (`source_dir`, "" to skip).
std::vector<std::string> template_candidates(const std::string &explicit_path, const std::string &exe_dir,
                                             const std::string &source_dir);

// The source tree gpuleak was built from (its viewer/ is the fallback above); "" when unknown.
const char *source_tree_dir();

}  // namespace gpuleak::output::view
