// Writes the report JSON (docs/report-format.md). Field names and units here are a contract with
// `gpuleak check`, the viewer and CI users: add fields freely, never rename or retype one within
// gpuleak.report/1.
#include "output/report_json.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <unordered_map>

#include "output/json_text.h"
#include "output/report_advice.h"
#include "output/report_iterations.h"
#include "output/report_segments.h"
#include "text/paths.h"

namespace gpuleak::output {

using nlohmann::json;
using text::basename_of;
using text::hex;

namespace {

json text_or_null(const std::string &s) { return s.empty() ? json(nullptr) : json(s); }

// The run's allocator settings (allocator_settings.h): each named switch its own key, and
// PYTORCH_CUDA_ALLOC_CONF's text (the parts with no name) as PYTORCH_CUDA_ALLOC_CONF.
json allocator_env_json(const format::AllocatorSettings &settings) {
  json env = json::object();
  std::string conf;
  for (const format::AllocatorSettings::Part &p : settings.parts) {
    if (!p.name.empty())
      env[p.name] = p.value;
    else
      conf += (conf.empty() ? "" : ";") + p.value;
  }
  if (!conf.empty()) env["PYTORCH_CUDA_ALLOC_CONF"] = conf;
  return env;
}

json frame_json(const Frame &f) {
  json j;
  bool native = f.kind == Frame::Kind::kNative;
  j["kind"] = native ? "native" : "python";
  j["function"] = text_or_null(f.function);
  j["file"] = text_or_null(f.file);
  j["line"] = f.line > 0 ? json(f.line) : json(nullptr);
  j["module"] = text_or_null(basename_of(f.module));
  if (native) {
    j["address"] = hex(f.address);
    j["build_id"] = text_or_null(f.build_id);
    if (f.code_offset) j["offset"] = hex(f.code_offset);  // without a line: what site_id hashes instead
  }
  return j;
}

json headline_json(const Headline &h) {
  json j;
  const Frame &f = h.frame;
  j["kind"] = f.kind == Frame::Kind::kNative ? "native" : "python";
  j["function"] = text_or_null(f.function);
  j["file"] = text_or_null(f.file);
  j["line"] = f.line > 0 ? json(f.line) : json(nullptr);
  j["module"] = text_or_null(basename_of(f.module));
  j["user"] = h.user;
  j["text"] = h.text;
  if (h.via) {
    j["via"] = {{"function", text_or_null(h.via->function)},
                {"file", text_or_null(h.via->file)},
                {"line", h.via->line > 0 ? json(h.via->line) : json(nullptr)},
                {"module", text_or_null(basename_of(h.via->module))}};
  } else {
    j["via"] = nullptr;
  }
  if (h.caller)  // the user's frame that called a helper: "train.py:40 in main"
    j["caller"] = {{"function", text_or_null(h.caller->function)},
                   {"file", text_or_null(h.caller->file)},
                   {"line", h.caller->line > 0 ? json(h.caller->line) : json(nullptr)},
                   {"module", text_or_null(basename_of(h.caller->module))},
                   {"text", h.caller_where}};
  else
    j["caller"] = nullptr;
  return j;
}

// Adds "site_id" and, unless brief, "stack" and "headline" to j.
void describe(Sites &sites, const analysis::Site &site, json &j, bool brief = false) {
  const ResolvedSite &r = sites.resolve(site);
  j["site_id"] = r.id;
  if (brief) return;
  json frames = json::array();
  for (const Frame &f : r.frames) frames.push_back(frame_json(f));
  j["stack"] = std::move(frames);
  j["headline"] = headline_json(r.headline);
}

// Leaks whose sites differ only below the user's frame, one group per device and user line,
// largest summed rate first.
const char *retention_event_name(uint8_t event) {
  if (event == static_cast<uint8_t>(format::RetentionEvent::kOom)) return "oom";
  if (event == static_cast<uint8_t>(format::RetentionEvent::kReturn)) return "return";
  return "exit";
}

// The retention path that holds the most of a group's bytes (analysis::retained_by), or null.
json retained_by_json(const format::Capture &c, const std::vector<const analysis::Leak *> &leaks) {
  uint64_t bytes = 0;
  const int64_t path = analysis::retained_by(c, leaks, &bytes);
  if (path < 0 || static_cast<size_t>(path) >= c.retentions.size()) return nullptr;
  const format::Retention &p = c.retentions[static_cast<size_t>(path)];
  return {{"text", p.text}, {"event", retention_event_name(p.event)}, {"bytes", bytes}};
}

json retention_json(const analysis::Analysis &a) {
  if (a.retention_walks.empty()) return nullptr;
  json walks = json::array();
  for (const auto &w : a.retention_walks)
    walks.push_back({{"event", retention_event_name(w.event)},
                     {"t_ns", w.t_ns},
                     {"duration_ns", w.duration_ns},
                     {"objects", w.objects},
                     {"paths", w.paths},
                     {"stopped", text_or_null(w.stopped)}});
  return {{"walks", std::move(walks)}};
}

json leak_groups_json(const format::Capture &capture, const std::vector<analysis::Leak> &leaks, Sites &sites) {
  struct Group {
    const ResolvedSite *first;
    int device;
    double rate = 0;
    uint64_t live_bytes = 0, live_count = 0, exit_bytes = 0, exit_count = 0;
    uint64_t first_iteration;
    double confidence = 0;
    std::vector<std::string> ids;
    std::vector<const analysis::Leak *> leaks;
  };
  std::vector<Group> groups;
  for (const auto &l : leaks) {
    const ResolvedSite &r = sites.resolve(l.site);
    auto g = std::find_if(groups.begin(), groups.end(), [&](const Group &x) {
      return x.device == l.device && x.leaks[0]->loop == l.loop && !r.frames.empty() &&
             x.first->headline.key == r.headline.key;
    });
    if (g == groups.end())
      g = groups.insert(groups.end(), Group{&r, l.device, 0, 0, 0, 0, 0, l.first_iteration, 0, {}, {}});
    g->rate += l.bytes_per_iteration;
    g->live_bytes += l.live_bytes;
    g->live_count += l.live_count;
    g->exit_bytes += l.live_at_exit_bytes;
    g->exit_count += l.live_at_exit_count;
    g->first_iteration = std::min<uint64_t>(g->first_iteration, l.first_iteration);
    g->confidence = std::max(g->confidence, l.confidence);
    g->ids.push_back(r.id);
    g->leaks.push_back(&l);
  }
  std::stable_sort(groups.begin(), groups.end(), [](const Group &a, const Group &b) { return a.rate > b.rate; });
  json out = json::array();
  for (const Group &g : groups) {
    // Several sites below one line: the line alone heads them, each site keeps its own via.
    Headline h = g.first->headline;
    if (g.ids.size() > 1) h.via.reset(), h.text = h.where;
    out.push_back({{"headline", headline_json(h)},
                   {"device", g.device},
                   {"bytes_per_iteration", report_number(g.rate)},
                   {"live_bytes", g.live_bytes},
                   {"live_count", g.live_count},
                   {"live_at_exit_bytes", g.exit_bytes},
                   {"live_at_exit_count", g.exit_count},
                   {"first_iteration", g.first_iteration},
                   {"confidence", report_number(g.confidence)},
                   {"retained_by", retained_by_json(capture, g.leaks)},
                   {"loop", text_or_null(g.leaks[0]->loop)},
                   {"site_ids", g.ids}});
  }
  return out;
}

// (gpuleak.report/1.1, issue #33) Every judged loop with its own verdict and leak groups.
json loops_json(const format::Capture &capture, const analysis::Analysis &a, Sites &sites) {
  json out = json::array();
  for (const analysis::LoopJudgment &l : a.loops) {
    json groups = leak_groups_json(capture, l.leaks, sites);
    // What the loop kept, released before the end of the run (the function around it returned).
    bool released = false;
    for (const json &g : groups) released |= g["live_at_exit_bytes"].get<uint64_t>() < g["live_bytes"].get<uint64_t>();
    out.push_back({{"name", l.name},
                   {"kind", l.kind},
                   {"file", text_or_null(l.file)},
                   {"function", text_or_null(l.function)},
                   {"first_line", l.first_line > 0 ? json(l.first_line) : json(nullptr)},
                   {"last_line", l.last_line > 0 ? json(l.last_line) : json(nullptr)},
                   {"test", text_or_null(l.test)},
                   {"primary", l.primary},
                   {"passes", l.passes},
                   {"warmup_passes", l.warmup},
                   {"threads", l.threads},
                   {"start_ns", l.start_ns},
                   {"end_ns", l.end_ns},
                   {"verdict", analysis::verdict_name(l.verdict)},
                   {"growth_bytes_per_iteration", report_number(l.growth_bytes_per_iteration)},
                   {"released", released},
                   {"setup", l.setup},
                   {"kept_bytes", l.kept_bytes},
                   {"leak_groups", std::move(groups)}});
  }
  return out;
}

// (capture format 1.4) Where the capture switched to its aggregated form, and what that loses;
// null for a capture written raw throughout.
json aggregated_json(const format::Capture &c, const analysis::Analysis &a) {
  if (!c.aggregated) return nullptr;
  const format::Aggregated &g = *c.aggregated;
  const uint64_t t = g.from_ns > c.header.monotonic_ns ? g.from_ns - c.header.monotonic_ns : 0;
  json iteration = nullptr;  // the primary iteration the switch fell in (or before)
  for (const auto &it : a.iterations)
    if (it.primary && it.end_ns > t) {
      iteration = it.index;
      break;
    }
  json lost = json::array({
      "the order, times and addresses of allocations after the switch: the timeline shows the aggregated events "
      "spaced evenly over each window's iterations",
      "the count of allocations born and freed inside one window: one allocation-free pair per site and iteration "
      "stands for them (iterations[] alloc_count, free_count and peak_bytes, and a device's peak, are approximate "
      "there)",
      "the boundaries of iterations inside a window: its iterations are spaced evenly between its first begin and "
      "its last end",
  });
  if (g.dropped)
    lost.push_back(std::to_string(g.dropped) + " NVTX ranges and iteration marks of other loops after the switch");
  return json{{"reason", g.low_disk ? "disk" : "budget"},
              {"t_ns", t},
              {"iteration", iteration},
              {"windows", g.windows},
              {"iterations", g.iterations},
              {"events_folded", g.events},
              {"records_dropped", g.dropped},
              {"kept", "every site's allocations, frees and survivors per window, the live set, the devices' bytes"},
              {"lost", std::move(lost)}};
}

json run_json(const format::Capture &c, const analysis::Analysis &a, const ReportContext &ctx) {
  json run;
  const format::RunInfo *info = c.run ? &*c.run : nullptr;
  run["command"] = info ? json(info->command) : json::array();
  run["program"] = info ? text_or_null(info->program) : json(nullptr);
  run["pid"] = info && info->fixed.pid ? info->fixed.pid : c.header.pid;
  run["ppid"] = info ? json(info->fixed.ppid) : json(nullptr);
  run["rank"] = info && info->fixed.rank >= 0 ? json(info->fixed.rank) : json(nullptr);
  run["host"] = info ? text_or_null(info->host) : json(nullptr);
  run["start_time"] = c.header.realtime_ns ? json(iso8601_utc(c.header.realtime_ns)) : json(nullptr);
  run["duration_ns"] = a.duration_ns;
  std::string version = info && !info->version.empty() ? info->version : ctx.gpuleak_version;
  run["gpuleak_version"] = text_or_null(version);
  run["cuda_driver_version"] = info && info->fixed.driver_version ? json(info->fixed.driver_version) : json(nullptr);
  run["allocator_env"] = info ? allocator_env_json(info->allocator) : json::object();
  run["allocator_mode"] = a.allocator_mode.text();
  run["allocator_note"] = text_or_null(a.allocator_note);
  run["pool_tracker"] = text_or_null(a.pool_tracker);
  run["retention"] = retention_json(a);
  run["unwinder"] = info ? text_or_null(info->unwinder) : json(nullptr);
  run["stack_depth"] = info ? json(info->fixed.stack_depth) : json(nullptr);
  json cap;
  cap["cupti"] = format::cupti_state_name(c.cupti());
  cap["events"] = c.stats ? c.stats->events : std::max<uint64_t>(c.memory_records, c.memory.size());
  cap["events_dropped"] = c.stats ? c.stats->events_dropped : 0;
  cap["tracking_disabled"] = c.disabled.empty() ? json(nullptr) : json(c.disabled.front());
  cap["truncated"] = c.truncated;
  cap["clean_exit"] = c.stats ? json(c.stats->final_record == 1) : json(nullptr);
  cap["aggregated_from"] = aggregated_json(c, a);
  run["capture"] = std::move(cap);
  return run;
}

json devices_json(const analysis::Analysis &a) {
  json out = json::array();
  for (const auto &d : a.devices) {
    json j;
    j["index"] = d.index;
    j["name"] = text_or_null(d.name);
    j["total_bytes"] = d.total_bytes ? json(d.total_bytes) : json(nullptr);
    j["peak_live_bytes"] = d.peak_live_bytes;
    j["live_at_exit_bytes"] = d.live_at_exit_bytes;
    // What the capture's DeviceUsage records said (analysis.h), else unknown.
    j["nvml_used_bytes"] = d.nvml_process_used_bytes ? json(*d.nvml_process_used_bytes) : json(nullptr);
    j["untracked_bytes"] = d.untracked_bytes ? json(*d.untracked_bytes) : json(nullptr);
    j["nvml_device_used_bytes"] = d.nvml_device_used_bytes ? json(*d.nvml_device_used_bytes) : json(nullptr);
    j["alloc_count"] = d.alloc_count;
    j["free_count"] = d.free_count;
    j["verdict"] = analysis::verdict_name(d.verdict);
    j["growth_bytes_per_iteration"] = report_number(d.growth_bytes_per_iteration);
    j["growth_r2"] = report_number(d.growth_r2);
    j["growth_fit_quality"] = report_number(d.growth_fit_quality);
    json after = json::array();
    for (double g : d.growth_after_warmup) after.push_back(report_number(g));
    j["growth_after_warmup"] = std::move(after);
    if (d.forecast) {
      j["forecast"] = {{"iterations_left", d.forecast->iterations_left},
                       {"seconds_left", report_number(d.forecast->seconds_left, 6)},
                       {"bytes_per_iteration", report_number(d.forecast->bytes_per_iteration)},
                       {"held_elsewhere_bytes", d.forecast->held_elsewhere_bytes},
                       {"pool_free_bytes", d.forecast->pool_free_bytes},
                       {"fills", d.forecast->within_arena ? "jax_arena" : "device"}};
    } else {
      j["forecast"] = nullptr;
    }
    out.push_back(std::move(j));
  }
  return out;
}

json oom_json(const analysis::Analysis &a, Sites &sites) {
  if (a.ooms.empty()) return nullptr;
  json events = json::array();
  for (const auto &e : a.ooms) {
    json j;
    j["t_ns"] = e.t_ns;
    j["device"] = e.device;
    j["requested_bytes"] = e.requested;
    j["api"] = format::api_name(e.api);
    j["result"] = e.result;
    j["free_bytes"] = e.free_bytes;
    j["total_bytes"] = e.total_bytes;
    j["live_bytes"] = e.live_bytes;
    j["live_count"] = e.live_count;
    j["recovered"] = e.recovered;
    if (e.pool_framework)
      j["pool"] = {{"framework", e.pool_framework == 3   ? "jax"
                                 : e.pool_framework == 2 ? "cupy"
                                                         : "pytorch"},
                   {"in_use_bytes", e.pool_in_use_bytes},
                   {"largest_free_block_bytes", e.pool_largest_free_bytes},
                   {"limit_bytes", e.pool_limit_bytes}};
    else
      j["pool"] = nullptr;
    describe(sites, e.site, j);
    json live = json::array();
    for (const auto &s : e.live_by_site) {
      json l{{"bytes", s.bytes}, {"count", s.count}};
      describe(sites, s.site, l);
      live.push_back(std::move(l));
    }
    j["live_by_site"] = std::move(live);
    json history = json::array();
    for (const auto &h : e.history) {
      json x{{"t_ns", h.t_ns},
             {"op", format::op_name(h.op)},
             {"kind", format::kind_name(h.kind)},
             {"api", format::api_name(h.api)},
             {"address", hex(h.address)},
             {"size", h.size},
             {"result", h.result}};
      describe(sites, h.site, x, /*brief=*/true);
      history.push_back(std::move(x));
    }
    j["history"] = std::move(history);
    events.push_back(std::move(j));
  }
  return json{{"events", std::move(events)}};
}

json analysis_json(const analysis::Analysis &a) {
  const auto &c = a.accounting;
  json warnings = json::array();
  for (const auto &w : a.warnings) warnings.push_back(w);
  const analysis::IterationChoice &ch = a.iteration_choice;
  json tried = json::array();
  for (const auto &t : ch.tried) tried.push_back(t);
  json choice = {{"summary", text_or_null(ch.summary)},
                 {"kind", text_or_null(ch.kind)},
                 {"file", text_or_null(ch.file)},
                 {"function", text_or_null(ch.function)},
                 {"first_line", ch.first_line},
                 {"last_line", ch.last_line},
                 {"passes", ch.passes},
                 {"observed_levels", ch.levels},
                 {"observed", ch.observed},
                 {"observer", text_or_null(ch.observer)},
                 {"tried", std::move(tried)},
                 {"suggested_loop", text_or_null(ch.suggested_loop)}};
  return {{"primary_loop", text_or_null(a.primary_loop)},
          {"iteration_choice", std::move(choice)},
          {"primary_iterations", a.primary_iterations},
          {"iterations_total", a.iterations.size()},
          {"warmup_iterations", a.warmup_iterations},
          {"allocations", c.allocations},
          {"frees", c.frees},
          {"failed_allocations", c.failed_allocations},
          {"unmatched_frees", c.unmatched_frees},
          {"graph_reservations", c.graph_reservations},
          {"not_owned", c.not_owned},
          {"context_resets", c.context_resets},
          {"pool_blocks", c.pool_blocks},
          {"host_pinned_peak_bytes", c.host_pinned_peak_bytes},
          {"host_pinned_live_at_exit_bytes", c.host_pinned_live_at_exit_bytes},
          {"live_at_exit_sites", a.live_at_exit_sites},
          {"warnings", std::move(warnings)}};
}

}  // namespace

std::string iso8601_utc(uint64_t realtime_ns) {
  time_t secs = static_cast<time_t>(realtime_ns / 1000000000ull);
  unsigned ms = static_cast<unsigned>(realtime_ns / 1000000ull % 1000);
  struct tm tm {};
  gmtime_r(&secs, &tm);
  char buf[40];
  size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%03uZ", ms);
  return buf;
}

json make_report(const format::Capture &capture, const analysis::Analysis &a, const SymbolizeFn &symbolize,
                 const ReportContext &ctx) {
  Sites sites(symbolize, site_options(capture, a.user_code));
  return make_report(capture, a, sites, ctx);
}

namespace {

// make_report() less "iterations".
json report_without_iterations(const format::Capture &capture, const analysis::Analysis &a, Sites &sites,
                               const ReportContext &ctx) {
  json r;
  r["schema"] = kReportSchemaWritten;
  r["run"] = run_json(capture, a, ctx);
  r["verdict"] = analysis::verdict_name(a.verdict);
  r["iteration_source"] = analysis::iteration_source_name(a.iteration_source);
  r["analysis"] = analysis_json(a);
  r["devices"] = devices_json(a);
  json leaks = json::array();
  for (const auto &l : a.leaks) {
    json j;
    describe(sites, l.site, j);
    j["device"] = l.device;
    j["loop"] = text_or_null(l.loop);
    j["bytes_per_iteration"] = report_number(l.bytes_per_iteration);
    j["live_bytes"] = l.live_bytes;
    j["live_count"] = l.live_count;
    j["live_at_exit_bytes"] = l.live_at_exit_bytes;
    j["live_at_exit_count"] = l.live_at_exit_count;
    j["first_iteration"] = l.first_iteration;
    j["confidence"] = report_number(l.confidence);
    j["fit_quality"] = report_number(l.fit_quality);
    j["r2"] = report_number(l.r2);
    j["iterations_observed"] = l.iterations_observed;
    j["live_by_iteration"] = l.live_by_iteration;
    leaks.push_back(std::move(j));
  }
  r["leaks"] = std::move(leaks);
  r["leak_groups"] = leak_groups_json(capture, a.leaks, sites);
  r["loops"] = loops_json(capture, a, sites);
  json live = json::array();
  for (const auto &s : a.live_at_exit) {
    json j;
    describe(sites, s.site, j);
    j["device"] = s.device;
    j["live_bytes"] = s.live_bytes;
    j["live_count"] = s.live_count;
    live.push_back(std::move(j));
  }
  r["live_at_exit"] = std::move(live);
  r["advice"] = advice_json(a.advice, [&](const analysis::Site &site, json &j) { describe(sites, site, j); });
  r["segments"] = segments_json(a.segments, [&](const analysis::Site &site, json &j) { describe(sites, site, j); });
  r["oom"] = oom_json(a, sites);
  return r;
}

// "</" written "<\/" (dump_report).
std::string escape_script_end(std::string text) {
  // '<' only occurs inside strings, where "\/" is a valid escape of '/'. Most reports have no
  // "</" at all: the text is returned as it is, else copied a stretch at a time.
  size_t hit = text.find("</");
  if (hit == std::string::npos) return text;
  std::string out;
  out.reserve(text.size() + 16);
  size_t from = 0;
  for (; hit != std::string::npos; hit = text.find("</", hit + 2)) {
    out.append(text, from, hit + 1 - from);
    out += '\\';
    from = hit + 1;
  }
  out.append(text, from, std::string::npos);
  return out;
}

}  // namespace

json make_report(const format::Capture &capture, const analysis::Analysis &a, Sites &sites, const ReportContext &ctx) {
  json r = report_without_iterations(capture, a, sites, ctx);
  r["iterations"] = iterations_json(a);
  return r;
}

ReportDocument make_report_document(const format::Capture &capture, const analysis::Analysis &a, Sites &sites,
                                    const ReportContext &ctx) {
  ReportDocument doc;
  doc.tree = report_without_iterations(capture, a, sites, ctx);
  const JsonTextWriter::Splice iterations{"iterations",
                                          [&](JsonTextWriter &w, size_t indent) { write_iterations(a, w, indent); }};
  doc.text = escape_script_end(json_text(doc.tree, iterations));
  doc.tree["iterations"] = json::array();
  doc.tree["iterations"].get_ref<json::array_t &>().resize(listed_iterations(a));  // nulls: only the number is read
  return doc;
}

std::string dump_report(const json &report) {
  return escape_script_end(json_text(report));  // dump(2, ' ', false, replace), byte for byte
}

}  // namespace gpuleak::output
