// Suppression rules: parsing (text and JSON) and matching against a call site's frames.
#include "gate/suppressions.h"

namespace gpuleak::gate {

namespace {

std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

// Glob with `*` only (LSan has no `?`), over the whole of `text`. Iterative with one backtrack
// point: linear in practice, never exponential on hostile patterns.
bool glob_whole(const std::string &p, const std::string &t) {
  size_t pi = 0, ti = 0, star = std::string::npos, mark = 0;
  while (ti < t.size()) {
    if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = ti;
    } else if (pi < p.size() && p[pi] == t[ti]) {
      ++pi, ++ti;
    } else if (star != std::string::npos) {
      pi = star + 1;
      ti = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

bool parse_type(const std::string &name, Suppression::Type *type) {
  if (name == "leak")
    *type = Suppression::Type::kLeak;
  else if (name == "file")
    *type = Suppression::Type::kFile;
  else if (name == "module")
    *type = Suppression::Type::kModule;
  else if (name == "site")
    *type = Suppression::Type::kSite;
  else
    return false;
  return true;
}

const char *type_name(Suppression::Type t) {
  switch (t) {
    case Suppression::Type::kLeak:
      return "leak";
    case Suppression::Type::kFile:
      return "file";
    case Suppression::Type::kModule:
      return "module";
    case Suppression::Type::kSite:
      return "site";
  }
  return "leak";
}

bool frame_matches(const Suppression &rule, const Frame &f) {
  auto m = [&](const std::optional<std::string> &field) { return field && template_match(rule.pattern, *field); };
  switch (rule.type) {
    case Suppression::Type::kLeak:
      return m(f.function) || m(f.file) || m(f.module);
    case Suppression::Type::kFile:
      return m(f.file);
    case Suppression::Type::kModule:
      return m(f.module);
    case Suppression::Type::kSite:
      return false;
  }
  return false;
}

}  // namespace

bool template_match(const std::string &pattern, const std::string &text) {
  std::string p = pattern;
  bool at_start = !p.empty() && p.front() == '^';
  if (at_start) p.erase(0, 1);
  bool at_end = !p.empty() && p.back() == '$';
  if (at_end) p.pop_back();
  return glob_whole((at_start ? "" : "*") + p + (at_end ? "" : "*"), text);
}

Suppression parse_rule(const std::string &text, const std::string &where) {
  std::string rule = trim(text);
  size_t colon = rule.find(':');
  Suppression s;
  if (colon == std::string::npos || !parse_type(trim(rule.substr(0, colon)), &s.type))
    throw GateError(where + ": unknown rule \"" + rule + "\" (expected leak:, file:, module: or site:)");
  s.pattern = trim(rule.substr(colon + 1));
  if (s.pattern.empty()) throw GateError(where + ": empty pattern in \"" + rule + "\"");
  s.origin = where;
  return s;
}

bool rule_matches(const Suppression &rule, const Stack &stack, const std::string &site_id) {
  if (rule.type == Suppression::Type::kSite) return rule.pattern == site_id;
  if (stack.headline && frame_matches(rule, *stack.headline)) return true;
  for (const Frame &f : stack.frames)
    if (frame_matches(rule, f)) return true;
  return false;
}

std::string Suppression::text() const { return std::string(type_name(type)) + ":" + pattern; }

void Suppressions::parse_text(const std::string &text, const std::string &path) {
  size_t start = 0;
  for (int line_no = 1; start <= text.size(); ++line_no) {
    size_t nl = text.find('\n', start);
    std::string line = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    start = nl == std::string::npos ? text.size() + 1 : nl + 1;
    const std::string where = path + ":" + std::to_string(line_no);

    size_t hash = line.find('#');
    std::string rule = trim(line.substr(0, hash));
    if (rule.empty()) continue;  // blank or comment-only
    std::string reason = hash == std::string::npos ? "" : trim(line.substr(hash + 1));
    Suppression s = parse_rule(rule, where);
    if (reason.empty())
      throw GateError(where + ": suppression \"" + rule + "\" has no reason (add \"# why\" after it)");
    s.reason = reason;
    s.origin = where;
    add(std::move(s));
  }
}

void Suppressions::load_file(const std::string &path) { parse_text(read_text_file(path), path); }

void Suppressions::parse_json(const nlohmann::json &rules, const std::string &origin) {
  if (!rules.is_array()) throw GateError(origin + " is not an array of {\"leak\": PATTERN, \"reason\": WHY}");
  for (size_t i = 0; i < rules.size(); ++i) {
    const std::string where = origin + "[" + std::to_string(i) + "]";
    const nlohmann::json &r = rules[i];
    if (!r.is_object()) throw GateError(where + " is not an object");
    Suppression s;
    bool typed = false;
    for (auto it = r.begin(); it != r.end(); ++it) {
      if (it.key() == "reason") {
        if (!it->is_string()) throw GateError(where + ".reason is not a string");
        s.reason = trim(it->get<std::string>());
      } else if (parse_type(it.key(), &s.type)) {
        if (typed) throw GateError(where + " has more than one of leak, file, module, site");
        if (!it->is_string()) throw GateError(where + "." + it.key() + " is not a string");
        s.pattern = trim(it->get<std::string>());
        typed = true;
      } else {
        throw GateError(where + ": unknown key \"" + it.key() + "\" (expected leak, file, module, site, reason)");
      }
    }
    if (!typed || s.pattern.empty()) throw GateError(where + " has no pattern (leak, file, module or site)");
    if (s.reason.empty()) throw GateError(where + " (" + s.text() + ") has no \"reason\"");
    s.origin = where;
    add(std::move(s));
  }
}

const Suppression *Suppressions::match(const Stack &stack, const std::string &site_id) {
  uses_.resize(rules_.size(), 0);
  for (size_t i = 0; i < rules_.size(); ++i) {
    const Suppression &rule = rules_[i];
    bool hit = rule_matches(rule, stack, site_id);
    if (hit) {
      ++uses_[i];
      return &rule;
    }
  }
  return nullptr;
}

}  // namespace gpuleak::gate
