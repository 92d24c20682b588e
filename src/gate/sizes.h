// Sizes and percentages as people write them in budgets: "100", "512KiB", "1 MiB", "2GB", "5%".
#pragma once

#include <cstdint>
#include <limits>
#include <string>

namespace gpuleak::gate {

// A budget that is never exceeded ("unlimited" in a config file or on the command line).
inline constexpr uint64_t kUnlimited = std::numeric_limits<uint64_t>::max();

// Parses a byte count: a number (decimals allowed), optional spaces, an optional unit, any case
// but for a final lowercase b after a prefix ("1Mb", "8Gib": bits, refused with a hint):
//   B; K, KiB, M, MiB, G, GiB, T, TiB  (binary: 1 KiB = 1024 B; a bare K, M, G, T is binary too)
//   KB, MB, GB, TB                      (decimal, SI: 1 GB = 10^9 B)
// and "unlimited" (kUnlimited). Throws GateError naming `what` (the option or key) otherwise;
// every message lists the units (kSizeUnits).
uint64_t parse_size(const std::string &text, const std::string &what);
extern const char *const kSizeUnits;

// "5%", "0.5%" or "5" (percent) -> 0.05. Throws GateError for a negative or non-numeric value.
double parse_percent(const std::string &text, const std::string &what);

// Bytes in binary units with at most 2 decimals, trailing zeros dropped: "512 B", "1 MiB",
// "1.5 GiB", "-4 KiB"; kUnlimited prints "unlimited".
std::string format_size(double bytes);

}  // namespace gpuleak::gate
