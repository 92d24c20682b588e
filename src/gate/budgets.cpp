// Budgets and the JSON config file (budgets.h).
#include "gate/budgets.h"

#include <cctype>

#include "gate/sizes.h"
#include "text/paths.h"

namespace gpuleak::gate {

namespace {

using nlohmann::json;

// The path's folder with its trailing slash ("" for a bare file name).
std::string folder_of(const std::string &path) { return path.substr(0, path.size() - text::basename_of(path).size()); }

std::string relative_to(const std::string &folder, const std::string &path) {
  return path.empty() || path[0] == '/' ? path : folder + path;
}

// A size may be written as a JSON string ("1 MiB") or a number of bytes.
uint64_t size_value(const json &v, const std::string &what) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_string()) return parse_size(v.get<std::string>(), what);
  throw GateError(what + " is not a size (a string like \"1 MiB\" or a number of bytes)");
}

int64_t count_value(const json &v, const std::string &what) {
  if (!v.is_number_unsigned()) throw GateError(what + " is not a non-negative integer");
  return static_cast<int64_t>(v.get<uint64_t>());
}

int device_index(const std::string &text, const std::string &what) {
  if (text.empty() || text.size() > 4 || text.find_first_not_of("0123456789") != std::string::npos)
    throw GateError(what + ": bad device index \"" + text + "\"");
  return std::stoi(text);
}

}  // namespace

uint64_t Budgets::leak_budget_for(const Stack &stack, const std::string &site_id, const SiteBudget **rule) const {
  for (const SiteBudget &s : sites) {
    if (rule_matches(s.match, stack, site_id)) {
      if (rule) *rule = &s;
      return s.max_leak_per_iteration;
    }
  }
  if (rule) *rule = nullptr;
  return max_leak_per_iteration;
}

namespace {

bool glob(const char *p, const char *t) {
  for (; *p; ++p, ++t) {
    if (*p == '*') {
      while (p[1] == '*') ++p;
      for (const char *u = t;; ++u) {
        if (glob(p + 1, u)) return true;
        if (!*u) return false;
      }
    }
    if (!*t || *p != *t) return false;
  }
  return !*t;
}

}  // namespace

bool loop_rule_matches(const std::string &pattern, const Loop &loop) {
  for (const std::optional<std::string> &name :
       {loop.test, loop.function, std::optional<std::string>(loop.name), std::optional<std::string>(loop.location())})
    if (name && glob(pattern.c_str(), name->c_str())) return true;
  return false;
}

const LoopBudget *Budgets::loop_budget_for(const Loop *loop) const {
  if (!loop) return nullptr;
  for (const LoopBudget &l : loops)
    if (loop_rule_matches(l.pattern, *loop)) return &l;
  return nullptr;
}

void apply_loop_budget(const std::string &value, const std::string &what, Budgets *budgets) {
  const size_t eq = value.rfind('=');
  if (eq == std::string::npos || eq == 0)
    throw GateError(what +
                    ": expected PATTERN=SIZE (a test, function, loop name or FILE:LINE; * matches any text), "
                    "got \"" +
                    value + "\"");
  budgets->loops.push_back({value.substr(0, eq), parse_size(value.substr(eq + 1), what)});
}

std::optional<uint64_t> Budgets::peak_budget_for(int device) const {
  auto it = max_peak_by_device.find(device);
  if (it != max_peak_by_device.end()) return it->second;
  return max_peak;
}

void apply_max_peak(const std::string &value, const std::string &what, Budgets *budgets) {
  size_t eq = value.find('=');
  if (eq == std::string::npos) {
    budgets->max_peak = parse_size(value, what);
    return;
  }
  int device = device_index(value.substr(0, eq), what);
  budgets->max_peak_by_device[device] = parse_size(value.substr(eq + 1), what);
}

