// Parsing and printing of byte counts (sizes.h). Kept apart so that the config file, the command
// line and every writer agree on what "1 MiB" means.
#include "gate/sizes.h"

#include <cctype>
#include <cmath>
#include <cstdio>

#include "gate/report_view.h"

namespace gpuleak::gate {

const char *const kSizeUnits =
    "units: B; KiB, MiB, GiB, TiB (or K, M, G, T) are 1024-based; KB, MB, GB, TB are 1000-based; "
    "e.g. 512KiB, \"1 MiB\", 2GB, unlimited";

namespace {

std::string lower_trimmed(const std::string &text) {
  size_t b = text.find_first_not_of(" \t");
  size_t e = text.find_last_not_of(" \t");
  if (b == std::string::npos) return "";
  std::string s = text.substr(b, e - b + 1);
  for (char &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Splits "1.5 mib" into 1.5 and "mib". False when there is no number first.
bool split_number(const std::string &s, double *value, std::string *rest) {
  size_t i = 0;
  bool digits = false;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, digits = true;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, digits = true;
  }
  if (!digits) return false;
  *value = std::strtod(s.substr(0, i).c_str(), nullptr);
  size_t j = s.find_first_not_of(" \t", i);
  *rest = j == std::string::npos ? "" : s.substr(j);
  return true;
}

}  // namespace

uint64_t parse_size(const std::string &text, const std::string &what) {
  const std::string bad = what + ": bad size \"" + text + "\" (" + kSizeUnits + ")";
  std::string s = lower_trimmed(text);
  if (s == "unlimited") return kUnlimited;
  double value = 0;
  std::string unit;
  if (!split_number(s, &value, &unit)) throw GateError(bad);
  // Units are read in any case but one: a prefix followed by a lowercase b ("1Mb", "8 Gib") is a
  // bit count in networking, and reading it as bytes would be off by eight. Said, not guessed.
  std::string raw_unit;
  split_number(text.substr(text.find_first_not_of(" \t")), &value, &raw_unit);
  raw_unit = raw_unit.substr(0, raw_unit.find_last_not_of(" \t") + 1);
  if (raw_unit.size() >= 2 && raw_unit.back() == 'b') {
    std::string bytes(1, static_cast<char>(std::toupper(static_cast<unsigned char>(raw_unit[0]))));
    bytes += raw_unit.size() == 3 ? "iB" : "B";
    throw GateError(what + ": bad size \"" + text + "\": a lowercase b is bits; for bytes write " + bytes + " (" +
                    kSizeUnits + ")");
  }
  static const struct {
    const char *name;
    double factor;
  } kUnits[] = {{"", 1},
                {"b", 1},
                {"k", 1024.0},
                {"kib", 1024.0},
                {"kb", 1e3},
                {"m", 1048576.0},
                {"mib", 1048576.0},
                {"mb", 1e6},
                {"g", 1073741824.0},
                {"gib", 1073741824.0},
                {"gb", 1e9},
                {"t", 1099511627776.0},
                {"tib", 1099511627776.0},
                {"tb", 1e12}};
  for (const auto &u : kUnits) {
    if (unit != u.name) continue;
    double bytes = std::round(value * u.factor);
    if (!(bytes < 1.8e19)) throw GateError(bad);
    return static_cast<uint64_t>(bytes);
  }
  throw GateError(bad);
}

double parse_percent(const std::string &text, const std::string &what) {
  std::string s = lower_trimmed(text);
  if (!s.empty() && s.back() == '%') s = lower_trimmed(s.substr(0, s.size() - 1));
  double value = 0;
  std::string rest;
  if (!split_number(s, &value, &rest) || !rest.empty())
    throw GateError(what + ": bad percentage \"" + text + "\" (examples: 5%, 0.5%)");
  return value / 100.0;
}

std::string format_size(double bytes) {
  if (bytes >= static_cast<double>(kUnlimited)) return "unlimited";
  static const char *kNames[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = std::fabs(bytes);
  int unit = 0;
  while (v >= 1024.0 && unit < 5) v /= 1024.0, ++unit;
  char buf[64];
  if (unit == 0) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f", v);
    std::string t = buf;
    while (t.back() == '0') t.pop_back();
    if (t.back() == '.') t.pop_back();
    std::snprintf(buf, sizeof buf, "%s", t.c_str());
  }
  return std::string(bytes < 0 && std::string(buf) != "0" ? "-" : "") + buf + " " + kNames[unit];
}

}  // namespace gpuleak::gate
