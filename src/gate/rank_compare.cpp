#include "gate/rank_compare.h"

#include <algorithm>
#include <cstdio>

#include "analysis/rank_outliers.h"
#include "format/words.h"
#include "gate/sizes.h"
#include "text/escape.h"
#include "text/paths.h"

namespace gpuleak::gate {

using text::printable;

std::optional<int64_t> rank_from_file_name(const std::string &path) {
  const std::string base = text::basename_of(path);
  // ".rank<R>." or ".rank<R>.<counter>." (DESIGN.md's output names): the first ".rank" followed by
  // one to nine digits and a dot. Scanned by hand: a std::regex here took half this file's compile
  // time (docs/benchmarks.md, "The demo's build").
  for (size_t at = base.find(".rank"); at != std::string::npos; at = base.find(".rank", at + 1)) {
    const size_t digits = at + 5;
    size_t end = digits;
    while (end < base.size() && base[end] >= '0' && base[end] <= '9') ++end;
    if (end > digits && end - digits <= 9 && end < base.size() && base[end] == '.')
      return std::stoll(base.substr(digits, end - digits));
  }
  return std::nullopt;
}

RankComparison compare_ranks(const std::vector<Report> &reports) {
  RankComparison c;
  for (const Report &r : reports) {
    RankRow row;
    row.path = r.path;
    row.program = r.program;
    row.pid = r.pid;
    row.rank = r.rank ? r.rank : rank_from_file_name(r.path);
    row.verdict = r.verdict;
    for (const Device &d : r.devices) {
      row.growth_bytes_per_iteration += d.growth_bytes_per_iteration;
      row.peak_live_bytes += d.peak_live_bytes;
      row.live_at_exit_bytes += d.live_at_exit_bytes;
    }
    for (const Iteration &it : r.iterations) row.iterations += it.primary;
    row.leaks = r.leaks.size();
    c.rows.push_back(std::move(row));
  }
  std::stable_sort(c.rows.begin(), c.rows.end(), [](const RankRow &a, const RankRow &b) {
    if (a.rank.has_value() != b.rank.has_value()) return a.rank.has_value();
    return a.rank && b.rank && *a.rank < *b.rank;
  });
  std::vector<double> growth;
  for (const RankRow &row : c.rows) growth.push_back(row.growth_bytes_per_iteration);
  std::vector<bool> outliers = analysis::rank_outliers(growth);
  for (size_t i = 0; i < c.rows.size(); ++i) c.rows[i].outlier = outliers[i];
  return c;
}

nlohmann::json comparison_json(const RankComparison &c) {
  using nlohmann::json;
  json rows = json::array();
  json outliers = json::array();
  for (const RankRow &r : c.rows) {
    rows.push_back({{"path", r.path},
                    {"program", r.program},
                    {"pid", r.pid ? json(*r.pid) : json(nullptr)},
                    {"rank", r.rank ? json(*r.rank) : json(nullptr)},
                    {"verdict", r.verdict},
                    {"growth_bytes_per_iteration", r.growth_bytes_per_iteration},
                    {"peak_live_bytes", r.peak_live_bytes},
                    {"live_at_exit_bytes", r.live_at_exit_bytes},
                    {"iterations", r.iterations},
                    {"leaks", r.leaks},
                    {"outlier", r.outlier}});
    if (r.outlier) outliers.push_back(r.rank ? json(*r.rank) : json(r.path));
  }
  return {{"schema", "gpuleak.ranks/1"},
          {"rule", "an outlier grows >= 4096 B/iteration and > 4x the median growth of the others"},
          {"processes", std::move(rows)},
          {"outliers", std::move(outliers)}};
}

namespace {
// Terminal columns of UTF-8 text: one per code point (printable() leaves no control bytes).
size_t display_width(const std::string &s) {
  size_t n = 0;
  for (unsigned char ch : s) n += (ch & 0xC0) != 0x80;
  return n;
}

std::string who(const RankRow &r) {
  if (r.rank) return "rank " + std::to_string(*r.rank);
  return r.program + (r.pid ? " (pid " + std::to_string(*r.pid) + ")" : "");
}
}  // namespace

std::string comparison_text(const RankComparison &c) {
  std::string out = "gpuleak: " + format::count_of(c.rows.size(), "process", "processes") + " compared\n";
  // Every column as wide as its widest cell: names are never cut ("prog_leaky_static (pid") and
  // the header stands over its column. Names come from the profiled program: printed through
  // the gate's terminal-safe escaping.
  struct Cells {
    std::string mark, name, verdict, growth, peak, at_exit, iterations;
  };
  std::vector<Cells> table = {{"  ", "process", "verdict", "growth/iter", "peak", "at exit", "iters"}};
  for (const RankRow &r : c.rows)
    table.push_back({r.outlier ? " !" : "  ", printable(who(r)), printable(r.verdict),
                     format_size(r.growth_bytes_per_iteration), format_size(static_cast<double>(r.peak_live_bytes)),
                     format_size(static_cast<double>(r.live_at_exit_bytes)), std::to_string(r.iterations)});
  size_t w[6] = {0, 0, 0, 0, 0, 0};
  for (const Cells &row : table) {
    const std::string *cells[6] = {&row.name, &row.verdict, &row.growth, &row.peak, &row.at_exit, &row.iterations};
    for (size_t i = 0; i < 6; ++i) w[i] = std::max(w[i], display_width(*cells[i]));
  }
  auto left = [](const std::string &s, size_t width) { return s + std::string(width - display_width(s), ' '); };
  auto right = [](const std::string &s, size_t width) { return std::string(width - display_width(s), ' ') + s; };
  for (const Cells &row : table) {
    std::string line = row.mark + " " + left(row.name, w[0]) + "  " + left(row.verdict, w[1]) + "  " +
                       right(row.growth, w[2]) + "  " + right(row.peak, w[3]) + "  " + right(row.at_exit, w[4]) + "  " +
                       right(row.iterations, w[5]);
    out += line + "\n";
  }
  size_t flagged = 0;
  for (const RankRow &r : c.rows)
    if (r.outlier) {
      ++flagged;
      out += "gpuleak: " + printable(who(r)) + " grows " + format_size(r.growth_bytes_per_iteration) +
             "/iter while the others stay flat\n";
    }
  if (!flagged) out += "gpuleak: no process grows apart from the others\n";
  return out;
}

}  // namespace gpuleak::gate
