// Side-by-side comparison of two reports (diff.h).
#include "gate/diff.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "gate/sizes.h"
#include "text/escape.h"

namespace gpuleak::gate {

using text::printable;  // a report's names are the program's bytes: no escape reaches the terminal

namespace {

std::string which_sites(const Report &r, const LeakGroup &g) {
  return g.sites.size() == 1 ? "site " + r.leaks[g.sites[0]].site_id : std::to_string(g.sites.size()) + " sites";
}

std::string change(double before, double after) {
  if (before == after) return "";
  char buf[48];
  if (before == 0) return "new";
  std::snprintf(buf, sizeof buf, "%+.1f%%", (after / before - 1.0) * 100.0);
  return buf;
}

struct Row {
  std::string label, a, b, note;
};

// Columns as wide as their widest cell, so long program names never push the others out of line.
std::string table(const std::vector<Row> &rows) {
  size_t wl = 0, wa = 0, wb = 0;
  for (const Row &r : rows)
    wl = std::max(wl, r.label.size()), wa = std::max(wa, r.a.size()), wb = std::max(wb, r.b.size());
  auto pad = [](const std::string &s, size_t w) { return s + std::string(w - s.size() + 2, ' '); };
  std::string out;
  for (const Row &r : rows) {
    std::string line = "  " + pad(r.label, wl) + pad(r.a, wa) + pad(r.b, wb) + r.note;
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string size_or_dash(const Device *d, uint64_t Device::*field) {
  return d ? format_size(static_cast<double>(d->*field)) : "-";
}

}  // namespace

const char *change_name(LeakChange::What what) {
  switch (what) {
    case LeakChange::What::kAdded:
      return "new";
    case LeakChange::What::kRemoved:
      return "gone";
    case LeakChange::What::kRegressed:
      return "regressed";
    case LeakChange::What::kImproved:
      return "improved";
    case LeakChange::What::kMoved:
      return "moved";
    case LeakChange::What::kSame:
      return "same";
  }
  return "?";
}

std::vector<LeakChange> diff_leaks(const Report &a, const Report &b, double tolerance) {
  using What = LeakChange::What;
  std::vector<LeakChange> all;
  auto change_of = [&](What what, const LeakGroup *before, const LeakGroup *after) {
    LeakChange c{what, before, after, nullptr, nullptr, std::nullopt};
    if (before) c.before = &a.leaks[before->sites[0]];
    if (after) c.after = &b.leaks[after->sites[0]];
    return c;
  };
  const LinePairing pairing = pair_lines(a, b);
  for (size_t j : pairing.only_after) all.push_back(change_of(What::kAdded, nullptr, &b.leak_groups[j]));
  for (size_t i : pairing.only_before) all.push_back(change_of(What::kRemoved, &a.leak_groups[i], nullptr));
  for (const LinePair &p : pairing.pairs) {
    const LeakGroup &before = a.leak_groups[p.before], &after = b.leak_groups[p.after];
    What what = What::kSame;
    if (rate_regressed(before.bytes_per_iteration, after.bytes_per_iteration, tolerance))
      what = What::kRegressed;
    else if (rate_improved(before.bytes_per_iteration, after.bytes_per_iteration, tolerance))
      what = What::kImproved;
    else if (p.by == PairedBy::kMoved || p.by == PairedBy::kSite)
      what = What::kMoved;
    LeakChange c = change_of(what, &before, &after);
    c.paired_by = p.by;
    all.push_back(c);
  }
  auto rate = [](const LeakChange &c) { return (c.after_line ? c.after_line : c.before_line)->bytes_per_iteration; };
  std::stable_sort(all.begin(), all.end(), [&](const LeakChange &x, const LeakChange &y) {
    return x.what != y.what ? x.what < y.what : rate(x) > rate(y);
  });
  return all;
}

namespace {

nlohmann::json side_json(const Report &r) {
  using nlohmann::json;
  return {{"path", r.path},
          {"program", r.program},
          {"pid", r.pid ? json(*r.pid) : json(nullptr)},
          {"rank", r.rank ? json(*r.rank) : json(nullptr)},
          {"verdict", r.verdict}};
}

nlohmann::json line_json(const Report &r, const LeakGroup *g) {
  using nlohmann::json;
  if (!g) return nullptr;
  const Leak &largest = r.leaks[g->sites[0]];
  const Frame *f =
      g->headline && (g->headline->file || g->headline->function) ? &*g->headline : largest.stack.user_frame();
  json ids = json::array();
  for (size_t k : g->sites) ids.push_back(r.leaks[k].site_id);
  const Loop *loop = r.loop_of(largest);
  return {{"text", g->describe()},
          {"file", f && f->file ? json(*f->file) : json(nullptr)},
          {"function", f && f->function ? json(*f->function) : json(nullptr)},
          {"line", f && f->line ? json(*f->line) : json(nullptr)},
          {"loop", loop ? json(loop->name) : json(nullptr)},
          {"bytes_per_iteration", g->bytes_per_iteration},
          {"live_bytes", g->live_bytes},
          {"site_ids", std::move(ids)}};
}

nlohmann::json device_json(const Device *d) {
  if (!d) return nullptr;
  return {{"verdict", d->verdict},
          {"peak_live_bytes", d->peak_live_bytes},
          {"live_at_exit_bytes", d->live_at_exit_bytes},
          {"growth_bytes_per_iteration", d->growth_bytes_per_iteration}};
}

}  // namespace

nlohmann::json diff_json(const Report &a, const Report &b, double tolerance) {
  using nlohmann::json;
  std::set<int> indexes;
  for (const Device &d : a.devices) indexes.insert(d.index);
  for (const Device &d : b.devices) indexes.insert(d.index);
  json devices = json::array();
  for (int index : indexes)
    devices.push_back({{"index", index}, {"a", device_json(a.device(index))}, {"b", device_json(b.device(index))}});
  json lines = json::array();
  json counts = json::object();
  for (LeakChange::What w : {LeakChange::What::kAdded, LeakChange::What::kRemoved, LeakChange::What::kRegressed,
                             LeakChange::What::kImproved, LeakChange::What::kMoved, LeakChange::What::kSame})
    counts[change_name(w)] = 0;
  for (const LeakChange &c : diff_leaks(a, b, tolerance)) {
    counts[change_name(c.what)] = counts[change_name(c.what)].get<int>() + 1;
    const LeakGroup &g = c.after_line ? *c.after_line : *c.before_line;
    lines.push_back({{"change", change_name(c.what)},
                     {"paired_by", c.paired_by ? json(paired_by_name(*c.paired_by)) : json(nullptr)},
                     {"device", g.device},
                     {"a", line_json(a, c.before_line)},
                     {"b", line_json(b, c.after_line)}});
  }
  return {{"schema", "gpuleak.diff/1"},
          {"a", side_json(a)},
          {"b", side_json(b)},
          {"tolerance", tolerance},
          {"devices", std::move(devices)},
          {"lines", std::move(lines)},
          {"counts", std::move(counts)}};
}

std::string write_diff(const Report &a, const Report &b, double tolerance) {
  std::string out = "gpuleak diff\n  A: " + printable(a.path) + "\n  B: " + printable(b.path) + "\n\n";
  std::vector<Row> rows;
  rows.push_back({"", "A", "B", ""});
  rows.push_back({"program", printable(a.display_name()), printable(b.display_name()), ""});
  rows.push_back({"verdict", printable(a.verdict), printable(b.verdict), a.verdict == b.verdict ? "" : "changed"});
  rows.push_back({"iteration source", printable(a.iteration_source), printable(b.iteration_source), ""});
  std::set<int> devices;
  for (const Device &d : a.devices) devices.insert(d.index);
  for (const Device &d : b.devices) devices.insert(d.index);
  for (int index : devices) {
    const Device *da = a.device(index), *db = b.device(index);
    const std::string dev = "device " + std::to_string(index) + " ";
    rows.push_back({dev + "verdict", da ? printable(da->verdict) : "-", db ? printable(db->verdict) : "-", ""});
    rows.push_back(
        {dev + "peak", size_or_dash(da, &Device::peak_live_bytes), size_or_dash(db, &Device::peak_live_bytes),
         da && db ? change(static_cast<double>(da->peak_live_bytes), static_cast<double>(db->peak_live_bytes)) : ""});
    rows.push_back(
        {dev + "live at exit", size_or_dash(da, &Device::live_at_exit_bytes),
         size_or_dash(db, &Device::live_at_exit_bytes),
         da && db ? change(static_cast<double>(da->live_at_exit_bytes), static_cast<double>(db->live_at_exit_bytes))
                  : ""});
    rows.push_back({dev + "growth", da ? format_size(da->growth_bytes_per_iteration) + "/iteration" : "-",
                    db ? format_size(db->growth_bytes_per_iteration) + "/iteration" : "-", ""});
  }
  rows.push_back({"leaking lines", std::to_string(a.leak_groups.size()), std::to_string(b.leak_groups.size()), ""});
  out += table(rows);

  std::vector<LeakChange> changes = diff_leaks(a, b, tolerance);
  size_t n[6] = {0, 0, 0, 0, 0, 0};
  for (const LeakChange &c : changes) ++n[static_cast<size_t>(c.what)];
  out += "\nleaking lines: " + std::to_string(n[0]) + " new, " + std::to_string(n[1]) + " gone, " +
         std::to_string(n[2]) + " regressed, " + std::to_string(n[3]) + " improved, " + std::to_string(n[4]) +
         " moved, " + std::to_string(n[5]) + " the same\n";
  for (const LeakChange &c : changes) {
    if (c.what == LeakChange::What::kSame) continue;
    const LeakGroup &l = c.after_line ? *c.after_line : *c.before_line;
    const Report &in = c.after_line ? b : a;
    std::string line = "  ";
    if (c.what == LeakChange::What::kAdded) {
      line += "+ " + l.describe() + ": " + format_size(l.bytes_per_iteration) + "/iteration";
    } else if (c.what == LeakChange::What::kRemoved) {
      line += "- " + l.describe() + ": was " + format_size(l.bytes_per_iteration) + "/iteration";
    } else {
      const double before = c.before_line->bytes_per_iteration, after = c.after_line->bytes_per_iteration;
      line += (c.what == LeakChange::What::kMoved ? "= " : "~ ") + l.describe() + ": ";
      line += c.what == LeakChange::What::kMoved
                  ? format_size(after) + "/iteration"
                  : format_size(before) + "/iteration -> " + format_size(after) + "/iteration (" +
                        change(before, after) + ", " + change_name(c.what) + ")";
      // Where A had it, when that is not where B has it.
      if (c.paired_by == PairedBy::kMoved || c.paired_by == PairedBy::kSite)
        line += ", was " + c.before_line->describe() + " (paired by " + paired_by_name(*c.paired_by) + ")";
    }
    out += printable(line + " on device " + std::to_string(l.device) + " [" + which_sites(in, l) + "]") + "\n";
  }
  return out;
}

}  // namespace gpuleak::gate
