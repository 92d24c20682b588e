// The units the advice sentences print. Kept with the analysis (not the output) because the
// sentence is part of the finding: every front-end shows the very same words.
#include <cmath>
#include <cstdio>

#include "analysis/advice_internal.h"

namespace gpuleak::analysis::detail {

std::string bytes_text(double bytes) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = std::fabs(bytes);
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[48];
  std::snprintf(buf, sizeof buf, u ? "%s%.1f %s" : "%s%.0f %s", bytes < 0 ? "-" : "", v, units[u]);
  return buf;
}

std::string duration_text(double ns) {
  char buf[48];
  if (ns < 1e3)
    std::snprintf(buf, sizeof buf, "%.0f ns", ns);
  else if (ns < 1e6)
    std::snprintf(buf, sizeof buf, "%.1f us", ns / 1e3);
  else if (ns < 1e9)
    std::snprintf(buf, sizeof buf, "%.1f ms", ns / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.2f s", ns / 1e9);
  return buf;
}

std::string share_text(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f %%", share * 100);
  return buf;
}

std::string api_text(uint16_t api) { return api != 0 ? format::api_name(api) : "the allocation calls"; }

}  // namespace gpuleak::analysis::detail
