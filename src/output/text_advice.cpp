// The advice lines of the terminal summary: one per finding of the report's advice[], with the
// call site where there is one. Renders the analysis's sentences; decides nothing.
#include "output/text_summary.h"

#include "text/escape.h"

namespace gpuleak::output {

std::string advice_summary(const nlohmann::json &report, size_t max_lines) {
  auto it = report.find("advice");
  if (it == report.end() || !it->is_array() || it->empty()) return "";
  std::string out;
  size_t shown = 0;
  for (const auto &a : *it) {
    if (!a.is_object()) continue;
    if (shown++ == max_lines) {
      out += "  advice: " + std::to_string(it->size() - max_lines) + " more in the report\n";
      break;
    }
    auto field = [&](const char *key) {
      auto f = a.find(key);
      return f != a.end() && f->is_string() ? text::printable(f->get<std::string>()) : std::string();
    };
    std::string kind = field("kind");
    for (char &c : kind)
      if (c == '_') c = ' ';
    auto stack = a.find("stack");
    bool located = stack != a.end() && stack->is_array() && !stack->empty();
    // The line to change leads when the finding knows it (an empty_cache() call), else the site.
    auto change = a.find("change_at");
    std::string at =
        change != a.end() && change->is_object() && change->contains("text") && (*change)["text"].is_string()
            ? text::printable((*change)["text"].get<std::string>())
        : located ? site_text(a)
                  : std::string();
    out += "  advice (" + kind + ")" + (at.empty() ? std::string() : " at " + at) + ": " + field("message") + "\n";
  }
  return out;
}

}  // namespace gpuleak::output
