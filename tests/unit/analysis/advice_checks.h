// What the advice tests read of the findings: a named number of a finding's evidence or saving
// (a test failure when it is missing), and every finding as one line, for failure messages.
#pragma once

#include <gtest/gtest.h>

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

}  // namespace gpuleak::analysis::checks
