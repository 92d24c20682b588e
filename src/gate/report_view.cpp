// Reading a report into the gate's typed view (report_view.h). Every error names the file and,
// for a malformed field, the field's JSON path, in one line.
#include "gate/report_view.h"

#include <cmath>
#include <cstring>

#include "format/capture_format.h"
#include "output/report_schema.h"
#include "text/bounded_read.h"
#include "text/escape.h"
#include "text/json_input.h"
#include "text/limits.h"
#include "text/paths.h"

namespace gpuleak::gate {

namespace {

using nlohmann::json;

// Field readers: `where` is the JSON path used in the error ("devices[0].peak_live_bytes").
class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string &where, const char *expected) const {
    throw GateError(path_ + ": malformed report: " + where + " is not " + expected);
  }
  const json *field(const json &obj, const char *key) const {
    auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
  }
  std::optional<std::string> opt_string(const json &obj, const char *key, const std::string &where) const {
    const json *v = field(obj, key);
    if (!v) return std::nullopt;
    if (!v->is_string()) fail(where + "." + key, "a string");
    return v->get<std::string>();
  }
  std::string string_or(const json &obj, const char *key, const std::string &where, std::string dflt = "") const {
    return opt_string(obj, key, where).value_or(std::move(dflt));
  }
  std::optional<int64_t> opt_int(const json &obj, const char *key, const std::string &where) const {
    const json *v = field(obj, key);
    if (!v) return std::nullopt;
    if (!v->is_number_integer()) fail(where + "." + key, "an integer");
    return v->is_number_unsigned() ? static_cast<int64_t>(v->get<uint64_t>()) : v->get<int64_t>();
  }
  std::optional<uint64_t> opt_size(const json &obj, const char *key, const std::string &where) const {
    const json *v = field(obj, key);
    if (!v) return std::nullopt;
    if (!v->is_number_integer() || (v->is_number_integer() && !v->is_number_unsigned() && v->get<int64_t>() < 0))
      fail(where + "." + key, "a byte count");
    return v->get<uint64_t>();
  }
  uint64_t size_or_zero(const json &obj, const char *key, const std::string &where) const {
    return opt_size(obj, key, where).value_or(0);
  }
  double number_or_zero(const json &obj, const char *key, const std::string &where) const {
    const json *v = field(obj, key);
    if (!v) return 0;
    if (!v->is_number()) fail(where + "." + key, "a number");
    return v->get<double>();
  }
  bool bool_or(const json &obj, const char *key, const std::string &where, bool dflt) const {
    const json *v = field(obj, key);
    if (!v) return dflt;
    if (!v->is_boolean()) fail(where + "." + key, "a boolean");
    return v->get<bool>();
  }
  // An array field (absent or null: empty); each element must be an object.
  std::vector<const json *> objects(const json &obj, const char *key, const std::string &where) const {
    std::vector<const json *> out;
    const json *v = field(obj, key);
    if (!v) return out;
    if (!v->is_array()) fail(where + key, "an array");
    for (size_t i = 0; i < v->size(); ++i) {
      if (!(*v)[i].is_object()) fail(where + key + "[" + std::to_string(i) + "]", "an object");
      out.push_back(&(*v)[i]);
    }
    return out;
  }

  Frame frame(const json &f, const std::string &w) const {
    Frame frame;
    frame.kind = string_or(f, "kind", w, "native");
    frame.function = opt_string(f, "function", w);
    frame.file = opt_string(f, "file", w);
    frame.module = opt_string(f, "module", w);
    frame.line = opt_int(f, "line", w);
    return frame;
  }

