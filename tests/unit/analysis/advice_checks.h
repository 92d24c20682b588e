// What the advice tests read of the findings: a named number of a finding's evidence or saving
// (a test failure when it is missing), and every finding as one line, for failure messages.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "analysis/analysis.h"

namespace gpuleak::analysis::checks {

inline double named(const std::vector<AdviceNumber> &numbers, const std::string &name, const char *what) {
  for (const AdviceNumber &e : numbers)
    if (e.name == name) return e.value;
  ADD_FAILURE() << "no " << what << " " << name;
  return -1;
}
inline double evidence(const Advice &a, const std::string &name) { return named(a.evidence, name, "evidence"); }
inline double saving(const Advice &a, const std::string &name) { return named(a.saving, name, "saving"); }

inline std::string kinds(const Analysis &a) {
  std::string s;
  for (const Advice &x : a.advice) s += std::string(advice_kind_name(x.kind)) + ": " + x.message + "\n";
  return s;
}

// A size or a duration as advice_text.cpp writes it ("72.0 MiB", "217.0 us"), in bytes or ns.
inline double quantity(const std::string &value, const std::string &unit) {
  static const std::vector<std::pair<std::string, double>> units = {
      {"B", 1},    {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}, {"ns", 1},
      {"us", 1e3}, {"ms", 1e6},     {"s", 1e9}};
  for (const auto &[name, scale] : units)
    if (name == unit) return std::stod(value) * scale;
  ADD_FAILURE() << "unknown unit " << unit;
  return 0;
}

// Issue #17: advice that contradicted its own numbers ("100 % of the median iteration (217.0 us
// of 73.7 us)", "no single site dominating" above a site holding 98 %). Every share a finding
// prints is at most 100 % and agrees with the two numbers it is a share of, and a finding whose
// own table has one site holding most of the peak does not say that no site dominates.
inline void expect_consistent(const Advice &a) {
  SCOPED_TRACE(a.message);
  static const std::regex any_share(R"((\d+) %)");
  for (std::sregex_iterator m(a.message.begin(), a.message.end(), any_share), end; m != end; ++m)
    EXPECT_LE(std::stoi((*m)[1]), 100);
  static const std::regex of_iteration(
      R"((\d+) % of the median iteration \(([\d.]+) (ns|us|ms|s) of ([\d.]+) (ns|us|ms|s)\))");
  std::smatch m;
  if (std::regex_search(a.message, m, of_iteration)) {
    double part = quantity(m[2], m[3]), whole = quantity(m[4], m[5]);
    EXPECT_LE(part, whole);
    EXPECT_NEAR(std::stoi(m[1]), 100 * part / whole, 1.5);
  }
  static const std::regex peak(R"(At the loop's peak \(([\d.]+) (B|KiB|MiB|GiB))");
  static const std::regex holds(R"(holds (\d+) % of it \(([\d.]+) (B|KiB|MiB|GiB))");
  std::smatch p, h;
  if (std::regex_search(a.message, p, peak) && std::regex_search(a.message, h, holds)) {
    double whole = quantity(p[1], p[2]), part = quantity(h[2], h[3]);
    EXPECT_LE(part, whole);
    EXPECT_NEAR(std::stoi(h[1]), 100 * part / whole, 1.5);
  }
  if (!a.sites.empty() && a.kind == AdviceKind::kPeakComposition) {
    double peak_bytes = 0;
    for (const AdviceNumber &e : a.evidence)
      if (e.name == "peak_bytes") peak_bytes = e.value;
    if (static_cast<double>(a.sites.front().bytes) >= 0.5 * peak_bytes) {
      EXPECT_EQ(a.message.find("no single site"), std::string::npos);
    }
  }
}

}  // namespace gpuleak::analysis::checks
