// Budgets, suppressions and warm-up applied to one report's findings (evaluate.h). The gate never
// re-decides what a leak is: leaks, growth, forecasts and OOMs are the analysis's; the gate only
// compares their numbers with budgets and with a baseline.
#include "gate/evaluate.h"

#include <algorithm>
#include <cmath>

#include "format/words.h"
#include "gate/pairing.h"
#include "gate/sizes.h"

namespace gpuleak::gate {

namespace {

std::string rate(double bytes_per_iteration) { return format_size(bytes_per_iteration) + "/iteration"; }

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", fraction * 100.0);
  return buf;
}

void locate(Finding *f, const Stack &stack) {
  if (const Frame *frame = stack.user_frame()) {
    f->file = frame->file;
    f->line = frame->line;
    f->function = frame->function;
  }
}

// With --warmup N, a leak first seen before iteration N whose live bytes did not grow after
// iteration N-1 is warm-up (lazy state created early). One that keeps growing is never ignored.
bool warmup_only(const Leak &leak, int64_t warmup) {
  if (warmup <= 0 || leak.first_iteration >= warmup) return false;
  const auto &lbi = leak.live_by_iteration;
  if (lbi.empty()) return true;  // no series to contradict "first seen before N"
  if (static_cast<int64_t>(lbi.size()) <= warmup) return true;
  return lbi.back() <= lbi[static_cast<size_t>(warmup - 1)];
}

// " in test_a.py::test_b, the loop at test_a.py:12 in test_b": said when the report has several
// loops or the loop ran in a test; "" otherwise (and for reports before 1.1).
std::string in_loop(const Report &r, const Loop *loop) {
  if (!loop || (r.loops.size() < 2 && !loop->test)) return "";
  return " in " + loop->describe();
}

// "; was 1 MiB/iteration at train.py:50 in train_step in the baseline (+40.0%, tolerance 5.0%)":
// the baseline's rate, and its line when it moved; "" when there is no pair.
std::string compared_with(const LeakGroup *then, const LinePair *pair, double bytes, const Budgets &budgets) {
  if (!then) return "";
  const bool moved = pair->by == PairedBy::kMoved || pair->by == PairedBy::kSite;
  std::string s =
      "; was " + rate(then->bytes_per_iteration) + (moved ? " at " + then->describe() : "") + " in the baseline";
  if (then->bytes_per_iteration > 0 && bytes != then->bytes_per_iteration)
    s += " (" + percent(bytes / then->bytes_per_iteration - 1.0) + ", tolerance " +
         percent(budgets.tolerance).substr(1) + ")";
  return s;
}

// A baseline line that pairs with none of the report's: fixed, or gone with the code around it.
Finding gone_finding(const Report &base, const LeakGroup &g) {
  Finding f;
  f.kind = Kind::kGone;
  f.status = Status::kPass;
  f.device = g.device;
  f.baseline = "gone";
  f.baseline_line = g.describe();
  const Leak &largest = base.leaks[g.sites[0]];
  f.site_id = largest.site_id;
  for (size_t k : g.sites) f.site_ids.push_back(base.leaks[k].site_id);
  const Loop *loop = base.loop_of(largest);
  if (loop && !in_loop(base, loop).empty()) f.loop = loop->name, f.test = loop->test.value_or("");
  f.message = g.describe() + " leaked " + rate(g.bytes_per_iteration) + " on device " + std::to_string(g.device) +
              in_loop(base, loop) + " in the baseline; no leaking line of this run pairs with it";
  return f;
}

// A finding about one site on its own (suppressed or warm-up), named by its own headline.
Finding site_finding(const Leak &leak) {
  Finding f;
  f.kind = Kind::kLeak;
  f.site_id = leak.site_id;
  f.site_ids = {leak.site_id};
  f.device = leak.device;
  locate(&f, leak.stack);
  f.message = leak.stack.describe() + " leaks " + rate(leak.bytes_per_iteration) + " on device " +
              std::to_string(leak.device) + " [site " + leak.site_id + "]";
  return f;
}

// One user line (a leak_groups entry) is one finding: its sites are judged together against the
// budget, and listed under it. A site a suppression names is taken out of the line and listed
// on its own as suppressed; so is a site that is only warm-up; sites a per-site budget rule names
// are judged together against that rule.
void evaluate_leaks(ReportOutcome *out, const Budgets &budgets, Suppressions &supp, const Report *baseline) {
  const Report &r = out->report;
  const LinePairing pairing = baseline ? pair_lines(*baseline, r) : LinePairing{};
  for (size_t gi = 0; gi < r.leak_groups.size(); ++gi) {
    const LeakGroup &g = r.leak_groups[gi];
    const LinePair *pair = baseline ? pairing.of_after(gi) : nullptr;
    const LeakGroup *then = pair ? &baseline->leak_groups[pair->before] : nullptr;
    std::vector<std::pair<const SiteBudget *, std::vector<const Leak *>>> by_rule;
    for (size_t k : g.sites) {
      const Leak &leak = r.leaks[k];
      if (const Suppression *s = supp.match(leak.stack, leak.site_id)) {
        Finding f = site_finding(leak);
        f.status = Status::kSuppressed;
        f.note = s->text() + " (" + s->origin + "): " + s->reason;
        out->findings.push_back(std::move(f));
        continue;
      }
      if (warmup_only(leak, budgets.warmup)) {
        Finding f = site_finding(leak);
        f.status = Status::kIgnored;
        f.note = "first seen at iteration " + std::to_string(leak.first_iteration) + ", before --warmup " +
                 std::to_string(budgets.warmup) + ", and not growing since";
        out->findings.push_back(std::move(f));
        continue;
      }
      const SiteBudget *rule = nullptr;
      budgets.leak_budget_for(leak.stack, leak.site_id, &rule);
      auto part = std::find_if(by_rule.begin(), by_rule.end(), [&](const auto &p) { return p.first == rule; });
      if (part == by_rule.end()) part = by_rule.insert(by_rule.end(), {rule, {}});
      part->second.push_back(&leak);
    }
    for (const auto &[rule, sites] : by_rule) {
      const bool whole = sites.size() == g.sites.size();
      // The analysis's numbers: the group's own when every site is judged, else its sites' sum.
      double bytes = 0;
      uint64_t live = 0, count = 0;
      int64_t since = sites[0]->first_iteration;
      for (const Leak *l : sites)
        bytes += l->bytes_per_iteration, live += l->live_bytes, count += l->live_count,
            since = std::min(since, l->first_iteration);
      if (whole) bytes = g.bytes_per_iteration, live = g.live_bytes, count = g.live_count, since = g.first_iteration;
      const Loop *loop = r.loop_of(*sites[0]);
      const LoopBudget *loop_rule = rule ? nullptr : budgets.loop_budget_for(loop);
      const uint64_t budget = rule        ? rule->max_leak_per_iteration
                              : loop_rule ? loop_rule->max_leak_per_iteration
                                          : budgets.max_leak_per_iteration;
      const std::string budget_from = rule        ? " from " + rule->match.text()
                                      : loop_rule ? " from loop rule " + loop_rule->pattern
                                                  : "";
      // Against the baseline: a line no baseline line pairs with is new; a paired one regressed
      // when its rate grew beyond the tolerance. A line part of whose sites a rule took out is
      // compared with the baseline's whole line, which can only hide a regression, never invent one.
      const bool is_new = baseline && !pair;
      const bool regressed = then && rate_regressed(then->bytes_per_iteration, bytes, budgets.tolerance);
      Finding f;
      f.kind = Kind::kLeak;
      f.device = g.device;
      if (loop && !in_loop(r, loop).empty()) f.loop = loop->name, f.test = loop->test.value_or("");
      f.site_id = sites[0]->site_id;
      for (const Leak *l : sites) f.site_ids.push_back(l->site_id);
      if (g.headline && (g.headline->file || g.headline->function)) {
        Stack head;
        head.headline = g.headline;
        locate(&f, head);
      } else {
        locate(&f, sites[0]->stack);
      }
      const std::string what = sites.size() == 1 && g.sites.size() > 1 ? sites[0]->stack.describe() : g.describe();
      const std::string which =
          sites.size() == 1 ? "site " + sites[0]->site_id
          : whole           ? std::to_string(sites.size()) + " sites"
                            : std::to_string(sites.size()) + " of its " + std::to_string(g.sites.size()) + " sites";
      f.message = what + " leaks " + rate(bytes) + " on device " + std::to_string(g.device) + in_loop(r, loop) +
                  " (budget " + rate(static_cast<double>(budget)) + budget_from + "; " +
                  format_size(static_cast<double>(live)) + " live in " + format::count_of(count, "allocation") +
                  " at the last iteration, since iteration " + std::to_string(since) +
                  (is_new ? "; new since the baseline" : "") + compared_with(then, pair, bytes, budgets) + ") [" +
                  which + "]" + (sites[0]->retained_by.empty() ? "" : "; kept by " + sites[0]->retained_by);
      if (sites.size() > 1)
        for (const Leak *l : sites)
          f.details.push_back(rate(l->bytes_per_iteration) + " via " + l->stack.via_text() + " [site " + l->site_id +
                              "]");
      if (bytes > static_cast<double>(budget)) {
        f.status = Status::kFail;
      } else if (is_new) {
        f.status = Status::kFail;
        f.note = "within its budget, but the baseline has no leak at this line";
      } else if (regressed) {
        f.status = Status::kFail;
        f.note = "within its budget, but it leaks more than the baseline's line beyond the tolerance";
      } else {
        f.status = Status::kPass;
      }
      if (baseline) {
        f.baseline = is_new ? "new" : regressed ? "regressed" : "same";
        if (pair) f.paired_by = paired_by_name(pair->by), f.baseline_line = then->describe();
      }
      out->findings.push_back(std::move(f));
    }
  }
  if (baseline)
    for (size_t i : pairing.only_before) out->findings.push_back(gone_finding(*baseline, baseline->leak_groups[i]));
}

void evaluate_devices(ReportOutcome *out, const Budgets &budgets) {
  const Report &r = out->report;
  for (const Device &d : r.devices) {
    const std::string dev = "device " + std::to_string(d.index);
    if (d.verdict == "growth") {
      Finding f;
      f.kind = Kind::kGrowth;
      f.device = d.index;
      double g = d.growth_bytes_per_iteration;
      std::string measured = "";
      if (budgets.warmup > 0 && !d.growth_after_warmup.empty()) {
        // The analysis's own fit after that warm-up (fewer than two iterations left: no growth).
        const auto k = static_cast<size_t>(budgets.warmup);
        g = k < d.growth_after_warmup.size() ? d.growth_after_warmup[k] : 0;
        measured = " after --warmup " + std::to_string(budgets.warmup);
      } else if (budgets.warmup > 0) {
        measured = " (this report has no fits per warm-up: --warmup needs a report from this gpuleak)";
      }
      f.message = dev + " grows " + rate(g) + measured + " with no single call site responsible (budget " +
                  rate(static_cast<double>(budgets.max_growth)) +
                  "): a caching pool's reserve, fragmentation or growth spread over many sites";
      f.status = g > static_cast<double>(budgets.max_growth) ? Status::kFail : Status::kPass;
      if (budgets.warmup > 0 && !d.growth_after_warmup.empty() && g <= 0)
        f.status = Status::kIgnored, f.note = "no growth after the warm-up";
      out->findings.push_back(std::move(f));
    }
    if (auto peak = budgets.peak_budget_for(d.index)) {
      Finding f;
      f.kind = Kind::kPeak;
      f.device = d.index;
      f.message = dev + " peaked at " + format_size(static_cast<double>(d.peak_live_bytes)) + " live (budget " +
                  format_size(static_cast<double>(*peak)) + ")";
      f.status = d.peak_live_bytes > *peak ? Status::kFail : Status::kPass;
      out->findings.push_back(std::move(f));
    }
    if (budgets.min_oom_horizon && d.forecast) {
      Finding f;
      f.kind = Kind::kOomHorizon;
      f.device = d.index;
      // A device that already failed an allocation is not forecast: the out-of-memory finding
      // says where it failed.
      const bool ran_out =
          std::any_of(r.ooms.begin(), r.ooms.end(), [&](const OomEvent &e) { return e.device == d.index; });
      f.message =
          dev + ": " +
          (ran_out ? std::string("ran out of memory in this run")
                   : format::forecast_phrase(d.forecast->iterations_left, d.forecast->seconds_left) + " at this rate") +
          " (minimum horizon " + format::count_of(*budgets.min_oom_horizon, "iteration") + ")";
      f.status = d.forecast->iterations_left < *budgets.min_oom_horizon ? Status::kFail : Status::kPass;
      out->findings.push_back(std::move(f));
    }
  }
}

// A loop other than the primary whose device memory grows with no call site responsible (its
// leaks are judged with the others, by evaluate_leaks): against the growth budget.
void evaluate_loops(ReportOutcome *out, const Budgets &budgets) {
  const Report &r = out->report;
  for (const Loop &l : r.loops) {
    if (l.primary || l.verdict != "growth") continue;
    Finding f;
    f.kind = Kind::kGrowth;
    f.loop = l.name;
    f.test = l.test.value_or("");
    f.message = l.describe() + ": device memory grows " + rate(l.growth_bytes_per_iteration) +
                " with no single call site responsible (budget " + rate(static_cast<double>(budgets.max_growth)) + ")";
    f.status = l.growth_bytes_per_iteration > static_cast<double>(budgets.max_growth) ? Status::kFail : Status::kPass;
    out->findings.push_back(std::move(f));
  }
}

void evaluate_ooms(ReportOutcome *out, Suppressions &supp) {
  std::vector<std::pair<size_t, size_t>> first;  // (finding, how many events) per distinct failure
  for (const OomEvent &e : out->report.ooms) {
    Finding f;
    f.kind = Kind::kOom;
    f.device = e.device;
    f.site_id = e.site_id;
    locate(&f, e.stack);
    f.message = std::string(e.recovered ? "recovered " : "unrecovered ") + "out-of-memory on device " +
                std::to_string(e.device) + ": " + (e.api.empty() ? "an allocation" : e.api) + " of " +
                format_size(static_cast<double>(e.requested_bytes)) + " failed at " + e.stack.describe() + " with " +
                format_size(static_cast<double>(e.live_bytes)) + " live (free " +
                format_size(static_cast<double>(e.free_bytes)) + " of " +
                format_size(static_cast<double>(e.total_bytes)) + ")";
    // What held the memory, the largest sites first: what a person frees to make room.
    for (size_t i = 0; i < e.live_by_site.size() && i < 3; ++i) {
      const OomSite &site = e.live_by_site[i];
      f.message += (i ? ", " : "; live by site: ") + format_size(static_cast<double>(site.bytes)) + " in " +
                   format::count_of(site.count, "allocation") + " at " + site.stack.describe();
    }
    if (e.live_by_site.size() > 3) f.message += ", and " + format::count_of(e.live_by_site.size() - 3, "more site");
    if (const Suppression *s = supp.match(e.stack, e.site_id)) {
      f.status = Status::kSuppressed;
      f.note = s->text() + " (" + s->origin + "): " + s->reason;
    } else {
      f.status = e.recovered ? Status::kWarn : Status::kFail;
    }
    // The same failure again (PyTorch retries a failed cudaMalloc after emptying its cache) is
    // one finding, counted.
    auto same = std::find_if(first.begin(), first.end(), [&](const std::pair<size_t, size_t> &p) {
      const Finding &o = out->findings[p.first];
      return o.status == f.status && o.message == f.message && o.note == f.note;
    });
    if (same != first.end()) {
      ++same->second;
      continue;
    }
    first.emplace_back(out->findings.size(), 1);
    out->findings.push_back(std::move(f));
  }
  for (const auto &[at, times] : first)
    if (times > 1) {
      std::string &m = out->findings[at].message;
      const size_t failed = m.find(" failed at ");
      m.insert(failed == std::string::npos ? m.size() : failed + 7, " " + std::to_string(times) + " times");
    }
}

void evaluate_baseline(ReportOutcome *out, const Budgets &budgets, const Report &base) {
  const Report &r = out->report;
  auto compare = [&](Kind kind, int device, const char *what, uint64_t now, uint64_t before) {
    double limit = static_cast<double>(before) * (1.0 + budgets.tolerance);
    if (static_cast<double>(now) <= limit) return;
    Finding f;
    f.kind = kind;
    f.device = device;
    f.status = Status::kFail;
    std::string change = before == 0 ? "from nothing" : percent(static_cast<double>(now) / before - 1.0);
    f.message = "device " + std::to_string(device) + " " + what + " " + format_size(static_cast<double>(now)) + " vs " +
                format_size(static_cast<double>(before)) + " in the baseline (" + change + ", tolerance " +
                percent(budgets.tolerance).substr(1) + ")";
    out->findings.push_back(std::move(f));
  };
  for (const Device &d : r.devices) {
    const Device *b = base.device(d.index);
    if (!b) continue;
    compare(Kind::kPeakRegression, d.index, "peak", d.peak_live_bytes, b->peak_live_bytes);
    compare(Kind::kLiveRegression, d.index, "steady-state live", steady_state_live(r, d.index),
            steady_state_live(base, d.index));
  }
}

void evaluate_run(ReportOutcome *out, const Budgets &budgets) {
  const Report &r = out->report;
  if (r.verdict == "inconclusive") {
    Finding f;
    f.kind = Kind::kInconclusive;
    f.status = budgets.fail_on_inconclusive ? Status::kFail : Status::kWarn;
    f.message = r.iteration_source == "none"
                    ? "no iterations found; mark the loop (gpuleak_iteration_begin/end, "
                      "gpuleak.iterate(), or an NVTX range named step) so growth can be measured"
                    : "too few iterations after warm-up to tell a leak from a plateau; run more "
                      "iterations";
    out->findings.push_back(std::move(f));
  }
  auto capture_warning = [&](const std::string &message) {
    Finding f;
    f.kind = Kind::kCapture;
    f.status = Status::kWarn;
    f.message = message;
    out->findings.push_back(std::move(f));
  };
  if (r.events_dropped > 0)
    capture_warning("the capture dropped " + std::to_string(r.events_dropped) +
                    " events (buffers full or size cap): numbers may be low");
  if (r.tracking_disabled) capture_warning("tracking was turned off mid-run: " + *r.tracking_disabled);
  if (r.capture_truncated) capture_warning("the capture ends mid-record (the process was killed)");
}

}  // namespace

