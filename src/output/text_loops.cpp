// The summary's loops (issue #33): one block per loop of the run that leaks or grows, judged on its
// own passes, and one line counting the rest. Renders report.loops[]; decides nothing.
#include <string>

#include "format/words.h"
#include "output/text_summary.h"
#include "text/escape.h"

namespace gpuleak::output {

namespace {

std::string str(const nlohmann::json &j, const char *key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? gpuleak::text::printable(it->get<std::string>()) : std::string();
}
double num(const nlohmann::json &j, const char *key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

// The function's own name, without its class or enclosing functions.
std::string short_name(const std::string &qualname) {
  size_t dot = qualname.rfind('.');
  return dot == std::string::npos ? qualname : qualname.substr(dot + 1);
}

}  // namespace

std::string loop_label(const nlohmann::json &loop) {
  std::string label = str(loop, "name");
  const std::string kind = str(loop, "kind");
  if (kind == "loop" || kind == "callback") {
    const std::string file = str(loop, "file");
    std::string at = file.substr(file.rfind('/') == std::string::npos ? 0 : file.rfind('/') + 1) + ":" +
                     std::to_string(static_cast<int64_t>(num(loop, "first_line")));
    if (num(loop, "last_line") > num(loop, "first_line"))
      at += "-" + std::to_string(static_cast<int64_t>(num(loop, "last_line")));
    label = kind == "loop" ? "the loop at " + at + " in " + str(loop, "function")
                           : "the calls of " + str(loop, "function") + " at " + at;
  } else {
    label = "loop '" + label + "'";
  }
  if (!str(loop, "test").empty()) label = str(loop, "test") + ", " + label;
  return label;
}

std::string loops_summary(const nlohmann::json &r) {
  auto it = r.find("loops");
  if (it == r.end() || !it->is_array() || it->empty()) return {};
  const nlohmann::json &loops = *it;
  // One loop and no test: the summary's first lines already said everything.
  if (loops.size() == 1 && str(loops[0], "test").empty()) return {};
  std::string out;
  uint64_t clean = 0, few = 0;
  for (const auto &loop : loops) {
    const std::string verdict = str(loop, "verdict");
    // (1.2) A loop that ran before the main loop keeps what the program builds (its layers, its
    // data): said once, with the amount, and never as a leak.
    if (loop.value("setup", false) && num(loop, "kept_bytes") > 0) {
      out += "  " + loop_label(loop) + " ran before the main loop (" +
             format::count_of(static_cast<uint64_t>(num(loop, "passes")), "pass", "passes") + ") and keeps " +
             human_bytes(num(loop, "kept_bytes")) + ": what the program builds first, not judged as a leak\n";
      continue;
    }
    if (verdict == "clean") ++clean;
    if (verdict == "inconclusive") ++few;
    if (verdict != "leak" && verdict != "growth") continue;
    const bool primary = loop.value("primary", false);
    const uint64_t passes = static_cast<uint64_t>(num(loop, "passes"));
    const uint64_t threads = static_cast<uint64_t>(num(loop, "threads"));
    out += "  " + verdict + " in " + loop_label(loop) + " (" + format::count_of(passes, "pass", "passes") +
           (threads > 1 ? " on " + format::count_of(threads, "thread") + " or task" : std::string()) + ")" +
           (primary ? ": the lines above" : "") + "\n";
    if (verdict == "growth" && !primary)
      out += "    its device memory grows " + human_bytes(num(loop, "growth_bytes_per_iteration")) +
             " per pass with no single line responsible\n";
    const std::string kind = str(loop, "kind");
    for (const auto &g : loop.value("leak_groups", nlohmann::json::array())) {
      // A loop's growth released after its last pass (the function around it returned) is still
      // its leak: run longer, it is what runs out of memory.
      const bool released = num(g, "live_at_exit_bytes") < num(g, "live_bytes");
      std::string when;
      if (released)
        when = kind == "loop"       ? ", released when " + short_name(str(loop, "function")) + " returned"
               : kind == "callback" ? ", released after its last call"
                                    : ", released after the loop";
      if (primary) {
        if (released) out += "    (" + when.substr(2) + ")\n";
        continue;
      }
      out += "    leak: " + human_bytes(num(g, "bytes_per_iteration")) + " per pass at " + site_text(g) + ", " +
             human_bytes(num(g, "live_bytes")) + " live at its last pass" + when + "\n";
    }
  }
  if (clean + few > 0) {
    out += "  " + format::count_of(clean, out.empty() ? "loop" : "other loop") + " clean";
    if (few > 0) out += ", " + format::count_of(few, "loop") + " with too few passes to judge";
    out += "\n";
  }
  return out;
}

}  // namespace gpuleak::output
