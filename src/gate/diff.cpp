// Side-by-side comparison of two reports (diff.h).
#include "gate/diff.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "gate/sizes.h"
#include "text/escape.h"

namespace gpuleak::gate {

using text::printable;  // a report's names are the program's bytes: no escape reaches the terminal

namespace {

bool same_line(const Report &ra, const LeakGroup &a, const Report &rb, const LeakGroup &b) {
  if (a.device != b.device) return false;
  if (a.headline && b.headline && (a.headline->file || a.headline->function))
    return a.headline->file == b.headline->file && a.headline->line == b.headline->line &&
           a.headline->function == b.headline->function;
  for (size_t i : a.sites)
    for (size_t j : b.sites)
      if (ra.leaks[i].site_id == rb.leaks[j].site_id) return true;
  return false;
}

const LeakGroup *find_line(const Report &in, const Report &from, const LeakGroup &like) {
  for (const LeakGroup &g : in.leak_groups)
    if (same_line(from, like, in, g)) return &g;
  return nullptr;
}

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

std::vector<LeakChange> diff_leaks(const Report &a, const Report &b, double tolerance) {
  std::vector<LeakChange> added, removed, changed;
  auto change_of = [&](LeakChange::What what, const LeakGroup *before, const LeakGroup *after) {
    LeakChange c{what, before, after, nullptr, nullptr};
    if (before) c.before = &a.leaks[before->sites[0]];
    if (after) c.after = &b.leaks[after->sites[0]];
    return c;
  };
  for (const LeakGroup &g : b.leak_groups) {
    const LeakGroup *old = find_line(a, b, g);
    if (!old) {
      added.push_back(change_of(LeakChange::What::kAdded, nullptr, &g));
    } else if (std::fabs(g.bytes_per_iteration - old->bytes_per_iteration) >
               tolerance * std::fabs(old->bytes_per_iteration)) {
      changed.push_back(change_of(LeakChange::What::kChanged, old, &g));
    }
  }
  for (const LeakGroup &g : a.leak_groups)
    if (!find_line(b, a, g)) removed.push_back(change_of(LeakChange::What::kRemoved, &g, nullptr));
  auto rate = [](const LeakChange &c) { return (c.after_line ? c.after_line : c.before_line)->bytes_per_iteration; };
  auto by_rate = [&](const LeakChange &x, const LeakChange &y) { return rate(x) > rate(y); };
  std::stable_sort(added.begin(), added.end(), by_rate);
  std::stable_sort(removed.begin(), removed.end(), by_rate);
  std::stable_sort(changed.begin(), changed.end(), by_rate);
  std::vector<LeakChange> all = added;
  all.insert(all.end(), removed.begin(), removed.end());
  all.insert(all.end(), changed.begin(), changed.end());
  return all;
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
  size_t n_added = 0, n_removed = 0, n_changed = 0;
  for (const LeakChange &c : changes) {
    n_added += c.what == LeakChange::What::kAdded;
    n_removed += c.what == LeakChange::What::kRemoved;
    n_changed += c.what == LeakChange::What::kChanged;
  }
  out += "\nleaks added " + std::to_string(n_added) + ", removed " + std::to_string(n_removed) + ", changed " +
         std::to_string(n_changed) + "\n";
  for (const LeakChange &c : changes) {
    const LeakGroup &l = c.after_line ? *c.after_line : *c.before_line;
    const Report &in = c.after_line ? b : a;
    std::string line = "  ";
    if (c.what == LeakChange::What::kAdded) {
      line += "+ " + l.describe() + ": " + format_size(l.bytes_per_iteration) + "/iteration";
    } else if (c.what == LeakChange::What::kRemoved) {
      line += "- " + l.describe() + ": was " + format_size(l.bytes_per_iteration) + "/iteration";
    } else {
      line += "~ " + l.describe() + ": " + format_size(c.before_line->bytes_per_iteration) + "/iteration -> " +
              format_size(c.after_line->bytes_per_iteration) + "/iteration (" +
              change(c.before_line->bytes_per_iteration, c.after_line->bytes_per_iteration) + ")";
    }
    out += printable(line + " on device " + std::to_string(l.device) + " [" + which_sites(in, l) + "]") + "\n";
  }
  return out;
}

}  // namespace gpuleak::gate
