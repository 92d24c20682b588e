// Wording shared by every writer of text (the terminal summary, Markdown, the gate's outputs):
// counts with the right plural, and the out-of-memory forecast said one way everywhere. The
// viewer says the same in JavaScript (viewer/src/format.js: plural, forecastPhrase); a change
// here is a change there. Header-only: src/gate links no other gpuleak library.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace gpuleak::format {

// "1 allocation", "3 allocations"; `plural_form` for the irregular ones ("1 process", "2 processes").
inline std::string count_of(uint64_t n, const std::string &singular, const std::string &plural_form = "") {
  return std::to_string(n) + " " + (n == 1 ? singular : plural_form.empty() ? singular + "s" : plural_form);
}

// A duration for a forecast, rounded as a person would say it: "~42 s", "~5 min", "~1.5 h",
// "~2.0 days", and "under 1 s".
inline std::string about_duration(double seconds) {
  char buf[48];
  if (seconds < 1)
    return "under 1 s";
  else if (seconds < 120)
    std::snprintf(buf, sizeof buf, "~%.0f s", seconds);
  else if (seconds < 7200)
    std::snprintf(buf, sizeof buf, "~%.0f min", seconds / 60);
  else if (seconds < 172800)
    std::snprintf(buf, sizeof buf, "~%.1f h", seconds / 3600);
  else
    std::snprintf(buf, sizeof buf, "~%.1f days", seconds / 86400);
  return buf;
}

// The forecast of a device that did not run out: "out of memory in ~N iterations (~T)", or, with
// less than one iteration of headroom left, "out of memory within the next iteration". Without
// a duration (seconds <= 0) the part in parentheses is left out. A device that did run out is
// not forecast: writers say "ran out of memory" and show the failure instead.
inline std::string forecast_phrase(uint64_t iterations_left, double seconds_left) {
  if (iterations_left == 0) return "out of memory within the next iteration";
  std::string s = "out of memory in ~" + count_of(iterations_left, "iteration");
  if (seconds_left > 0) s += " (" + about_duration(seconds_left) + ")";
  return s;
}

}  // namespace gpuleak::format