void judge_empty_captures(std::vector<ReportOutcome> *outcomes) {
  auto empty = [](const ReportOutcome &o) { return o.report.capture_events && *o.report.capture_events == 0; };
  const bool all_empty = !outcomes->empty() && std::all_of(outcomes->begin(), outcomes->end(), empty);
  for (ReportOutcome &o : *outcomes) {
    if (!empty(o)) continue;
    Finding f;
    f.kind = Kind::kCapture;
    if (all_empty) {
      f.status = Status::kFail;
      f.message =
          "the capture recorded no CUDA memory events, and no report given has any: nothing was measured "
          "(was the program run under gpuleak? see `gpuleak doctor PROGRAM`)";
    } else {
      f.status = Status::kWarn;
      f.message =
          "the capture recorded no CUDA memory events (a process that only queried CUDA, such as a "
          "launcher?): nothing judged for it";
    }
    o.findings.insert(o.findings.begin(), std::move(f));
  }
}

const char *status_name(Status s) {
  switch (s) {
    case Status::kFail:
      return "FAIL";
    case Status::kWarn:
      return "warning";
    case Status::kSuppressed:
      return "suppressed";
    case Status::kIgnored:
      return "ignored";
    case Status::kPass:
      return "ok";
  }
  return "?";
}

const char *kind_name(Kind k) {
  switch (k) {
    case Kind::kLeak:
      return "leak";
    case Kind::kGrowth:
      return "growth";
    case Kind::kPeak:
      return "peak";
    case Kind::kOom:
      return "out of memory";
    case Kind::kOomHorizon:
      return "OOM forecast";
    case Kind::kPeakRegression:
      return "peak regression";
    case Kind::kLiveRegression:
      return "live regression";
    case Kind::kInconclusive:
      return "inconclusive";
    case Kind::kCapture:
      return "capture";
    case Kind::kGone:
      return "leak gone";
  }
  return "?";
}