  Stack stack(const json &obj, const std::string &where) const {
    Stack s;
    auto frames = objects(obj, "stack", where + ".");
    for (size_t i = 0; i < frames.size(); ++i)
      s.frames.push_back(frame(*frames[i], where + ".stack[" + std::to_string(i) + "]"));
    // The frame the analysis chose to show (absent in reports written before it).
    if (const json *h = field(obj, "headline")) {
      if (!h->is_object()) fail(where + ".headline", "an object");
      s.headline = frame(*h, where + ".headline");
      s.headline_text = opt_string(*h, "text", where + ".headline");
      if (const json *via = field(*h, "via")) {
        if (!via->is_object()) fail(where + ".headline.via", "an object");
        s.via_function = opt_string(*via, "function", where + ".headline.via");
        s.via_file = opt_string(*via, "file", where + ".headline.via");
        s.via_line = opt_int(*via, "line", where + ".headline.via");
      }
      // A helper's line is named with the user's line that called it, as the summary names it.
      if (const json *caller = field(*h, "caller")) {
        if (!caller->is_object()) fail(where + ".headline.caller", "an object");
        s.caller = frame(*caller, where + ".headline.caller");
        const std::optional<std::string> from = opt_string(*caller, "text", where + ".headline.caller");
        if (from && !from->empty() && s.headline_text) *s.headline_text += ", called from " + *from;
      }
    }
    return s;
  }

 private:
  std::string path_;
};

// leak_groups[]: every group names leaks of its device, every leak is in one group. A report
// written before leak_groups (or a leak no group names) gets one group per leak.
void parse_leak_groups(const Reader &r, const json &doc, const std::string &path, Report *rep) {
  std::vector<bool> grouped(rep->leaks.size(), false);
  auto groups = r.objects(doc, "leak_groups", "");
  for (size_t i = 0; i < groups.size(); ++i) {
    const json &g = *groups[i];
    const std::string w = "leak_groups[" + std::to_string(i) + "]";
    LeakGroup group;
    group.device = static_cast<int>(r.opt_int(g, "device", w).value_or(0));
    group.bytes_per_iteration = r.number_or_zero(g, "bytes_per_iteration", w);
    group.live_bytes = r.size_or_zero(g, "live_bytes", w);
    group.live_count = r.size_or_zero(g, "live_count", w);
    group.first_iteration = r.opt_int(g, "first_iteration", w).value_or(0);
    Stack head = r.stack(g, w);
    group.headline = head.headline;
    group.caller = head.caller;
    const json *ids = r.field(g, "site_ids");
    if (!ids || !ids->is_array() || ids->empty()) r.fail(w + ".site_ids", "a non-empty array of site ids");
    for (const json &id : *ids) {
      if (!id.is_string()) r.fail(w + ".site_ids", "an array of strings");
      size_t k = 0;
      while (k < rep->leaks.size() &&
             (grouped[k] || rep->leaks[k].site_id != id.get<std::string>() || rep->leaks[k].device != group.device))
        ++k;
      if (k == rep->leaks.size())
        throw GateError(path + ": malformed report: " + w + ".site_ids names " + id.get<std::string>() +
                        ", which is no other group's leak of device " + std::to_string(group.device) + " in leaks[]");
      grouped[k] = true;
      group.sites.push_back(k);
    }
    const Leak &first = rep->leaks[group.sites[0]];
    group.text = head.headline_text && !head.headline_text->empty()
                     ? *head.headline_text
                     : (group.sites.size() == 1 ? first.stack.describe() : head.describe());
    rep->leak_groups.push_back(std::move(group));
  }
  for (size_t k = 0; k < rep->leaks.size(); ++k) {
    if (grouped[k]) continue;
    const Leak &l = rep->leaks[k];
    LeakGroup group;
    group.device = l.device;
    group.bytes_per_iteration = l.bytes_per_iteration;
    group.live_bytes = l.live_bytes;
    group.live_count = l.live_count;
    group.first_iteration = l.first_iteration;
    group.text = l.stack.describe();
    group.sites = {k};
    rep->leak_groups.push_back(std::move(group));
  }
}

