// The report as Markdown, for a pull request comment, a CI step summary or a wiki page:
// `gpuleak report --format markdown`. Renders a report JSON (as built by make_report, or read
// back from a file); decides nothing. Every string that came from the profiled program (names,
// paths, loop names, the command) is escaped for Markdown and HTML, so a hostile function name
// cannot break a table, open a link or inject markup.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace gpuleak::output {

// The whole document, ending with a newline. Never throws for any JSON value: missing or
// mistyped fields render as "?" or are left out.
std::string report_markdown(const nlohmann::json &report);

}  // namespace gpuleak::output
