// JUnit XML (writers.h): one testcase per report, for CI systems that collect test results
// (GitLab's junit report, Jenkins, the GitHub test-reporter actions).
#include <sstream>

#include "gate/writers.h"
#include "text/escape.h"

namespace gpuleak::gate {

using text::xml_escape;

std::string write_junit(const std::vector<ReportOutcome> &outcomes) {
  size_t failures = 0;
  for (const ReportOutcome &o : outcomes) failures += o.failed() ? 1 : 0;
  std::ostringstream x;
  const std::string counts =
      " tests=\"" + std::to_string(outcomes.size()) + "\" failures=\"" + std::to_string(failures) + "\" errors=\"0\"";
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x << "<testsuites name=\"gpuleak check\"" << counts << ">\n";
  x << "  <testsuite name=\"gpuleak check\"" << counts << " skipped=\"0\">\n";
  for (const ReportOutcome &o : outcomes) {
    x << "    <testcase classname=\"gpuleak.check\" name=\"" << xml_escape(o.report.display_name(), true)
      << "\" file=\"" << xml_escape(o.report.path, true) << "\">\n";
    std::string fail_text, other_text;
    const Finding *first = nullptr;
    for (const Finding &f : o.findings) {
      std::string line = std::string(status_name(f.status)) + " " + finding_line(f) + "\n";
      if (f.status == Status::kFail) {
        if (!first) first = &f;
        fail_text += line;
      } else if (f.status != Status::kPass) {
        other_text += line;
      }
    }
    if (first) {
      x << "      <failure type=\"" << xml_escape(kind_name(first->kind), true) << "\" message=\""
        << xml_escape(finding_line(*first), true) << "\">" << xml_escape(fail_text) << "</failure>\n";
    }
    std::string out = "report " + o.report.path + ": verdict " + o.report.verdict + "\n" + other_text;
    x << "      <system-out>" << xml_escape(out) << "</system-out>\n";
    x << "    </testcase>\n";
  }
  x << "  </testsuite>\n</testsuites>\n";
  return x.str();
}

}  // namespace gpuleak::gate
