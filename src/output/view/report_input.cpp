#include "output/view/report_input.h"

#include "output/report_json.h"
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
  const auto schema = report->find("schema");
  if (schema == report->end() || !schema->is_string() || schema->get<std::string>().rfind("gpuleak.report/", 0) != 0) {
    *error = "is not a gpuleak report (no \"schema\": \"gpuleak.report/1\")";
    return false;
  }
  if (*schema != kReportSchema) {
    *error = "has schema " + schema->get<std::string>() + "; this gpuleak reads " + kReportSchema;
    return false;
  }
  return true;
}

}  // namespace gpuleak::output::view
