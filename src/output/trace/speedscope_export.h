// `gpuleak export --format speedscope`: the device memory live at one moment, by call stack, as
// a speedscope file (https://www.speedscope.app/file-format-schema.json). One "sampled" profile
// in unit "bytes": each sample is one call site's stack, root first (the device, then main, ...,
// then the frame that called CUDA), weighted by the bytes it holds live. Frames are shared, with
// "function (file:line)" names (sites.h frame_label) plus "file" and "line" where known, so
// speedscope's left-heavy and sandwich views group them. Every string is written by nlohmann as
// valid, escaped JSON (names are untrusted: symbols, paths, Python code objects).
#pragma once

#include <string>
#include <vector>

#include "output/trace/collapsed_stacks.h"

namespace gpuleak::output::trace {

// The speedscope JSON of `live` (live_stacks); `title` names the file and its profile.
std::string speedscope_profile(const std::vector<LiveStack> &live, const std::string &title);

}  // namespace gpuleak::output::trace
