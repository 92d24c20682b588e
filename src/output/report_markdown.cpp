// Markdown rendering of a report (report_markdown.h). Sections: the verdict line, leaks (site,
// file:line, rate, live at the last iteration, first iteration, forecast of its device,
// confidence), devices (with NVML's view when read), out-of-memory events (first, when the run
// had any), advice, notes.
#include "output/report_markdown.h"

#include <cinttypes>
#include <cstdio>
#include <vector>

#include "format/words.h"
#include "output/text_summary.h"
#include "text/escape.h"
#include "text/paths.h"

namespace gpuleak::output {

namespace {

using gpuleak::text::basename_of;
using nlohmann::json;

// Report fields read without throwing (a field may be null or absent). Named apart from
// text_summary.cpp's readers, which differ (terminal-safe text, integers as numbers): the two
// files may be compiled as one (GPULEAK_UNITY_READERS).
const json &member(const json &j, const char *key) {
  static const json null;
  if (!j.is_object()) return null;
  auto it = j.find(key);
  return it == j.end() ? null : *it;
}
const json &array(const json &j, const char *key) {
  static const json empty = json::array();
  const json &v = member(j, key);
  return v.is_array() ? v : empty;
}
std::string field_text(const json &j, const char *key) {
  const json &v = member(j, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}
bool has_number(const json &j, const char *key) { return member(j, key).is_number(); }
double field_number(const json &j, const char *key) {
  const json &v = member(j, key);
  return v.is_number() ? v.get<double>() : 0.0;
}
std::string field_integer(const json &j, const char *key) {
  const json &v = member(j, key);
  if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  return "?";
}
std::string bytes(const json &j, const char *key) {
  return has_number(j, key) ? human_bytes(field_number(j, key)) : std::string("?");
}
std::string fixed(double v, const char *format) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// Untrusted text in a table cell or a line of prose.
std::string md(const std::string &s) { return text::markdown_escape(s); }
// A site id in a code span, only when it is what gpuleak writes (hex digits): escapes do not work
// inside code spans, so anything else is escaped text.
std::string site(const std::string &s) {
  bool hex = !s.empty() && s.find_first_not_of("0123456789abcdef") == std::string::npos;
  return hex ? "`" + s + "`" : md(s);
}

// Reports from before the headline: the innermost Python frame with a file, else the innermost
// frame with a function or file. "function (file:line)", escaped; "?" when nothing is known.
std::string old_location(const json &stack) {
  static const json none = json::array();
  const json &frames = stack.is_array() ? stack : none;  // a reference: pick points into it
  const json *pick = nullptr;
  for (const json &f : frames)
    if (field_text(f, "kind") == "python" && !field_text(f, "file").empty()) {
      pick = &f;
      break;
    }
  if (!pick)
    for (const json &f : frames)
      if (!field_text(f, "function").empty() || !field_text(f, "file").empty()) {
        pick = &f;
        break;
      }
  if (!pick) return stack.is_array() && !stack.empty() ? "(unsymbolized)" : "(unknown site)";
  std::string fn = field_text(*pick, "function"), file = field_text(*pick, "file");
  std::string s = md(fn.empty() ? "?" : fn);
  if (!file.empty()) {
    s += " (" + md(basename_of(file));
    if (member(*pick, "line").is_number_integer()) s += ":" + field_integer(*pick, "line");
    s += ")";
  }
  return s;
}

// Where an entry (leak, advice, OOM event, live site) points: its headline, as the analysis chose
// it, and the user's line that called it when the headline is in a helper, escaped.
std::string location(const json &entry) {
  const json &headline = member(entry, "headline");
  if (headline.is_object() && !field_text(headline, "text").empty()) {
    const json &caller = member(headline, "caller");
    const std::string from = caller.is_object() ? field_text(caller, "text") : std::string();
    return md(field_text(headline, "text")) + (from.empty() ? "" : ", called from " + md(from));
  }
  return old_location(member(entry, "stack"));
}

const json *device_of(const json &report, const json &index) {
  for (const json &d : array(report, "devices"))
    if (member(d, "index") == index) return &d;
  return nullptr;
}

// The device's forecast in the words every writer uses (format/words.h), or "ran out of memory"
// when this run failed an allocation on it: a forecast is for what has not happened yet.
std::string forecast_text(const json &report, const json *device) {
  if (!device) return "-";
  for (const json &e : array(member(report, "oom"), "events"))
    if (member(e, "device") == member(*device, "index")) return "ran out of memory";
  const json &f = member(*device, "forecast");
  if (!f.is_object() || !has_number(f, "iterations_left")) return "-";
  return format::forecast_phrase(member(f, "iterations_left").get<uint64_t>(), field_number(f, "seconds_left"));
}

// The devices table's forecast: the phrase, and what it counted beyond the tracked live bytes, as
// the terminal summary says it.
std::string device_forecast_text(const json &report, const json &device) {
  std::string text = forecast_text(report, &device);
  const json &f = member(device, "forecast");
  return f.is_object() && text != "ran out of memory" && text != "-" ? text + forecast_basis(f) : text;
}

void heading(std::string &out, const json &r) {
  const json &run = member(r, "run");
  std::string program = field_text(run, "program");
  out += "# gpuleak report: " + (program.empty() ? std::string("(unknown program)") : md(program)) + " (pid " +
         field_integer(run, "pid") + ")\n\n";
  std::string verdict = field_text(r, "verdict");
  std::string source = field_text(r, "iteration_source");
  const json &analysis = member(r, "analysis");
  out += "**Verdict: " + md(verdict.empty() ? "?" : verdict) + "**";
  if (source.empty() || source == "none") {
    out += ", no iterations found";
  } else {
    std::string loop = field_text(analysis, "primary_loop");
    out += ", " + field_integer(analysis, "primary_iterations") +
           (field_integer(analysis, "primary_iterations") == "1" ? " iteration" : " iterations") + " of loop \"" +
           md(loop) + "\" (" + md(source) + "; " + field_integer(analysis, "warmup_iterations") + " warm-up)";
  }
  std::string mode = field_text(run, "allocator_mode");
  if (!mode.empty()) out += "; allocator: " + md(mode);
  out += "\n\n";
}

void leaks(std::string &out, const json &r) {
  const json &list = array(r, "leaks");
  out += "## Leaks\n\n";
  if (list.empty()) {
    out += "No leaking call site.\n\n";
    return;
  }
  out +=
      "| site | where | device | rate | live at the last iteration | first iteration | forecast | confidence "
      "|\n";
  out += "|---|---|---|---|---|---|---|---|\n";
  for (const json &l : list) {
    std::string live = bytes(l, "live_bytes") + " in " + field_integer(l, "live_count");
    if (member(l, "live_at_exit_count") == json(0) && member(l, "live_count") != json(0)) live += " (released at exit)";
    out += "| " + site(field_text(l, "site_id")) + " | " + location(l) + " | " + field_integer(l, "device") + " | " +
           bytes(l, "bytes_per_iteration") + "/iteration | " + live + " | " + field_integer(l, "first_iteration") +
           " | " + forecast_text(r, device_of(r, member(l, "device"))) + " | " +
           (has_number(l, "confidence") ? fixed(field_number(l, "confidence"), "%.2f") : "?") + " |\n";
  }
  out += "\n";
  // Who keeps it (issue #30), per user line: the Python reference path that holds most of its memory.
  for (const json &g : array(r, "leak_groups")) {
    const json &kept = member(g, "retained_by");
    if (!kept.is_object() || field_text(kept, "text").empty()) continue;
    out += "- " + location(g) + " kept by " + md(field_text(kept, "text")) + retention_when(field_text(kept, "event")) +
           "\n";
  }
  if (!array(r, "leak_groups").empty()) out += "\n";
}

void devices(std::string &out, const json &r) {
  const json &list = array(r, "devices");
  if (list.empty()) return;
  out += "## Devices\n\n";
  out += "| device | name | verdict | peak | live at exit | NVML process usage | untracked | forecast |\n";
  out += "|---|---|---|---|---|---|---|---|\n";
  for (const json &d : list) {
    out += "| " + field_integer(d, "index") + " | " + md(field_text(d, "name")) + " | " + md(field_text(d, "verdict")) +
           " | " + bytes(d, "peak_live_bytes") + " | " + bytes(d, "live_at_exit_bytes") + " | " +
           (has_number(d, "nvml_used_bytes") ? bytes(d, "nvml_used_bytes") : "-") + " | " +
           (has_number(d, "untracked_bytes") ? bytes(d, "untracked_bytes") : "-") + " | " + device_forecast_text(r, d) +
           " |\n";
  }
  out += "\n";
}

// A framework allocator's segments and the tensors in them (report segments[]; only with blocks).
void segments(std::string &out, const json &r) {
  const json &list = array(r, "segments");
  if (list.empty()) return;
  out += "## Segments (the tensors in them)\n\n";
  out += "| device | segments from | count | reserved at exit | tensors in them at exit (largest) |\n";
  out += "|---|---|---|---|---|\n";
  for (const json &s : list) {
    std::string tensors;
    size_t shown = 0;
    for (const json &b : array(s, "blocks")) {
      if (!b.is_object() || !b.contains("live_at_exit_bytes") || b["live_at_exit_bytes"] == 0) continue;
      if (shown++ == 3) break;
      tensors += (tensors.empty() ? "" : "; ") + bytes(b, "live_at_exit_bytes") + " at " + location(b);
    }
    out += "| " + field_integer(s, "device") + " | " + location(s) + " | " + field_integer(s, "count") + " | " +
           bytes(s, "live_at_exit_bytes") + " | " + (tensors.empty() ? "-" : tensors) + " |\n";
  }
  out += "\n";
}

void ooms(std::string &out, const json &r) {
  const json &events = array(member(r, "oom"), "events");
  out += "## Out of memory\n\n";
  if (events.empty()) {
    out += "No allocation failed.\n\n";
    return;
  }
  out += "| time | device | requested | free / total | live (gpuleak) | recovered | where |\n";
  out += "|---|---|---|---|---|---|---|\n";
  for (const json &e : events) {
    const json &recovered = member(e, "recovered");
    out += "| " + (has_number(e, "t_ns") ? fixed(field_number(e, "t_ns") / 1e9, "%.3f s") : "?") + " | " +
           field_integer(e, "device") + " | " + bytes(e, "requested_bytes") + " | " + bytes(e, "free_bytes") + " / " +
           bytes(e, "total_bytes") + " | " + bytes(e, "live_bytes") + " | " +
           (recovered.is_boolean() ? (recovered.get<bool>() ? "yes" : "**no**") : "?") + " | " + location(e) + " |\n";
  }
  // What held the memory at the newest failure.
  const json &top = array(events.front(), "live_by_site");
  if (!top.empty()) {
    out += "\nLive at the newest failure, by call site:\n\n| site | where | bytes | allocations |\n|---|---|---|---|\n";
    size_t shown = 0;
    for (const json &s : top) {
      if (shown++ == 10) break;
      out += "| " + site(field_text(s, "site_id")) + " | " + location(s) + " | " + bytes(s, "bytes") + " | " +
             field_integer(s, "count") + " |\n";
    }
  }
  out += "\n";
}

// One line per loop advice finding, in the report's order: the kind, the device, the call site
// when the finding has one (not a whole-device one such as reserved memory), the sentence.
void advice(std::string &out, const json &r) {
  const json &findings = array(r, "advice");
  if (findings.empty()) return;
  out += "## Advice\n\n";
  for (const json &a : findings) {
    const json &stack = member(a, "stack");
    const std::string change = field_text(member(a, "change_at"), "text");  // the line to change, when known
    out += "- **" + md(field_text(a, "kind")) + "** (device " + field_integer(a, "device") + ")";
    if (!change.empty())
      out += " at " + md(change);
    else if (stack.is_array() && !stack.empty())
      out += " at " + location(a);
    out += ": " + md(field_text(a, "message")) + "\n";
  }
  out += "\n";
}

void notes(std::string &out, const json &r) {
  std::vector<std::string> lines;
  std::string note = field_text(member(r, "run"), "allocator_note");
  if (!note.empty()) lines.push_back(md(note));
  for (const json &w : array(member(r, "analysis"), "warnings"))
    if (w.is_string()) lines.push_back(md(w.get<std::string>()));
  if (lines.empty()) return;
  out += "## Notes\n\n";
  for (const std::string &l : lines) out += "- " + l + "\n";
  out += "\n";
}

}  // namespace

std::string report_markdown(const json &report) {
  std::string out;
  heading(out, report);
  // A run that ran out of memory leads with the failure (what was asked, what was live by site);
  // leaks and devices explain it after.
  const bool failed = !array(member(report, "oom"), "events").empty();
  if (failed) ooms(out, report);
  leaks(out, report);
  devices(out, report);
  segments(out, report);
  if (!failed) ooms(out, report);
  advice(out, report);
  notes(out, report);
  return out;
}

}  // namespace gpuleak::output
