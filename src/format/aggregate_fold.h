// Reading the aggregated form (capture format 1.4) back into memory records and iteration marks
// (aggregate_fold.cpp says how; docs/capture-format.md "Aggregated form" is the contract).
#pragma once

#include <string>
#include <vector>

#include "format/capture_reader.h"

namespace gpuleak::format {

// Bounds on what a capture's aggregated windows may unfold to (docs/limits.md): far above what
// gpuleak writes (a million iterations of a few sites unfold to a few million records), and what
// keeps a hostile window ("4 billion iterations") from taking the machine's memory.
inline constexpr uint64_t kMaxAggregatedIterations = 1ull << 23;
inline constexpr uint64_t kMaxSyntheticRecords = 1ull << 26;

// Appends the records the windows stand for to *memory (in time order among themselves) and
// their iteration marks to capture->markers, and fills capture->aggregated. False, with a
// one-line reason, when the windows claim more than the limits above.
bool fold_aggregates(Capture *capture, std::vector<MemoryRecord> *memory, std::string *error);

}  // namespace gpuleak::format
