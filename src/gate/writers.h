// What `gpuleak check` writes: plain text for a terminal or a CI log, JUnit XML (one testcase per
// report), GitHub Actions annotations and a Markdown step summary. Each renders the findings
// evaluate() made and decides nothing; untrusted text is escaped for its format (escape.h).
#pragma once

#include <string>
#include <vector>

#include "gate/evaluate.h"
#include "gate/suppressions.h"

namespace gpuleak::gate {

struct WriteOptions {
  size_t max_findings_per_report = 8;  // plain text: keep the verdict within one screenful
  std::string workspace;               // GitHub: file paths under it are made relative to it
};

// Plain text: one line per report, its failures and warnings (suppressed and ignored findings
// too, marked), a total line, and suppression rules that matched nothing.
std::string write_plain(const std::vector<ReportOutcome> &outcomes, const Suppressions &suppressions,
                        const WriteOptions &options);

// The JUnit testcase name of each report, in order: the same from run to run, so CI keeps one
// history per test. "program" or "program (rank R)"; no pid. When two reports would share a
// name, each gets its report file's name with the pid part removed ("[train.report.json]") when
// that tells it apart, else its position among the reports of that name ("#2").
std::vector<std::string> junit_test_names(const std::vector<ReportOutcome> &outcomes);

// JUnit XML: a testsuite "gpuleak check" with one testcase per report (named by junit_test_names); a failing report has
// a <failure> whose message is its first failure and whose text lists all of them; warnings, suppressed and ignored
// findings go to <system-out>.
std::string write_junit(const std::vector<ReportOutcome> &outcomes);

// GitHub Actions workflow commands: ::error for failures, ::warning for warnings, each with
// file= and line= when the finding has a source location.
std::string write_github_annotations(const std::vector<ReportOutcome> &outcomes, const WriteOptions &options);

// A Markdown summary (for $GITHUB_STEP_SUMMARY or a merge-request comment).
std::string write_markdown(const std::vector<ReportOutcome> &outcomes);

// Whether the writers list a finding: every one but a pass, and a pass that explains the verdict
// too (a leak or growth within its budget), so that a report with verdict "leak" that passes
// still names its leak.
bool listed(const Finding &f);
// "within budget" for a listed pass, else status_name().
const char *listed_status(const Finding &f);

// The one-line headline of a finding: "leak: <message>" (plus " -- <note>" when it has one).
std::string finding_line(const Finding &f);

}  // namespace gpuleak::gate