void load_config_file(const std::string &path, GateConfig *config) {
  json doc = parse_json_text(read_text_file(path), path);
  if (!doc.is_object()) throw GateError(path + ": a gpuleak check config is a JSON object");
  const std::string folder = folder_of(path);
  Budgets &b = config->budgets;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string &key = it.key();
    const json &v = *it;
    const std::string what = path + ": " + key;
    if (key == "max_leak_per_iteration") {
      b.max_leak_per_iteration = size_value(v, what);
    } else if (key == "max_growth") {
      b.max_growth = size_value(v, what);
    } else if (key == "max_peak") {
      if (v.is_object()) {
        for (auto d = v.begin(); d != v.end(); ++d) {
          if (d.key() == "all")
            b.max_peak = size_value(*d, what + ".all");
          else
            b.max_peak_by_device[device_index(d.key(), what)] = size_value(*d, what + "." + d.key());
        }
      } else {
        b.max_peak = size_value(v, what);
      }
    } else if (key == "min_oom_horizon") {
      b.min_oom_horizon = static_cast<uint64_t>(count_value(v, what));
    } else if (key == "warmup") {
      b.warmup = count_value(v, what);
    } else if (key == "fail_on_inconclusive") {
      if (!v.is_boolean()) throw GateError(what + " is not true or false");
      b.fail_on_inconclusive = v.get<bool>();
    } else if (key == "tolerance") {
      if (v.is_number())
        b.tolerance = v.get<double>() / 100.0;
      else if (v.is_string())
        b.tolerance = parse_percent(v.get<std::string>(), what);
      else
        throw GateError(what + " is not a percentage (\"5%\")");
      if (b.tolerance < 0) throw GateError(what + " is negative");
    } else if (key == "baseline") {
      if (v.is_string()) {
        config->baselines.push_back(relative_to(folder, v.get<std::string>()));
      } else if (v.is_array()) {
        for (const json &p : v) {
          if (!p.is_string()) throw GateError(what + " is not a path or a list of paths");
          config->baselines.push_back(relative_to(folder, p.get<std::string>()));
        }
      } else {
        throw GateError(what + " is not a path or a list of paths");
      }
    } else if (key == "suppressions") {
      if (v.is_string())
        config->suppressions.load_file(relative_to(folder, v.get<std::string>()));
      else
        config->suppressions.parse_json(v, what);
    } else if (key == "sites") {
      if (!v.is_array()) throw GateError(what + " is not an array");
      for (size_t i = 0; i < v.size(); ++i) {
        const std::string w = what + "[" + std::to_string(i) + "]";
        const json &s = v[i];
        if (!s.is_object() || !s.contains("match") || !s["match"].is_string())
          throw GateError(w + " needs \"match\": \"leak:PATTERN\" (or file:, module:, site:)");
        SiteBudget sb;
        sb.match = parse_rule(s["match"].get<std::string>(), w);
        for (auto f = s.begin(); f != s.end(); ++f) {
          if (f.key() == "match") continue;
          if (f.key() == "max_leak_per_iteration")
            sb.max_leak_per_iteration = size_value(*f, w + ".max_leak_per_iteration");
          else if (f.key() == "reason" && f->is_string())
            sb.match.reason = f->get<std::string>();
          else
            throw GateError(w + ": unknown key \"" + f.key() + "\" (expected match, max_leak_per_iteration, reason)");
        }
        if (!s.contains("max_leak_per_iteration")) throw GateError(w + " needs \"max_leak_per_iteration\"");
        b.sites.push_back(std::move(sb));
      }
    } else if (key == "loops") {
      if (!v.is_array()) throw GateError(what + " is not an array");
      for (size_t i = 0; i < v.size(); ++i) {
        const std::string w = what + "[" + std::to_string(i) + "]";
        const json &l = v[i];
        if (!l.is_object() || !l.contains("match") || !l["match"].is_string() || l["match"].get<std::string>().empty())
          throw GateError(w + " needs \"match\": \"PATTERN\" (a test, function, loop name or FILE:LINE)");
        if (!l.contains("max_leak_per_iteration")) throw GateError(w + " needs \"max_leak_per_iteration\"");
        LoopBudget lb;
        lb.pattern = l["match"].get<std::string>();
        for (auto f = l.begin(); f != l.end(); ++f) {
          if (f.key() == "max_leak_per_iteration")
            lb.max_leak_per_iteration = size_value(*f, w + ".max_leak_per_iteration");
          else if (f.key() != "match" && !(f.key() == "reason" && f->is_string()))
            throw GateError(w + ": unknown key \"" + f.key() + "\" (expected match, max_leak_per_iteration, reason)");
        }
        b.loops.push_back(std::move(lb));
      }
    } else if (key == "$schema" || key == "comment") {
      // allowed for editors and humans
    } else {
      throw GateError(
          path + ": unknown key \"" + key +
          "\" (expected max_leak_per_iteration, sites, loops, max_growth, max_peak, min_oom_horizon, warmup, "
          "fail_on_inconclusive, baseline, tolerance, suppressions)");
    }
  }
}

}  // namespace gpuleak::gate
