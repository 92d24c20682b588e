#include "output/text_summary.h"

#include <cinttypes>
#include <cstdio>

namespace gpuleak::output {

namespace {

std::string where(const nlohmann::json &stack) {
  for (const auto &f : stack) {
    std::string fn = f.value("function", "");
    std::string file = f.value("file", "");
    int line = f.value("line", 0);
    if (fn.empty() && file.empty()) continue;
    size_t slash = file.find_last_of('/');
    std::string base = slash == std::string::npos ? file : file.substr(slash + 1);
    std::string s = fn.empty() ? "?" : fn;
    if (!base.empty()) s += " (" + base + (line ? ":" + std::to_string(line) : "") + ")";
    return s;
  }
  return stack.empty() ? "an unknown site" : "an unsymbolized site";
}

}  // namespace

std::string human_bytes(double bytes) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = bytes < 0 ? -bytes : bytes;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[48];
  std::snprintf(buf, sizeof buf, u ? "%s%.1f %s" : "%s%.0f %s", bytes < 0 ? "-" : "", v, units[u]);
  return buf;
}

std::string text_summary(const nlohmann::json &r, const std::string &report_path) {
  std::string out;
  const auto &run = r["run"];
  std::string verdict = r.value("verdict", "?");
  std::string source = r.value("iteration_source", "none");
  size_t iterations = r.contains("iterations") ? r["iterations"].size() : 0;
  out += "gpuleak: " + run.value("program", std::string("?")) + " (pid " + std::to_string(run.value("pid", 0)) +
         "): verdict " + verdict;
  out += source == "none" ? ", no iterations found" : ", " + std::to_string(iterations) + " iterations (" + source + ")";
  out += "\n";
  for (const auto &leak : r["leaks"]) {
    char line[512];
    std::snprintf(line, sizeof line, "  leak: %s per iteration at %s, %" PRIu64 " allocations live (%s), first seen at iteration %d, confidence %.2f\n",
                  human_bytes(leak.value("bytes_per_iteration", 0.0)).c_str(), where(leak["stack"]).c_str(),
                  leak.value("live_count", uint64_t{0}), human_bytes(leak.value("live_bytes", 0.0)).c_str(),
                  leak.value("first_iteration", 0), leak.value("confidence", 0.0));
    out += line;
  }
  for (const auto &d : r["devices"]) {
    out += "  device " + std::to_string(d.value("index", 0)) + ": peak " +
           human_bytes(d.value("peak_live_bytes", 0.0)) + ", live at exit " +
           human_bytes(d.value("live_at_exit_bytes", 0.0)) + ", " + d.value("verdict", std::string("?"));
    if (d.contains("forecast") && d["forecast"].is_object()) {
      out += "; out of memory in ~" + std::to_string(d["forecast"].value("iterations_left", uint64_t{0})) +
             " iterations at this rate";
    }
    out += "\n";
  }
  if (verdict == "inconclusive" && r.contains("live_at_exit")) {
    size_t shown = 0;
    for (const auto &site : r["live_at_exit"]) {
      if (shown++ == 3) break;
      out += "  live at exit: " + human_bytes(site.value("live_bytes", 0.0)) + " in " +
             std::to_string(site.value("live_count", uint64_t{0})) + " allocations at " + where(site["stack"]) + "\n";
    }
  }
  if (r.contains("oom") && r["oom"].is_object()) {
    out += "  out of memory: " + std::to_string(r["oom"]["events"].size()) + " failed allocation(s); see the report\n";
  }
  if (!report_path.empty()) out += "  report: " + report_path + "\n";
  return out;
}

}  // namespace gpuleak::output