// loops[] (1.1): every loop judged on its own passes; leaks[].loop names the one a leak is of.
void parse_loops(const Reader &r, const json &doc, Report *rep) {
  auto loops = r.objects(doc, "loops", "");
  for (size_t i = 0; i < loops.size(); ++i) {
    const json &l = *loops[i];
    const std::string w = "loops[" + std::to_string(i) + "]";
    Loop loop;
    // The program's own text (file, function and test names): made inert for a terminal here.
    auto printable = [](std::optional<std::string> v) {
      if (v) v = text::printable(*v);
      return v;
    };
    loop.name = text::printable(r.string_or(l, "name", w));
    loop.kind = r.string_or(l, "kind", w);
    loop.file = printable(r.opt_string(l, "file", w));
    loop.function = printable(r.opt_string(l, "function", w));
    loop.test = printable(r.opt_string(l, "test", w));
    loop.first_line = r.opt_int(l, "first_line", w);
    loop.primary = r.bool_or(l, "primary", w, false);
    loop.passes = r.size_or_zero(l, "passes", w);
    loop.verdict = r.string_or(l, "verdict", w);
    loop.growth_bytes_per_iteration = r.number_or_zero(l, "growth_bytes_per_iteration", w);
    rep->loops.push_back(std::move(loop));
  }
}

void check_schema(const json &doc, const std::string &path) {
  const std::string problem = output::report_schema_problem(doc);
  if (!problem.empty()) throw GateError(path + ": " + problem);
}

// leak > growth > inconclusive > clean (docs/report-format.md); -1 for anything else.
int verdict_rank(const std::string &v) {
  if (v == "clean") return 0;
  if (v == "inconclusive") return 1;
  if (v == "growth") return 2;
  if (v == "leak") return 3;
  return -1;
}

// The verdicts must agree (docs/report-format.md): the report's is the worst over devices[], and a
// device with a leak on it says "leak". A report that contradicts itself (a "growth" verdict with no
// growing device) is damaged or hand-made: the gate judges devices and leaks, so judging it would
// let its verdict through unjudged. It is bad input, never a pass (#25).
void check_verdicts_agree(const Report &rep, const std::string &path) {
  const std::string bad = path + ": malformed report: ";
  int worst = -1;
  const Device *worst_device = nullptr;
  for (const Device &d : rep.devices) {
    const int rank = verdict_rank(d.verdict);
    if (rank < 0)
      throw GateError(bad + "device " + std::to_string(d.index) + "'s verdict \"" + d.verdict +
                      "\" is not leak, growth, inconclusive or clean");
    if (rank > worst) worst = rank, worst_device = &d;
  }
  if (worst_device == nullptr) {
    if (verdict_rank(rep.verdict) >= verdict_rank("growth"))
      throw GateError(bad + "verdict \"" + rep.verdict + "\" but devices[] lists no device");
  } else if (worst != verdict_rank(rep.verdict)) {
    throw GateError(bad + "verdict \"" + rep.verdict + "\" but the worst of devices[] is \"" + worst_device->verdict +
                    "\" (device " + std::to_string(worst_device->index) + ")");
  }
  for (const Leak &leak : rep.leaks)
    if (const Device *d = rep.device(leak.device); d && d->verdict != "leak")
      throw GateError(bad + "leaks[] names a leak on device " + std::to_string(leak.device) + ", whose verdict is \"" +
                      d->verdict + "\"");
}

}  // namespace

const Frame *Stack::user_frame() const {
  if (headline) return headline->file || headline->function ? &*headline : nullptr;
  for (const Frame &f : frames)
    if (f.kind == "python" && f.file && f.line) return &f;
  for (const Frame &f : frames)
    if (f.file && f.line) return &f;
  return nullptr;
}

std::string Stack::describe() const {
  if (headline_text && !headline_text->empty()) return *headline_text;
  if (const Frame *f = user_frame())
    return f->function.value_or("?") + " (" + *f->file + ":" + std::to_string(*f->line) + ")";
  for (const Frame &f : frames)
    if (f.function) return *f.function + (f.module ? " in " + *f.module : "");
  return "unknown site";
}

std::string Stack::via_text() const {
  if (!via_function && !via_file) return describe();
  std::string where = via_file ? *via_file + (via_line ? ":" + std::to_string(*via_line) : "") : "";
  if (!via_function) return where;
  return *via_function + (where.empty() ? "" : " (" + where + ")");
}

