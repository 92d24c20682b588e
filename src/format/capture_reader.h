// Reading a capture file back: the one decoder every stage after the recorder uses (analysis,
// `gpuleak report`, the trace writer, the viewer's data). It never trusts the bytes: sizes are
// checked before every copy, ids that point nowhere are kept as dangling (the caller decides), and
// garbage yields a one-line error instead of a crash (tests/fuzz/capture_reader_fuzzer.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "format/allocator_settings.h"
#include "format/capture_format.h"
#include "format/cupti_state.h"

namespace gpuleak::format {

struct Module {
  uint64_t load_bias = 0;
  std::string path;
  std::string build_id;                                 // lowercase hex, "" when the object has none
  std::vector<std::pair<uint64_t, uint64_t>> segments;  // absolute [start, end) of each PT_LOAD
};

struct Stack {
  StackKind kind = StackKind::kNative;
  std::vector<uint64_t> frames;
};

struct RunInfo {
  RunInfoRecord fixed{};
  std::string program;
  std::vector<std::string> command;
  std::string host;
  std::string version;
  AllocatorSettings allocator;  // the allocator switches seen at start, parsed (allocator_settings.h)
  std::string unwinder;
  std::string run_token;  // "" in captures before it was written, or not under `gpuleak run`
};

struct Device {
  int32_t index = 0;
  std::string name;
  uint64_t total_bytes = 0;
};

// A framework allocator's tracker that reported its blocks (format 1.3, PoolTrackerRecord).
struct PoolTracker {
  uint64_t ts_ns = 0;
  int32_t framework = 0;    // PoolFramework
  std::string description;  // untrusted text: "torch 2.11.0+cu130 CUDACachingAllocator trace tracker"
};

// (format 1.4) One aggregated window: its record, and its rows (Capture::aggregate_rows[begin, end)).
struct AggregateWindow {
  AggregateWindowRecord record{};
  size_t rows_begin = 0, rows_end = 0;
};

// (format 1.4) What the aggregated form of a capture says about itself, once read back.
struct Aggregated {
  uint64_t from_ns = 0;     // the switch (capture clock, monotonic)
  uint64_t windows = 0;     // windows read
  uint64_t iterations = 0;  // whole iterations in them
  uint64_t events = 0;      // raw memory records the writer folded into them
  uint64_t dropped = 0;     // marker and NVTX records it dropped (other loops, ranges)
  uint64_t synthetic = 0;   // memory records the reader made from them (aggregate_fold.h)
  uint32_t loop_id = 0;     // the loop whose iterations made the windows
  bool incomplete = false;  // rows after the last window (the file was cut): not used
  bool low_disk = false;    // the switch came from the file system running low (else the budget)
};

// How the Python loops were observed (format 1.5, ObserverRecord).
struct Observer {
  uint64_t ts_ns = 0;
  uint32_t method = 0;  // ObserverMethod
  std::string note;     // untrusted text
};

// A retention path (format 1.7, RetentionRecord): address 0 is a walk's summary.
struct Retention {
  uint64_t ts_ns = 0;
  uint64_t address = 0;
  uint64_t size = 0;  // the object's bytes; a summary's: the walk's duration in ns
  uint32_t tid = 0;
  uint8_t event = 0;  // RetentionEvent
  std::string text;   // untrusted: the path, or a summary's "objects=N paths=M stopped=..."
};

// One DeviceUsageRecord as read (capture_format.h).
using DeviceUsage = DeviceUsageRecord;

struct Capture {
  FileHeader header{};
  std::optional<RunInfo> run;
  std::vector<Module> modules;
  std::unordered_map<uint32_t, Stack> stacks;
  std::unordered_map<uint32_t, std::string> strings;
  std::vector<MemoryRecord> memory;  // file order; per thread in time order, across threads not
  std::vector<NvtxRecord> nvtx;
  std::vector<MarkerRecord> markers;
  std::vector<OomRecord> ooms;
  std::vector<Device> devices;
  std::vector<GpuActivityRecord> gpu_activity;  // file order (not time order: CUPTI delivers late)
  std::vector<DeviceUsage> device_usage;        // NVML's view (format 1.1), in file order
  std::vector<PoolTracker> pool_trackers;       // (format 1.3) framework allocators whose blocks are seen
  std::vector<PoolTracker> pool_missing;        // (format 1.8) trackers that could not attach: the reason
  std::vector<LoopRecord> loops;                // (format 1.5) observed loops and callbacks (strings by id)
  std::vector<LoopPassRecord> loop_passes;      // (format 1.5) their passes, in file order
  std::vector<Observer> observers;              // (format 1.5) how the loops were observed
  std::vector<Retention> retentions;            // (format 1.7) reference paths, file order
  std::optional<StatsRecord> stats;             // the last one in the file
  std::vector<std::string> disabled;            // reasons tracking was turned off, in order
  // (format 1.4) The aggregated form: its windows and rows as decoded (the rows are released once
  // folded), and, when there was one, what it says. Its memory records are in `memory` (or the
  // file source) and its iteration marks in `markers`, like the raw ones.
  std::vector<AggregateWindow> aggregate_windows;
  std::vector<AggregateSiteRecord> aggregate_rows;
  std::optional<Aggregated> aggregated;
  bool truncated = false;        // the file ends inside a record (killed mid-write)
  uint64_t bytes_read = 0;       // bytes of whole records decoded, header included
  uint64_t unknown_records = 0;  // records of types this reader does not know (skipped)
  uint64_t memory_records = 0;   // memory records decoded (kept in `memory` or not)

  // What became of CUPTI: the last stats record's state, kUnknown without one.
  CuptiState cupti() const { return stats ? cupti_state_of(stats->cupti_state) : CuptiState::kUnknown; }
  // The string behind an id, or "" when the id is 0 or unknown.
  const std::string &string(uint32_t id) const;
};

// Decodes a whole capture. Returns false with a one-line reason in *error when the bytes are not a
// gpuleak capture this reader understands (wrong magic, another major version, a record whose
// size is impossible, bytes after the last record that cannot start one, more than
// text::kMaxDevices devices). A capture that stops in the middle of a record is not an error: everything
// before it is returned and `truncated` is set.
bool parse_capture(const uint8_t *data, size_t size, Capture *out, std::string *error);

// Whether `path` is a regular file that starts with the capture magic (only its first bytes are
// read: a pipe is never sniffed, its bytes would be gone).
bool is_capture_file(const std::string &path);

// Reads and decodes `path`; I/O failures are reported like corrupt input. To analyze a large
// capture without holding its memory records, see read_capture_stream() (format/memory_source.h).
bool read_capture_file(const std::string &path, Capture *out, std::string *error);

}  // namespace gpuleak::format
