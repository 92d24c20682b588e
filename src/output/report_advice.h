// The report's advice[] (docs/report-format.md "advice"): the analysis's loop advice findings
// as JSON. Renders analysis::Advice and decides nothing.
#pragma once

#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/analysis.h"

namespace gpuleak::output {

// `describe` adds a call site's "site_id" and "stack" to an object (report_json.cpp's Sites).
nlohmann::json advice_json(const std::vector<analysis::Advice> &advice,
                           const std::function<void(const analysis::Site &, nlohmann::json &)> &describe);

}  // namespace gpuleak::output
