#include "output/text_summary.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "format/words.h"
#include "output/report_segments.h"
#include "text/escape.h"
#include "text/paths.h"

namespace gpuleak::output {

std::string retention_when(const std::string &event) {
  if (event == "oom") return " (at the out-of-memory)";
  if (event == "return") return " (when the main function returned)";
  return "";
}

namespace {

// Report fields may be null (a frame without symbols): read them without throwing. Every string
// of a report is the program's bytes (its name, symbols, paths, loop names): printable() makes
// escape sequences in them inert before they reach a terminal (text/escape.h).
std::string text(const nlohmann::json &j, const char *key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? gpuleak::text::printable(it->get<std::string>()) : std::string();
}
int64_t integer(const nlohmann::json &j, const char *key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<int64_t>() : 0;
}
double number(const nlohmann::json &j, const char *key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

// Reports before the headline (gpuleak.report/1 without "headline"): the innermost Python frame,
// else the innermost frame with a name. Newer reports say which frame to show; this never decides.
std::string where_in_old_report(const nlohmann::json &stack) {
  if (!stack.is_array()) return "an unknown site";
  // For a Python program the line that matters is the innermost Python frame, not the native
  // frames that called into CUDA for it.
  for (const auto &f : stack)
    if (f.is_object() && text(f, "kind") == "python" && !text(f, "file").empty()) {
      int64_t line = integer(f, "line");
      return text(f, "function") + " (" + gpuleak::text::basename_of(text(f, "file")) +
             (line ? ":" + std::to_string(line) : "") + ")";
    }
  for (const auto &f : stack) {
    std::string fn = text(f, "function");
    std::string file = text(f, "file");
    int64_t line = integer(f, "line");
    if (fn.empty() && file.empty()) continue;
    std::string base = gpuleak::text::basename_of(file);
    std::string s = fn.empty() ? "?" : fn;
    if (!base.empty()) s += " (" + base + (line ? ":" + std::to_string(line) : "") + ")";
    return s;
  }
  return stack.empty() ? "an unknown site" : "an unsymbolized site";
}

// The site of a leak, advice or live_at_exit entry: its headline as the analysis chose it, and
// the user's line that called it when the headline is in a helper.
std::string where(const nlohmann::json &entry) {
  auto headline = entry.find("headline");
  if (headline != entry.end() && headline->is_object()) {
    std::string t = text(*headline, "text");
    auto caller = headline->find("caller");
    if (!t.empty() && caller != headline->end() && caller->is_object() && !text(*caller, "text").empty())
      t += ", called from " + text(*caller, "text");
    if (!t.empty()) return t;
  }
  auto stack = entry.find("stack");
  return where_in_old_report(stack != entry.end() ? *stack : nlohmann::json());
}

using format::count_of;

// Whether the run failed an allocation on `device` (report oom.events[]).
bool ran_out_on(const nlohmann::json &events, int64_t device) {
  for (const auto &e : events)
    if (e.is_object() && integer(e, "device") == device) return true;
  return false;
}

// The out-of-memory, first: where the newest failure was, how much it asked for, what was live
// then by call site. A run that failed an allocation is about that failure before any leak.
std::string oom_lead(const nlohmann::json &events) {
  const auto &e = events.front();
  const bool recovered = e.contains("recovered") && e["recovered"].is_boolean() && e["recovered"].get<bool>();
  std::string api = text(e, "api");
  std::string out = "out of memory on device " + std::to_string(integer(e, "device")) +
                    (recovered ? " (the program recovered)" : "") + ": " + (api.empty() ? "an allocation" : api) +
                    " of " + human_bytes(number(e, "requested_bytes")) + " failed at " + where(e) + " with " +
                    human_bytes(number(e, "live_bytes")) + " live (free " + human_bytes(number(e, "free_bytes")) +
                    " of " + human_bytes(number(e, "total_bytes")) + ")\n";
  auto live = e.find("live_by_site");
  if (live != e.end() && live->is_array()) {
    size_t shown = 0;
    for (const auto &site : *live) {
      if (shown++ == 5) {
        out += "  live at the failure: " + count_of(live->size() - 5, "more call site") + " (see the report)\n";
        break;
      }
      out += "  live at the failure: " + human_bytes(number(site, "bytes")) + " in " +
             count_of(static_cast<uint64_t>(integer(site, "count")), "allocation") + " at " + where(site) + "\n";
    }
  }
  if (events.size() > 1)
    out += "  " + count_of(events.size() - 1, "earlier out-of-memory failure") + " in the report\n";
  return out;
}

// What the capture itself says about how much of the run the report can see: the same facts the
// gate warns about (src/gate/evaluate.cpp), so a person reading the terminal is not told less.
std::string capture_notes(const nlohmann::json &capture) {
  std::string out;
  auto events = capture.find("events");
  if (events != capture.end() && events->is_number_unsigned() && events->get<uint64_t>() == 0)
    out += "  note: the capture recorded no CUDA memory events: nothing was measured\n";
  auto dropped = capture.find("events_dropped");
  if (dropped != capture.end() && dropped->is_number_unsigned() && dropped->get<uint64_t>() > 0)
    out += "  note: the capture dropped " + std::to_string(dropped->get<uint64_t>()) +
           " events (buffers full or size cap): numbers may be low\n";
  std::string disabled = text(capture, "tracking_disabled");
  if (!disabled.empty()) out += "  note: tracking was turned off mid-run: " + disabled + "\n";
  auto aggregated = capture.find("aggregated_from");
  if (aggregated != capture.end() && aggregated->is_object()) {
    const double seconds = number(*aggregated, "t_ns") / 1e9;
    char when[32];
    std::snprintf(when, sizeof when, "%.1f s", seconds);
    auto it = aggregated->find("iteration");
    std::string at = it != aggregated->end() && it->is_number_unsigned()
                         ? " (iteration " + std::to_string(it->get<uint64_t>()) + ")"
                         : std::string();
    const bool disk = text(*aggregated, "reason") == "disk";
    out += std::string("  note: ") +
           (disk ? "the capture's file system ran low and it was aggregated from "
                 : "the capture reached its budget and was aggregated from ") +
           when + at +
           ": verdicts, rates and the live set are kept; the timeline and per-allocation detail after that are "
           "not (report: run.capture.aggregated_from)\n";
  }
  auto truncated = capture.find("truncated");
  if (truncated != capture.end() && truncated->is_boolean() && truncated->get<bool>())
    out +=
        "  note: the capture is truncated (it ends mid-record: the process was killed while writing); the "
        "report covers what reached the file\n";
  return out;
}

}  // namespace

std::string site_text(const nlohmann::json &entry) { return where(entry); }

std::string human_bytes(double bytes) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = bytes < 0 ? -bytes : bytes;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[48];
  std::snprintf(buf, sizeof buf, u ? "%s%.1f %s" : "%s%.0f %s", bytes < 0 ? "-" : "", v, units[u]);
  return buf;
}

std::string forecast_basis(const nlohmann::json &forecast) {
  if (text(forecast, "fills") == "jax_arena")
    return ", when JAX's arena is full (" + human_bytes(number(forecast, "pool_free_bytes")) +
           " of it free at the last iteration)";
  if (const double held = number(forecast, "held_elsewhere_bytes"); held > 0)
    return ", with the " + human_bytes(held) + " held outside the tracked allocations";
  return "";
}

std::string text_summary(const nlohmann::json &r, const std::string &report_path) {
  std::string out;
  static const nlohmann::json empty = nlohmann::json::object();
  static const nlohmann::json none = nlohmann::json::array();
  auto field = [&](const nlohmann::json &j, const char *key, const nlohmann::json &fallback) -> const nlohmann::json & {
    auto it = j.find(key);
    return it != j.end() && it->type() == fallback.type() ? *it : fallback;
  };
  const auto &run = field(r, "run", empty);
  std::string verdict = text(r, "verdict");
  std::string source = text(r, "iteration_source");
  if (source.empty()) source = "none";
  // iterations[] lists at most 10,000 (an even sample past that): the count is the analysis's.
  size_t iterations = field(r, "iterations", none).size();
  const auto &analysis = field(r, "analysis", empty);
  if (analysis.contains("iterations_total") && analysis["iterations_total"].is_number_unsigned())
    iterations = analysis["iterations_total"].get<size_t>();
  const auto &ooms = field(field(r, "oom", empty), "events", none);
  out += "gpuleak: " + text(run, "program") + " (pid " + std::to_string(integer(run, "pid")) + "): ";
  if (!ooms.empty()) out += oom_lead(ooms) + "  ";
  out += "verdict " + verdict;
  const auto &choice = field(analysis, "iteration_choice", empty);
  if (source == "observed" && !text(choice, "summary").empty()) {
    out += ", iterations: " + text(choice, "summary") + " (observed)";
  } else if (source == "none") {
    out += ", no iterations found";
    std::string tried;
    for (const auto &t : field(choice, "tried", none))
      if (t.is_string()) tried += (tried.empty() ? "" : ", ") + gpuleak::text::printable(t.get<std::string>());
    if (!tried.empty()) out += " (" + tried + ")";
    if (!text(choice, "suggested_loop").empty())
      out += "; mark the loop: gpuleak run --loop " + text(choice, "suggested_loop") + " -- ...";
  } else {
    out += ", " + count_of(iterations, "iteration") + " (" + source + ")";
  }
  out += "\n";
  // One finding per user line (leak_groups), with the library sites below it when there are
  // several; reports from before leak_groups list each site.
  const auto &leaks = field(r, "leaks", none);
  const bool grouped = r.contains("leak_groups") && r["leak_groups"].is_array();
  // (1.1) Another loop's leaks are in its own block (loops_summary), under the loop's name.
  std::string primary_loop;
  for (const auto &loop : field(r, "loops", none))
    if (loop.value("primary", false)) primary_loop = text(loop, "name");
  for (const auto &leak : grouped ? field(r, "leak_groups", none) : leaks) {
    if (!primary_loop.empty() && !text(leak, "loop").empty() && text(leak, "loop") != primary_loop) continue;
    // live_* are counted at the end of the last iteration; a leak the program released at exit (an
    // interpreter tearing down its objects) still grew every iteration, and says so. Reports from
    // before live_at_exit_* counted live_* at the end of the capture.
    auto at_exit = leak.find("live_at_exit_count");
    bool released = at_exit != leak.end() && at_exit->is_number() && at_exit->get<int64_t>() == 0;
    std::string live = integer(leak, "live_count") > 0
                           ? count_of(static_cast<uint64_t>(integer(leak, "live_count")), "allocation") +
                                 " live at the last iteration (" + human_bytes(number(leak, "live_bytes")) + ")" +
                                 (released ? ", released at exit" : "")
                           : std::string("released only at exit");
    char confidence[32];  // the text is built whole: a C++ name or a path can be of any length
    std::snprintf(confidence, sizeof confidence, "%.2f", number(leak, "confidence"));
    out += "  leak: " + human_bytes(number(leak, "bytes_per_iteration")) + " per iteration at " + where(leak) + ", " +
           live + ", first seen at iteration " + std::to_string(integer(leak, "first_iteration")) + ", confidence " +
           confidence + "\n";
    // Who keeps it (issue #30): the Python reference path that holds most of this line's memory.
    const auto &kept = field(leak, "retained_by", empty);
    if (kept.is_object() && !text(kept, "text").empty())
      out += "    kept by " + text(kept, "text") + retention_when(text(kept, "event")) + "\n";
    const auto &ids = field(leak, "site_ids", none);
    if (ids.size() < 2) continue;
    for (const auto &site : leaks) {
      if (std::find(ids.begin(), ids.end(), site.value("site_id", nlohmann::json())) == ids.end()) continue;
      const auto &h = field(site, "headline", empty);
      const auto &via = field(h, "via", empty);
      std::string below = via.empty() ? where(site) : text(via, "function");
      out += "    " + human_bytes(number(site, "bytes_per_iteration")) + " per iteration via " + below + " (site " +
             text(site, "site_id") + ")\n";
    }
  }
  out += loops_summary(r);
  for (const auto &d : field(r, "devices", none)) {
    out += "  device " + std::to_string(integer(d, "index")) + ": peak " + human_bytes(number(d, "peak_live_bytes")) +
           ", live at exit " + human_bytes(number(d, "live_at_exit_bytes"));
    // A pool's segments are part of the device's live bytes at exit: said here, so that a leak
    // "released at exit" (its tensors returned to the pool) does not read as a contradiction. The
    // segments line below says how much of them still holds objects.
    if (const uint64_t held = segments_reserved_at_exit(r, integer(d, "index")))
      out += " (" + human_bytes(static_cast<double>(held)) + " of it in " + segments_owner(r) + "'s segments)";
    out += ", " + text(d, "verdict");
    auto nvml = d.find("nvml_used_bytes");
    auto untracked = d.find("untracked_bytes");
    if (nvml != d.end() && nvml->is_number() && untracked != d.end() && untracked->is_number())
      out += "; NVML: process uses " + human_bytes(nvml->get<double>()) + ", " + human_bytes(untracked->get<double>()) +
             " not tracked (CUDA context, other allocators)";
    const auto &forecast = field(d, "forecast", empty);
    if (ran_out_on(ooms, integer(d, "index")))
      out += "; ran out of memory";
    else if (forecast.contains("iterations_left")) {
      out += "; " +
             format::forecast_phrase(static_cast<uint64_t>(integer(forecast, "iterations_left")),
                                     number(forecast, "seconds_left")) +
             " at this rate";
      out += forecast_basis(forecast);
    }
    out += "\n";
    out += segments_text(r, integer(d, "index"));
  }
  if (verdict == "inconclusive") {
    size_t shown = 0;
    for (const auto &site : field(r, "live_at_exit", none)) {
      if (shown++ == 3) break;
      out += "  live at exit: " + human_bytes(number(site, "live_bytes")) + " in " +
             count_of(static_cast<uint64_t>(integer(site, "live_count")), "allocation") + " at " + where(site) + "\n";
    }
  }
  std::string note = text(run, "allocator_note");
  if (!note.empty()) out += "  note: " + note + "\n";
  out += capture_notes(field(run, "capture", empty));
  out += advice_summary(r);
  if (!report_path.empty()) out += "  report: " + gpuleak::text::printable(report_path) + "\n";
  return out;
}

}  // namespace gpuleak::output
