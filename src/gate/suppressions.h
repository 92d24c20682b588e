// Suppressions: known findings that must not fail the gate, in LeakSanitizer's style, each with
// the reason it is accepted. A suppressed finding is still listed (as suppressed), never hidden.
//
// Text file, one rule a line, `#` starts a comment:
//
//   leak:cache_activation          # the activation cache is freed at shutdown, by design
//   file:third_party/*             # vendored code, tracked upstream in issue 123
//   module:libcudnn*.so*           # cuDNN's workspace
//   site:5f3c9a1e2b7d4410          # one site by its stable id
//
// - `leak:P` matches when any frame's function, file or module matches P (as LSan's leak:);
//   `file:P` only files, `module:P` only module basenames, `site:ID` a site_id exactly.
// - P is an LSan template: `*` matches any run of characters, and P matches anywhere in the
//   string unless it starts with `^` (anchored at the start) or ends with `$` (at the end).
// - Every rule needs its reason: a `# ...` comment on the same line. A rule without one, an
//   unknown type or an empty pattern is an error (GateError naming FILE:LINE).
//
// In a JSON config file the same rules are objects: {"leak": "cache_*", "reason": "..."}.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gate/report_view.h"

namespace gpuleak::gate {

struct Suppression {
  enum class Type { kLeak, kFile, kModule, kSite };
  Type type = Type::kLeak;
  std::string pattern;
  std::string reason;
  std::string origin;        // "FILE:LINE" (or "CONFIG: suppressions[N]"), for messages
  std::string text() const;  // "leak:pattern"
};

class Suppressions {
 public:
  void add(Suppression rule) { rules_.push_back(std::move(rule)); }
  // Appends the rules of a suppressions text file; `path` names it in errors.
  void parse_text(const std::string &text, const std::string &path);
  void load_file(const std::string &path);
  // Appends rules from a JSON array of {"leak"|"file"|"module"|"site": P, "reason": R}.
  void parse_json(const nlohmann::json &rules, const std::string &origin);

  // The first rule matching the site, or nullptr. Counts the use.
  const Suppression *match(const Stack &stack, const std::string &site_id);

  const std::vector<Suppression> &rules() const { return rules_; }
  // How many findings each rule (same order as rules()) suppressed so far.
  const std::vector<size_t> &uses() const { return uses_; }
  bool empty() const { return rules_.empty(); }

 private:
  std::vector<Suppression> rules_;
  std::vector<size_t> uses_;
};

// "leak:P", "file:P", "module:P" or "site:ID" without its reason (also used by per-site budgets).
// Throws GateError naming `where`.
Suppression parse_rule(const std::string &text, const std::string &where);
// Whether `rule` matches a call site (its frames, or its id for site:).
bool rule_matches(const Suppression &rule, const Stack &stack, const std::string &site_id);

// LSan template matching (above): `*` wildcard, `^`/`$` anchors, else substring. Exposed for tests.
bool template_match(const std::string &pattern, const std::string &text);

}  // namespace gpuleak::gate