bool ReportOutcome::failed() const { return count(Status::kFail) > 0; }

size_t ReportOutcome::count(Status s) const {
  return static_cast<size_t>(
      std::count_if(findings.begin(), findings.end(), [s](const Finding &f) { return f.status == s; }));
}

uint64_t steady_state_live(const Report &report, int device) {
  std::vector<uint64_t> v = report.steady_live(device, report.warmup_iterations);
  if (v.empty()) {
    const Device *d = report.device(device);
    return d ? d->live_at_exit_bytes : 0;
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

ReportOutcome evaluate(Report report, const Budgets &budgets, Suppressions &suppressions, const Report *baseline) {
  ReportOutcome out;
  out.report = std::move(report);
  if (baseline) out.baseline_path = baseline->path;
  // An out-of-memory first: when a run failed, that is what its reader needs before any leak.
  evaluate_ooms(&out, suppressions);
  evaluate_leaks(&out, budgets, suppressions, baseline);
  evaluate_devices(&out, budgets);
  evaluate_loops(&out, budgets);
  if (baseline) evaluate_baseline(&out, budgets, *baseline);
  evaluate_run(&out, budgets);
  // Failures first, then warnings, suppressed, ignored, passes: the screenful that matters on top.
  std::stable_sort(out.findings.begin(), out.findings.end(),
                   [](const Finding &a, const Finding &b) { return a.status < b.status; });
  return out;
}

}  // namespace gpuleak::gate