const Loop *Report::loop_of(const Leak &leak) const {
  for (const Loop &l : loops)
    if (leak.loop.empty() ? l.primary : l.name == leak.loop) return &l;
  return nullptr;
}

std::string Loop::location() const {
  if (!file || !first_line) return name;
  return text::basename_of(*file) + ":" + std::to_string(*first_line);
}

std::string Loop::describe() const {
  std::string what;
  if (kind == "loop" || kind == "callback")
    what = (kind == "loop" ? "the loop at " : "the calls of " + function.value_or("?") + " at ") + location() +
           (kind == "loop" && function ? " in " + *function : "");
  else
    what = "loop '" + name + "'";
  return test ? *test + ", " + what : what;
}

const Device *Report::device(int index) const {
  for (const Device &d : devices)
    if (d.index == index) return &d;
  return nullptr;
}

std::string Report::display_name() const {
  std::string s = program;
  if (pid || rank) {
    s += " (";
    if (pid) s += "pid " + std::to_string(*pid);
    if (rank) s += std::string(pid ? ", " : "") + "rank " + std::to_string(*rank);
    s += ")";
  }
  return s;
}

std::vector<uint64_t> Report::steady_live(int device, int64_t warmup) const {
  std::vector<uint64_t> out;
  int64_t seen = 0;
  for (const Iteration &it : iterations) {
    if (!it.primary) continue;
    if (seen++ < warmup) continue;
    for (const IterationDevice &d : it.devices)
      if (d.index == device) out.push_back(d.live_end_bytes);
  }
  return out;
}

