#include "output/view/report_input.h"

#include "output/report_schema.h"
#include "text/json_input.h"

namespace gpuleak::output::view {

bool parse_report_text(std::string_view bytes, nlohmann::json *report, std::string *error) {
  text::JsonError why;
  if (!text::parse_json(bytes, report, &why)) {
    *error = why.kind == text::JsonError::kTooDeep
                 ? "is " + why.message  // "is JSON nested deeper than ..."
                 : "is neither a gpuleak capture nor a JSON report (" + why.message + ")";
    return false;
  }
  if (!report->is_object()) {
    *error = "is neither a gpuleak capture nor a JSON report (JSON, but not an object)";
    return false;
  }
  const std::string problem = report_schema_problem(*report);
  if (!problem.empty()) {  // the versions every reader accepts (report_schema.h)
    *error = problem.rfind("not ", 0) == 0 ? "is " + problem : "cannot be read: " + problem;
    return false;
  }
  return true;
}

}  // namespace gpuleak::output::view
