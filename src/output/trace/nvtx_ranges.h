// The program's NVTX records paired into ranges for the timeline: push/pop ranges nest per
// thread (and domain), start/end ranges may overlap anywhere in the process. A range still open
// when the capture ends is closed there (a run killed mid-range keeps it); a pop or end with no
// matching opening is counted and dropped.
#pragma once

#include <cstdint>
#include <vector>

#include "format/capture_reader.h"

namespace gpuleak::output::trace {

struct NvtxRange {
  int64_t start_ns = 0;  // since the capture's start
  int64_t end_ns = 0;
  uint32_t tid = 0;
  uint32_t message_id = 0;  // capture string ids (0: none)
  uint32_t domain_id = 0;
  uint64_t range_id = 0;  // start/end ranges: NVTX's id
  bool async = false;     // a start/end range (else push/pop)
  bool closed = true;     // false: still open at the end of the capture
  uint16_t depth = 0;     // push/pop: nesting depth on its thread and domain, from 0
  uint16_t lane = 0;      // start/end: a lane in which no two ranges overlap
};

struct NvtxMark {
  int64_t ts_ns = 0;
  uint32_t tid = 0;
  uint32_t message_id = 0;
  uint32_t domain_id = 0;
};

struct NvtxTimeline {
  std::vector<NvtxRange> ranges;  // by start time
  std::vector<NvtxMark> marks;
  uint16_t lanes = 0;      // lanes used by start/end ranges
  uint64_t unmatched = 0;  // pops and ends with nothing to close
};

// `end_ns` (since the start) closes what is still open.
NvtxTimeline pair_nvtx(const format::Capture &capture, int64_t end_ns);

}  // namespace gpuleak::output::trace
