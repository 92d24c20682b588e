// What the gate allows: budgets, the warm-up, the baseline tolerance and suppressions, from a
// checked-in JSON config file and the command line (flags win). docs/ci.md documents the keys:
//
//   {
//     "max_leak_per_iteration": "0",            every leaking site (default 0: any leak fails)
//     "sites": [ {"match": "leak:cache_*", "max_leak_per_iteration": "2 MiB", "reason": "..."} ],
//     "loops": [ {"match": "test_serve.py::*", "max_leak_per_iteration": "1 MiB", "reason": "..."} ],
//     "max_growth": "1 MiB",                    per iteration, devices whose verdict is growth
//     "max_peak": "70 GiB" | {"0": "70 GiB", "1": "20 GiB"},
//     "min_oom_horizon": 1000,                  iterations
//     "warmup": 2,                              iterations
//     "fail_on_inconclusive": false,
//     "baseline": "ci/base.report.json",        relative to the config file
//     "tolerance": "5%",
//     "suppressions": "ci/gpuleak.supp" | [ {"leak": "pattern", "reason": "..."} ]
//   }
//
// Unknown keys are an error, so a typo never silently loosens the gate.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gate/suppressions.h"

namespace gpuleak::gate {

// A per-site leak budget: the first rule whose matcher matches a site gives its budget.
struct SiteBudget {
  Suppression match;  // type and pattern (reason optional here)
  uint64_t max_leak_per_iteration = 0;
};

// A per-loop or per-test leak budget (issue #33): `pattern` (`*` any run of characters, else
// exact) is matched against a loop's test ("test_a.py::test_b"), its function, its name and its
// location (FILE:LINE of the loop's head, the file's base name); the first rule that matches a
// loop gives the budget of its leaks (a per-site rule that matches a site wins over it).
struct LoopBudget {
  std::string pattern;
  uint64_t max_leak_per_iteration = 0;
};
// Whether `pattern` matches one of the loop's names above.
bool loop_rule_matches(const std::string &pattern, const Loop &loop);

struct Budgets {
  uint64_t max_leak_per_iteration = 0;  // bytes per iteration, each leaking site
  std::vector<SiteBudget> sites;
  std::vector<LoopBudget> loops;     // per loop or test, first match wins
  uint64_t max_growth = 0;           // bytes per iteration, a device whose verdict is growth
  std::optional<uint64_t> max_peak;  // every device
  std::map<int, uint64_t> max_peak_by_device;
  std::optional<uint64_t> min_oom_horizon;  // iterations
  int64_t warmup = 0;                       // iterations
  double tolerance = 0.05;                  // baseline regressions
  bool fail_on_inconclusive = false;

  uint64_t leak_budget_for(const Stack &stack, const std::string &site_id, const SiteBudget **rule) const;
  std::optional<uint64_t> peak_budget_for(int device) const;
  // The first loop rule matching `loop` (nullptr: none, or no loop).
  const LoopBudget *loop_budget_for(const Loop *loop) const;
};

// "PATTERN=SIZE" as --loop-budget takes it ("test_train.py::test_eval=2 MiB", "*eval*=0").
// Throws GateError naming `what`.
void apply_loop_budget(const std::string &value, const std::string &what, Budgets *budgets);

// Everything `gpuleak check` weighs a report against.
struct GateConfig {
  Budgets budgets;
  Suppressions suppressions;
  std::vector<std::string> baselines;  // report paths
};

// Applies a JSON config file to `config` (keys it does not set keep their values). Paths in it
// are relative to the file's folder. Throws GateError for a bad file, key or value.
void load_config_file(const std::string &path, GateConfig *config);

// "2GiB" (every device) or "DEVICE=SIZE" ("1=4GiB"), as --max-peak takes them.
void apply_max_peak(const std::string &value, const std::string &what, Budgets *budgets);

}  // namespace gpuleak::gate