Report parse_report(const nlohmann::json &doc, const std::string &path) {
  check_schema(doc, path);
  Reader r(path);
  Report rep;
  rep.path = path;

  const json empty = json::object();
  const json *run = r.field(doc, "run");
  if (run && !run->is_object()) r.fail("run", "an object");
  const json &runo = run ? *run : empty;
  rep.program = r.string_or(runo, "program", "run", text::basename_of(path));
  rep.pid = r.opt_int(runo, "pid", "run");
  rep.rank = r.opt_int(runo, "rank", "run");
  if (const json *cap = r.field(runo, "capture"); cap && cap->is_object()) {
    rep.events_dropped = r.size_or_zero(*cap, "events_dropped", "run.capture");
    rep.capture_events = r.opt_size(*cap, "events", "run.capture");
    rep.tracking_disabled = r.opt_string(*cap, "tracking_disabled", "run.capture");
    rep.capture_truncated = r.bool_or(*cap, "truncated", "run.capture", false);
  }

  auto verdict = r.opt_string(doc, "verdict", "");
  if (!verdict) r.fail("verdict", "a string");
  rep.verdict = *verdict;
  // A new verdict bumps the schema's major version (docs/report-format.md), so anything else is
  // a damaged or hand-made file, not something to pass silently.
  if (rep.verdict != "leak" && rep.verdict != "growth" && rep.verdict != "inconclusive" && rep.verdict != "clean")
    throw GateError(path + ": malformed report: verdict \"" + rep.verdict +
                    "\" is not leak, growth, inconclusive or clean");
  rep.iteration_source = r.string_or(doc, "iteration_source", "", "none");
  if (const json *a = r.field(doc, "analysis"); a && a->is_object())
    rep.warmup_iterations = r.opt_int(*a, "warmup_iterations", "analysis").value_or(0);

  if (!doc.contains("devices")) r.fail("devices", "an array");
  auto devices = r.objects(doc, "devices", "");
  for (size_t i = 0; i < devices.size(); ++i) {
    const json &d = *devices[i];
    std::string w = "devices[" + std::to_string(i) + "]";
    Device dev;
    dev.index = static_cast<int>(r.opt_int(d, "index", w).value_or(static_cast<int64_t>(i)));
    dev.name = r.opt_string(d, "name", w);
    dev.total_bytes = r.opt_size(d, "total_bytes", w);
    dev.peak_live_bytes = r.size_or_zero(d, "peak_live_bytes", w);
    dev.live_at_exit_bytes = r.size_or_zero(d, "live_at_exit_bytes", w);
    dev.verdict = r.string_or(d, "verdict", w, rep.verdict);
    dev.growth_bytes_per_iteration = r.number_or_zero(d, "growth_bytes_per_iteration", w);
    if (const json *after = r.field(d, "growth_after_warmup")) {
      if (!after->is_array()) r.fail(w + ".growth_after_warmup", "an array");
      for (const json &v : *after) {
        if (!v.is_number()) r.fail(w + ".growth_after_warmup", "an array of numbers");
        dev.growth_after_warmup.push_back(v.get<double>());
      }
    }
    if (const json *f = r.field(d, "forecast")) {
      if (!f->is_object()) r.fail(w + ".forecast", "an object");
      Forecast fc;
      fc.iterations_left = r.size_or_zero(*f, "iterations_left", w + ".forecast");
      fc.seconds_left = r.number_or_zero(*f, "seconds_left", w + ".forecast");
      dev.forecast = fc;
    }
    rep.devices.push_back(std::move(dev));
  }

  auto iterations = r.objects(doc, "iterations", "");
  for (size_t i = 0; i < iterations.size(); ++i) {
    const json &it = *iterations[i];
    std::string w = "iterations[" + std::to_string(i) + "]";
    Iteration iter;
    iter.index = r.opt_int(it, "index", w).value_or(static_cast<int64_t>(i));
    iter.loop = r.string_or(it, "loop", w);
    iter.primary = r.bool_or(it, "primary", w, true);
    auto devs = r.objects(it, "devices", w + ".");
    for (size_t k = 0; k < devs.size(); ++k) {
      std::string wd = w + ".devices[" + std::to_string(k) + "]";
      IterationDevice d;
      d.index = static_cast<int>(r.opt_int(*devs[k], "index", wd).value_or(static_cast<int64_t>(k)));
      d.live_end_bytes = r.size_or_zero(*devs[k], "live_end_bytes", wd);
      d.peak_bytes = r.size_or_zero(*devs[k], "peak_bytes", wd);
      iter.devices.push_back(d);
    }
    rep.iterations.push_back(std::move(iter));
  }

  auto leaks = r.objects(doc, "leaks", "");
  for (size_t i = 0; i < leaks.size(); ++i) {
    const json &l = *leaks[i];
    std::string w = "leaks[" + std::to_string(i) + "]";
    Leak leak;
    leak.site_id = r.string_or(l, "site_id", w);
    leak.loop = text::printable(r.string_or(l, "loop", w));  // as Loop::name is
    leak.device = static_cast<int>(r.opt_int(l, "device", w).value_or(0));
    // The rate is what budgets and diffs judge: a leak without one cannot be judged, and a gate
    // that read it as 0 would pass it under any budget.
    const json *rate = r.field(l, "bytes_per_iteration");
    if (!rate || !rate->is_number() || !std::isfinite(rate->get<double>()) || rate->get<double>() < 0)
      r.fail(w + ".bytes_per_iteration", "a byte count (a number, 0 or more)");
    leak.bytes_per_iteration = rate->get<double>();
    leak.live_bytes = r.size_or_zero(l, "live_bytes", w);
    leak.live_count = r.size_or_zero(l, "live_count", w);
    leak.first_iteration = r.opt_int(l, "first_iteration", w).value_or(0);
    leak.confidence = r.number_or_zero(l, "confidence", w);
    if (const json *lbi = r.field(l, "live_by_iteration")) {
      if (!lbi->is_array()) r.fail(w + ".live_by_iteration", "an array");
      for (const json &v : *lbi) {
        if (!v.is_number_unsigned()) r.fail(w + ".live_by_iteration", "an array of byte counts");
        leak.live_by_iteration.push_back(v.get<uint64_t>());
      }
    }
    leak.stack = r.stack(l, w);
    rep.leaks.push_back(std::move(leak));
  }

  // Who keeps each leak: its group's path (leak_groups[].retained_by, optional; malformed is ignored,
  // it decides nothing).
  if (const json *groups = r.field(doc, "leak_groups"); groups && groups->is_array()) {
    for (const json &g : *groups) {
      if (!g.is_object()) continue;
      auto kept = g.find("retained_by");
      auto ids = g.find("site_ids");
      if (kept == g.end() || !kept->is_object() || ids == g.end() || !ids->is_array()) continue;
      auto t = kept->find("text");
      if (t == kept->end() || !t->is_string()) continue;
      for (const json &id : *ids)
        for (Leak &leak : rep.leaks)
          if (id.is_string() && leak.site_id == id.get<std::string>() && leak.retained_by.empty())
            leak.retained_by = text::printable(t->get<std::string>());
    }
  }

  // A "leak" verdict is made of its leaks: one that names none is a damaged or hand-made report,
  // and passing it under a budget would let any leak through.
  if (rep.verdict == "leak" && rep.leaks.empty())
    throw GateError(path + ": malformed report: verdict \"leak\" but leaks[] names no leak");
  check_verdicts_agree(rep, path);

  parse_leak_groups(r, doc, path, &rep);
  parse_loops(r, doc, &rep);

  if (const json *oom = r.field(doc, "oom")) {
    if (!oom->is_object()) r.fail("oom", "an object");
    auto events = r.objects(*oom, "events", "oom.");
    for (size_t i = 0; i < events.size(); ++i) {
      const json &e = *events[i];
      std::string w = "oom.events[" + std::to_string(i) + "]";
      OomEvent ev;
      ev.device = static_cast<int>(r.opt_int(e, "device", w).value_or(0));
      ev.requested_bytes = r.size_or_zero(e, "requested_bytes", w);
      ev.free_bytes = r.size_or_zero(e, "free_bytes", w);
      ev.total_bytes = r.size_or_zero(e, "total_bytes", w);
      ev.live_bytes = r.size_or_zero(e, "live_bytes", w);
      ev.recovered = r.bool_or(e, "recovered", w, false);
      ev.api = r.string_or(e, "api", w);
      ev.site_id = r.string_or(e, "site_id", w);
      ev.stack = r.stack(e, w);
      auto live = r.objects(e, "live_by_site", w + ".");
      for (size_t j = 0; j < live.size(); ++j) {
        std::string ws = w + ".live_by_site[" + std::to_string(j) + "]";
        ev.live_by_site.push_back(
            {r.size_or_zero(*live[j], "bytes", ws), r.size_or_zero(*live[j], "count", ws), r.stack(*live[j], ws)});
      }
      rep.ooms.push_back(std::move(ev));
    }
  }
  return rep;
}

std::string read_text_file(const std::string &path) {
  std::string text, error;
  switch (text::read_bounded(path, text::kMaxReportBytes, "a report, baseline, budgets or suppressions file", &text,
                             &error)) {
    case text::ReadResult::kOk:
      return text;
    case text::ReadResult::kIoError:
      throw GateError("cannot read " + error);
    case text::ReadResult::kTooLarge:
      break;
  }
  throw GateError(error);
}

nlohmann::json parse_json_text(const std::string &text, const std::string &path) {
  // The commonest mix-up: a capture where a report belongs. Say what to run instead.
  if (text.size() >= sizeof format::kMagic && std::memcmp(text.data(), format::kMagic, sizeof format::kMagic) == 0)
    throw GateError(path + " is a capture, not a report: run `gpuleak report " + path + "` first");
  nlohmann::json doc;
  text::JsonError error;
  if (!text::parse_json(text, &doc, &error)) throw GateError(path + ": " + error.message);
  return doc;
}

Report load_report(const std::string &path) {
  std::string text = read_text_file(path);
  return parse_report(parse_json_text(text, path), path);
}

}  // namespace gpuleak::gate
