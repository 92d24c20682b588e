// The report's schema name and the versions a reader accepts (docs/report-format.md, "Version
// policy"): one rule for every C++ reader of a report file (the gate's check, diff and rank
// comparison, `gpuleak view REPORT`), the same rule tools/python/gpuleak/report.py applies.
// Header-only, so that the gate reads it without linking the writers.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace gpuleak::output {

inline constexpr int kReportMajor = 1;
inline constexpr const char *kReportSchema = "gpuleak.report/1";
// What this gpuleak writes: the major version and the minor of the last fields added
// (docs/report-format.md "Version policy"; 1.1: loops[], issue #33; 1.2: loops[].setup; 1.3:
// devices[].forecast.held_elsewhere_bytes, pool_free_bytes and fills).
inline constexpr const char *kReportSchemaWritten = "gpuleak.report/1.3";

// "" when `doc` is a report this gpuleak reads: "gpuleak.report/<major>[.<minor>]" with a major
// version from 1 to kReportMajor (within a major version fields are only added, and a reader
// ignores those it does not know). Otherwise why not, in words meant to follow the file's name and
// a colon: "not a gpuleak report (...)", "unknown report schema ...", "report schema ... is newer
// than this gpuleak reads (...); upgrade gpuleak".
inline std::string report_schema_problem(const nlohmann::json &doc) {
  const std::string prefix = "gpuleak.report/";
  auto it = doc.is_object() ? doc.find("schema") : doc.end();
  if (!doc.is_object() || it == doc.end() || !it->is_string() || it->get<std::string>().rfind(prefix, 0) != 0)
    return std::string("not a gpuleak report (no \"schema\": \"") + kReportSchema + "\")";
  const std::string schema = it->get<std::string>();
  std::string major_text = schema.substr(prefix.size());
  major_text = major_text.substr(0, major_text.find('.'));  // "2.1" reads as major 2
  const bool numeric =
      !major_text.empty() && major_text.size() < 9 && major_text.find_first_not_of("0123456789") == std::string::npos;
  const long major = numeric ? std::stol(major_text) : 0;
  if (major < 1) return "unknown report schema \"" + schema + "\" (this gpuleak reads " + kReportSchema + ")";
  if (major > kReportMajor)
    return "report schema " + schema + " is newer than this gpuleak reads (" + kReportSchema + "); upgrade gpuleak";
  return "";
}

}  // namespace gpuleak::output
