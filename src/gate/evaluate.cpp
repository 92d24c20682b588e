// Budgets, suppressions and warm-up applied to one report's findings (evaluate.h). The gate never
// re-decides what a leak is: leaks, growth, forecasts and OOMs are the analysis's; the gate only
// compares their numbers with budgets and with a baseline.
#include "gate/evaluate.h"

#include <algorithm>
#include <cmath>

#include "format/words.h"
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

void evaluate_leaks(ReportOutcome *out, const Budgets &budgets, Suppressions &supp, const Report *baseline) {
  for (const Leak &leak : out->report.leaks) {
    Finding f;
    f.kind = Kind::kLeak;
    f.site_id = leak.site_id;
    f.device = leak.device;
    locate(&f, leak.stack);
    const SiteBudget *rule = nullptr;
    uint64_t budget = budgets.leak_budget_for(leak.stack, leak.site_id, &rule);
    bool is_new = baseline && std::none_of(baseline->leaks.begin(), baseline->leaks.end(),
                                           [&](const Leak &b) { return b.site_id == leak.site_id; });
    f.message = leak.stack.describe() + " leaks " + rate(leak.bytes_per_iteration) + " on device " +
                std::to_string(leak.device) + " (budget " + rate(static_cast<double>(budget)) +
                (rule ? " from " + rule->match.text() : "") + "; " + format_size(static_cast<double>(leak.live_bytes)) +
                " live in " + format::count_of(leak.live_count, "allocation") +
                " at the last iteration, since iteration " + std::to_string(leak.first_iteration) +
                (is_new ? "; new since the baseline" : "") + ") [site " + leak.site_id + "]" +
                (leak.retained_by.empty() ? "" : "; kept by " + leak.retained_by);
    if (const Suppression *s = supp.match(leak.stack, leak.site_id)) {
      f.status = Status::kSuppressed;
      f.note = s->text() + " (" + s->origin + "): " + s->reason;
    } else if (warmup_only(leak, budgets.warmup)) {
      f.status = Status::kIgnored;
      f.note = "first seen at iteration " + std::to_string(leak.first_iteration) + ", before --warmup " +
               std::to_string(budgets.warmup) + ", and not growing since";
    } else if (leak.bytes_per_iteration > static_cast<double>(budget)) {
      f.status = Status::kFail;
    } else if (is_new) {
      f.status = Status::kFail;
      f.note = "within its budget, but the baseline has no leak at this site";
    } else {
      f.status = Status::kPass;
    }
    out->findings.push_back(std::move(f));
  }
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

void evaluate_ooms(ReportOutcome *out, Suppressions &supp) {
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
    out->findings.push_back(std::move(f));
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
  if (baseline) evaluate_baseline(&out, budgets, *baseline);
  evaluate_run(&out, budgets);
  // Failures first, then warnings, suppressed, ignored, passes: the screenful that matters on top.
  std::stable_sort(out.findings.begin(), out.findings.end(),
                   [](const Finding &a, const Finding &b) { return a.status < b.status; });
  return out;
}

}  // namespace gpuleak::gate
