// The timeline as the trace builder hands it to a file format: tracks, then events in time
// order. Two formats implement TraceSink: the Chrome Trace Event JSON (chrome_trace_writer.h)
// and Perfetto's protobuf (perfetto_writer.h). What the timeline contains is decided once, in
// trace_builder.cpp; the writers only spell it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpuleak::output::trace {

enum class TrackKind : uint8_t {
  kThread,   // a real thread of the program (tid)
  kPseudo,   // a named row of the process that is no thread ("iterations", "leaks")
  kCounter,  // a counter (live bytes)
  kAsync,    // one lane of overlapping async ranges (NVTX start/end); lanes share their name
  kGlobal,   // across processes (out-of-memory markers)
};

struct Track {
  TrackKind kind = TrackKind::kThread;
  std::string name;
  int64_t tid = 0;          // kThread: the kernel thread id; kPseudo: a tid no thread can have
  int sort_index = 0;       // order among the process' rows
  bool bytes_unit = false;  // kCounter: the values are bytes
};

// The run the trace shows, and how the trace was made (the "gpuleak_trace" metadata event).
struct TraceInfo {
  int64_t pid = 0;
  uint64_t monotonic_anchor_ns = 0;  // the capture's clock at ts 0 (CLOCK_MONOTONIC ns)
  std::string process_name;          // "<program> (pid N, rank R)"
  int rank = -1;                     // -1: not a rank
  std::string host;
  nlohmann::json metadata;  // args of the "gpuleak_trace" event (version, anchors, bounds)
};

enum class Phase : uint8_t {
  kComplete,     // a slice with a known duration (JSON "X"), at its start
  kCompleteEnd,  // the end of that slice, at its end time (for formats that need one)
  kBegin,        // a nesting slice on a thread (JSON "B"; NVTX push)
  kEnd,          // its end (JSON "E"; NVTX pop)
  kAsyncBegin,   // an async range (JSON "b"; NVTX start)
  kAsyncEnd,     // its end (JSON "e")
  kInstant,      // a moment (JSON "i")
  kCounter,      // a counter value (JSON "C")
};

enum class Scope : uint8_t { kThread, kProcess, kGlobal };

struct Event {
  Phase phase = Phase::kInstant;
  uint32_t track = 0;  // index into the tracks given to begin()
  int64_t ts_ns = 0;   // since the capture's start
  int64_t dur_ns = 0;  // kComplete
  std::string name;    // untrusted bytes allowed: writers escape and repair them
  const char *category = "gpuleak";
  Scope scope = Scope::kThread;  // kInstant
  uint64_t async_id = 0;         // kAsyncBegin/kAsyncEnd: pairs them (unique in the process)
  int64_t tid = 0;               // kAsyncBegin/kAsyncEnd: the thread that began the range
  uint64_t value = 0;            // kCounter
  nlohmann::json args;           // an object, or null for none
  // Flow arrows (kComplete only): from the slice listing an id in `flows_out` to the slice with
  // that `flow_in` (a host launch to the GPU work it started). 0 / empty = none.
  std::vector<uint64_t> flows_out;
  uint64_t flow_in = 0;
};

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  // Once, before any event: the process and all of its tracks.
  virtual void begin(const TraceInfo &info, const std::vector<Track> &tracks) = 0;
  virtual void event(const Event &event) = 0;
  // Once, after the last event; returns false when the output could not be written.
  virtual bool end() = 0;
};

}  // namespace gpuleak::output::trace
