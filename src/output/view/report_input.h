// A report given to `gpuleak view` (instead of a capture): untrusted JSON text checked to be a
// gpuleak.report/1 document before any of it reaches the page. Parsed through the bounded parser
// (text/json_input.h): embedded_data() dumps the document again, and nlohmann's dump recurses
// once per nesting level.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace gpuleak::output::view {

// The report document, or false with a one-line reason (without the file's name) in *error:
// "is neither a gpuleak capture nor a JSON report (...)", "is not a gpuleak report (...)", "is JSON
// nested deeper than 512 levels", "cannot be read: report schema ... is newer than this gpuleak
// reads (...); upgrade gpuleak": each follows the file's name. The versions accepted are the
// gate's (output/report_schema.h).
bool parse_report_text(std::string_view bytes, nlohmann::json *report, std::string *error);

}  // namespace gpuleak::output::view
