// Interned strings of one Perfetto packet sequence (research/FORMATS-AND-VIEWER.md A8; Perfetto's
// "Writing TrackEvent Protos Synthetically", interning). A string that repeats (an API name, a
// category, an argument's name, a call site, a loop's name) is defined once, in the
// `TracePacket.interned_data` of the packet that first needs it, and every later use is a small
// integer id (iid) that the reader resolves through the sequence's incremental state.
//
// A string is interned at its third sighting; the first two are written inline. A value seen
// once or twice (an iteration's "train #12345", the message of one NVTX range, a name that an
// event and its marker share) would only grow the tables, here and in trace_processor, and pay
// for a definition on top of its uses; one seen a third time usually recurs with every
// iteration or call. A direct-mapped filter of string hashes counts the sightings; a collision only
// makes a string inline a little longer, or interned a little early, never wrong. The tables stop
// growing at kMaxEntries each (later strings are written inline), so that a --full trace of
// millions of events holds bounded memory.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "output/trace/protobuf_encoder.h"

namespace gpuleak::output::trace {

class InternedStrings {
 public:
  // The InternedData tables gpuleak uses.
  enum Table : uint8_t { kEventNames, kCategories, kAnnotationNames, kAnnotationValues, kTableCount };
  static constexpr size_t kMaxEntries = size_t{1} << 18;
  static constexpr uint64_t kInlineSightings = 2;  // written inline this often before interning

  InternedStrings();

  // The iid to write for `s` in the packet being built, or 0: write `s` inline. A new iid's
  // definition is kept until write_pending() puts it into that packet. `s` must be valid UTF-8.
  uint64_t iid(Table table, const std::string &s);

  // Ends the packet being built: appends the definitions made for it as the packet's
  // interned_data (one InternedData message), and returns whether the packet refers to interned
  // state (then it must carry SEQ_NEEDS_INCREMENTAL_STATE).
  bool write_pending(ProtoEncoder &packet);

  uint64_t interned(Table table) const { return tables_[table].size(); }

 private:
  std::array<std::unordered_map<std::string, uint64_t>, kTableCount> tables_;
  struct Sighting {
    uint64_t hash = 0;
    uint64_t count = 0;
  };
  std::vector<Sighting> seen_;  // the filter: the last string hashed to each slot, and how often
  ProtoEncoder pending_;        // InternedData fields defined for the packet being built
  bool referenced_ = false;     // the packet being built uses an iid
};

}  // namespace gpuleak::output::trace
