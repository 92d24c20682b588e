// How much untrusted input gpuleak's readers accept (docs/limits.md). Each limit is far above what
// gpuleak itself writes, and each is enforced before the memory is spent: a hostile or broken
// file (/dev/zero, a gzip bomb, JSON nested a million levels deep) costs at most about the limit,
// then ends with a one-line error and exit status 2.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace gpuleak::text {

// Nesting of any JSON gpuleak reads. A report nests 6 levels, a Chrome trace event 4; the writers
// (nlohmann's dump) recurse once per level, so depth is what keeps them off the stack's end.
inline constexpr size_t kMaxJsonDepth = 512;

// A report, baseline, budgets or suppressions file. gpuleak's reports stay in the megabytes
// (iterations[] is capped at 10,000: 8 devices make about 18 MB, kMaxDevices about 75 MB); parsed
// JSON takes up to ~20 times its text.
inline constexpr uint64_t kMaxReportBytes = 128ull << 20;

// A Chrome trace given to `gpuleak merge`, after gunzip. `gpuleak trace` stays under 100 MB by
// default (docs/trace-format.md); the limit also bounds what a gzip bomb can inflate to.
inline constexpr uint64_t kMaxTraceBytes = 1ull << 30;

// JSON values (containers included) in one event of a trace given to `gpuleak merge`. Events are
// read one at a time (text/json_input.h), so this is what bounds the memory a trace costs beyond
// its text: about 100 bytes per value once parsed, 100 MB at most. The largest events gpuleak
// or torch.profiler write hold a few thousand.
inline constexpr uint64_t kMaxTraceEventValues = 1'000'000;

// Devices one capture may name (device records and the devices of memory records together), and
// one report's iterations may list: twice the 16 GPUs the largest machines show one process today.
// The analysis and the viewer keep numbers per device and iteration, so a 1 MB file naming 30,000
// devices would cost gigabytes: it is refused as it is read.
inline constexpr size_t kMaxDevices = 32;

// Bytes the successful allocations of one capture may claim, all together: 4 EiB, thousands of
// times what a year of a large training job allocates (1 TB per second). A capture past it is
// corrupt, and keeping every capture under it means no sum of sizes in the analysis can wrap
// around 2^64 (a size near 2^64 once turned a leak into "740 B live, clean").
inline constexpr uint64_t kMaxAllocatedBytes = 1ull << 62;  // "4 EiB" in capture_reader.cpp's error

// "128 MiB", "1 GiB": a limit as the errors and docs/limits.md spell it.
std::string limit_text(uint64_t bytes);

}  // namespace gpuleak::text
