// JUnit XML (writers.h): one testcase per report, for CI systems that collect test results
// (GitLab's junit report, Jenkins, the GitHub test-reporter actions); and one per test whose
// loops the report judged (a pytest run: report loops[].test, issue #33), named by its test id,
// failing with that test's own findings. A finding is counted once: a test's findings fail its
// own case, and the report's case fails only with the findings of no test (one leak in a test
// suite is one failing JUnit case, as it is one failure in the text).
#include <algorithm>
#include <map>
#include <sstream>

#include "gate/writers.h"
#include "text/escape.h"
#include "text/paths.h"

namespace gpuleak::gate {

using text::xml_escape;

namespace {

std::string program_and_rank(const Report &r) {
  return r.program + (r.rank ? " (rank " + std::to_string(*r.rank) + ")" : "");
}

// The report file's name without its folder and without the component that is the pid
// ("out/train.4242.report.json" -> "train.report.json"): captures are named <program>.<pid>.
std::string file_name_without_pid(const Report &r) {
  std::string name = text::basename_of(r.path);
  if (!r.pid) return name;
  const std::string pid = "." + std::to_string(*r.pid);
  for (size_t at = name.find(pid); at != std::string::npos; at = name.find(pid, at + 1)) {
    size_t end = at + pid.size();
    if (end == name.size() || name[end] == '.') return name.erase(at, pid.size());
  }
  return name;
}

}  // namespace

std::vector<std::string> junit_test_names(const std::vector<ReportOutcome> &outcomes) {
  std::vector<std::string> base, named;
  for (const ReportOutcome &o : outcomes) base.push_back(program_and_rank(o.report));
  std::map<std::string, size_t> count_base, count_named, nth;
  for (const std::string &b : base) ++count_base[b];
  for (size_t i = 0; i < outcomes.size(); ++i) {
    named.push_back(count_base[base[i]] > 1 ? base[i] + " [" + file_name_without_pid(outcomes[i].report) + "]"
                                            : base[i]);
    ++count_named[named.back()];
  }
  // A shared name takes the file's name when that tells the reports apart, else its position
  // among the reports of that name (two runs of one program: "#1", "#2").
  // The position is taken in the order of the report paths, so that the names do not depend on
  // the order the shell's glob or the CI script gave the files in.
  std::vector<size_t> order(outcomes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return outcomes[a].report.path < outcomes[b].report.path; });
  std::vector<std::string> names(outcomes.size());
  for (size_t i : order) {
    const size_t k = ++nth[base[i]];
    names[i] = count_named[named[i]] == 1 ? named[i] : base[i] + " #" + std::to_string(k);
  }
  return names;
}

namespace {

// The tests a report's loops ran in, in the order of their loops, each once.
std::vector<std::string> tests_of(const Report &r) {
  std::vector<std::string> tests;
  for (const Loop &l : r.loops)
    if (l.test && std::find(tests.begin(), tests.end(), *l.test) == tests.end()) tests.push_back(*l.test);
  return tests;
}

bool test_failed(const ReportOutcome &o, const std::string &test) {
  return std::any_of(o.findings.begin(), o.findings.end(),
                     [&](const Finding &f) { return f.status == Status::kFail && f.test == test; });
}

void write_test_case(std::ostringstream &x, const ReportOutcome &o, const std::string &suite, const std::string &test) {
  x << "    <testcase classname=\"gpuleak.check." << xml_escape(suite, true) << "\" name=\"" << xml_escape(test, true)
    << "\" file=\"" << xml_escape(o.report.path, true) << "\">\n";
  std::string text;
  const Finding *first = nullptr;
  for (const Finding &f : o.findings) {
    if (f.test != test) continue;
    if (f.status == Status::kFail && !first) first = &f;
    if (f.status == Status::kFail || listed(f)) text += std::string(listed_status(f)) + " " + finding_line(f) + "\n";
  }
  if (first)
    x << "      <failure type=\"" << xml_escape(kind_name(first->kind), true) << "\" message=\""
      << xml_escape(finding_line(*first), true) << "\">" << xml_escape(text) << "</failure>\n";
  else if (!text.empty())
    x << "      <system-out>" << xml_escape(text) << "</system-out>\n";
  x << "    </testcase>\n";
}

}  // namespace

std::string write_junit(const std::vector<ReportOutcome> &outcomes) {
  size_t failures = 0, tests = outcomes.size();
  for (const ReportOutcome &o : outcomes) {
    failures += test_failed(o, "") ? 1 : 0;
    for (const std::string &t : tests_of(o.report)) ++tests, failures += test_failed(o, t) ? 1 : 0;
  }
  std::ostringstream x;
  const std::string counts =
      " tests=\"" + std::to_string(tests) + "\" failures=\"" + std::to_string(failures) + "\" errors=\"0\"";
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x << "<testsuites name=\"gpuleak check\"" << counts << ">\n";
  x << "  <testsuite name=\"gpuleak check\"" << counts << " skipped=\"0\">\n";
  const std::vector<std::string> names = junit_test_names(outcomes);
  for (size_t i = 0; i < outcomes.size(); ++i) {
    const ReportOutcome &o = outcomes[i];
    x << "    <testcase classname=\"gpuleak.check\" name=\"" << xml_escape(names[i], true) << "\" file=\""
      << xml_escape(o.report.path, true) << "\">\n";
    std::string fail_text, other_text;
    const Finding *first = nullptr;
    size_t in_tests = 0;
    for (const Finding &f : o.findings) {
      if (!f.test.empty()) {  // its test's case has it
        in_tests += f.status == Status::kFail ? 1 : 0;
        continue;
      }
      std::string line = std::string(listed_status(f)) + " " + finding_line(f) + "\n";
      for (const std::string &d : f.details) line += "    " + d + "\n";
      if (f.status == Status::kFail) {
        if (!first) first = &f;
        fail_text += line;
      } else if (listed(f)) {
        other_text += line;
      }
    }
    if (first) {
      x << "      <failure type=\"" << xml_escape(kind_name(first->kind), true) << "\" message=\""
        << xml_escape(finding_line(*first), true) << "\">" << xml_escape(fail_text) << "</failure>\n";
    }
    // The pid stays in the output text, where it helps and does not split the test's history.
    std::string out = "report " + o.report.path + " (" + o.report.display_name() + "): verdict " + o.report.verdict +
                      "\n" + other_text;
    if (in_tests > 0) out += std::to_string(in_tests) + " failing finding(s) in the test cases below\n";
    x << "      <system-out>" << xml_escape(out) << "</system-out>\n";
    x << "    </testcase>\n";
    for (const std::string &t : tests_of(o.report)) write_test_case(x, o, names[i], t);
  }
  x << "  </testsuite>\n</testsuites>\n";
  return x.str();
}

}  // namespace gpuleak::gate
