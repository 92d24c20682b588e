// Plain-text verdict (writers.h): what a person reads in a terminal or a CI log.
#include <algorithm>

#include "format/words.h"
#include "text/escape.h"

#include "gate/writers.h"

namespace gpuleak::gate {

using text::printable;

bool listed(const Finding &f) {
  return f.status != Status::kPass || f.kind == Kind::kLeak || f.kind == Kind::kGrowth || f.kind == Kind::kGone;
}

const char *listed_status(const Finding &f) {
  if (f.status == Status::kPass && f.kind == Kind::kGone) return "ok";
  return f.status == Status::kPass ? "within budget" : status_name(f.status);
}

std::string finding_line(const Finding &f) {
  std::string s = std::string(kind_name(f.kind)) + ": " + f.message;
  if (!f.note.empty()) s += " -- " + f.note;
  return s;
}

std::string write_plain(const std::vector<ReportOutcome> &outcomes, const Suppressions &suppressions,
                        const WriteOptions &options) {
  std::string out;
  size_t failed = 0, failures = 0, warnings = 0, suppressed = 0;
  for (const ReportOutcome &o : outcomes) {
    failed += o.failed() ? 1 : 0;
    failures += o.count(Status::kFail);
    warnings += o.count(Status::kWarn);
    suppressed += o.count(Status::kSuppressed);
    out += printable(std::string(o.failed() ? "FAIL " : "ok   ") + o.report.display_name() + ": verdict " +
                     o.report.verdict + " (" + o.report.path +
                     (o.baseline_path.empty() ? "" : ", baseline " + o.baseline_path) + ")") +
           "\n";
    size_t shown = 0, hidden = 0;
    for (const Finding &f : o.findings) {
      if (!listed(f)) continue;
      if (shown == options.max_findings_per_report) {
        ++hidden;
        continue;
      }
      ++shown;
      out += "  " + std::string(listed_status(f)) + " " + printable(finding_line(f)) + "\n";
      for (const std::string &d : f.details) out += "      " + printable(d) + "\n";
    }
    if (hidden) out += "  ... and " + std::to_string(hidden) + " more (write them all with --junit FILE)\n";
  }
  const auto &uses = suppressions.uses();
  for (size_t i = 0; i < suppressions.rules().size(); ++i) {
    if (i < uses.size() && uses[i] > 0) continue;
    const Suppression &s = suppressions.rules()[i];
    out += printable("note: suppression " + s.text() + " (" + s.origin + ") matched nothing") + "\n";
  }
  using format::count_of;
  out += "gpuleak check: " + std::to_string(failed) + " of " + count_of(outcomes.size(), "report") + " failed (" +
         count_of(failures, "failure") + ", " + count_of(warnings, "warning") + ", " + std::to_string(suppressed) +
         " suppressed)\n";
  return out;
}

}  // namespace gpuleak::gate
