// GitHub Actions output (writers.h): workflow-command annotations, which GitHub shows on the
// run's page and beside the source line, and a Markdown step summary.
#include <algorithm>

#include "format/words.h"
#include "gate/sizes.h"
#include "gate/writers.h"
#include "text/escape.h"

namespace gpuleak::gate {

using text::github_escape_data;
using text::github_escape_property;
using text::markdown_escape;

namespace {

// Annotations attach to a file of the repository only when the path is relative to its root.
std::string repo_relative(const std::string &file, const std::string &workspace) {
  if (workspace.empty()) return file;
  std::string root = workspace.back() == '/' ? workspace : workspace + "/";
  return file.rfind(root, 0) == 0 ? file.substr(root.size()) : file;
}

const char *icon(Status s) {
  switch (s) {
    case Status::kFail:
      return "\xE2\x9D\x8C";  // cross mark
    case Status::kWarn:
      return "\xE2\x9A\xA0\xEF\xB8\x8F";  // warning sign
    case Status::kSuppressed:
      return "\xF0\x9F\x94\x87";  // muted speaker
    case Status::kIgnored:
      return "\xE2\x8F\xAD\xEF\xB8\x8F";  // next track
    case Status::kPass:
      return "\xE2\x9C\x85";  // check mark
  }
  return "";
}

// A user line's sites, on the annotation's following lines.
std::string sites_text(const Finding &f) {
  std::string out;
  for (const std::string &d : f.details) out += "\n  " + d;
  return out;
}

}  // namespace

std::string write_github_annotations(const std::vector<ReportOutcome> &outcomes, const WriteOptions &options) {
  std::string out;
  for (const ReportOutcome &o : outcomes) {
    for (const Finding &f : o.findings) {
      if (f.status != Status::kFail && f.status != Status::kWarn) continue;
      std::string props;
      if (f.file) {
        props += "file=" + github_escape_property(repo_relative(*f.file, options.workspace));
        if (f.line) props += ",line=" + std::to_string(*f.line);
        props += ",";
      }
      props += "title=" +
               github_escape_property(std::string("gpuleak ") + kind_name(f.kind) + " in " + o.report.display_name());
      out += std::string(f.status == Status::kFail ? "::error " : "::warning ") + props +
             "::" + github_escape_data(f.message + (f.note.empty() ? "" : " -- " + f.note) + sites_text(f)) + "\n";
    }
  }
  return out;
}

std::string write_markdown(const std::vector<ReportOutcome> &outcomes) {
  size_t failed = 0;
  for (const ReportOutcome &o : outcomes) failed += o.failed() ? 1 : 0;
  std::string md = "## gpuleak check: ";
  md += failed ? std::string(icon(Status::kFail)) + " " + std::to_string(failed) + " of " +
                     format::count_of(outcomes.size(), "report") + " failed\n\n"
               : std::string(icon(Status::kPass)) + " " + format::count_of(outcomes.size(), "report") +
                     " within budget\n\n";
  md += "| report | verdict | result | peak | failures | warnings | suppressed |\n";
  md += "|---|---|---|---|---|---|---|\n";
  for (const ReportOutcome &o : outcomes) {
    uint64_t peak = 0;
    for (const Device &d : o.report.devices) peak = std::max(peak, d.peak_live_bytes);
    md += "| " + markdown_escape(o.report.display_name()) + " | " + markdown_escape(o.report.verdict) + " | " +
          icon(o.failed() ? Status::kFail : Status::kPass) + (o.failed() ? " fail" : " pass") + " | " +
          format_size(static_cast<double>(peak)) + " | " + std::to_string(o.count(Status::kFail)) + " | " +
          std::to_string(o.count(Status::kWarn)) + " | " + std::to_string(o.count(Status::kSuppressed)) + " |\n";
  }
  for (const ReportOutcome &o : outcomes) {
    bool any = false;
    for (const Finding &f : o.findings) any = any || listed(f);
    if (!any) continue;
    md += "\n### " + markdown_escape(o.report.display_name()) + "\n\n";
    md += "Report: " + markdown_escape(o.report.path) + "\n\n";
    for (const Finding &f : o.findings) {
      if (!listed(f)) continue;
      md += std::string("- ") + icon(f.status) + " **" + markdown_escape(kind_name(f.kind)) + "** (" +
            listed_status(f) + "): " + markdown_escape(f.message);
      if (!f.note.empty()) md += " &mdash; " + markdown_escape(f.note);
      md += "\n";
      for (const std::string &d : f.details) md += "  - " + markdown_escape(d) + "\n";
    }
  }
  return md;
}

}  // namespace gpuleak::gate
