// Perfetto's native protobuf trace, written by hand (research/FORMATS-AND-VIEWER.md A8): a
// concatenation of `Trace.packet` records, each a TracePacket holding a TrackDescriptor (the
// process, its threads, the counter, iteration, leak and NVTX tracks, the global OOM track) or a
// TrackEvent (slice begin/end, instant, counter). Every packet boundary is a valid truncation
// point, and traces of several processes can be concatenated (`cat a b > both`): track uuids are
// derived from the pid.
//
// It is 0.36-0.46x the JSON's size (docs/benchmarks.md "Trace sizes") and much cheaper for
// trace_processor to load: the format for very long runs. Timestamps: TracePacket.timestamp is
// the capture's CLOCK_MONOTONIC in ns (the header's monotonic anchor + ns since the start; no
// clock snapshot is written, so Perfetto takes it as its trace clock). Arguments become debug
// annotations (nested objects as dict entries; hex addresses as pointer values). Untrusted
// strings are repaired to valid UTF-8.
//
// One packet sequence (trusted_packet_sequence_id 1) whose first packet clears its incremental
// state: event names, categories, argument names and repeated string values are interned there
// (perfetto_interning.h), and each packet that uses an iid carries SEQ_NEEDS_INCREMENTAL_STATE.
// A concatenated file starts a new sequence generation with its own first packet, so its iids
// never meet the previous file's.
#pragma once

#include <cstdint>
#include <vector>

#include "output/trace/file_io.h"
#include "output/trace/perfetto_interning.h"
#include "output/trace/protobuf_encoder.h"
#include "output/trace/trace_sink.h"

namespace gpuleak::output::trace {

class PerfettoWriter : public TraceSink {
 public:
  explicit PerfettoWriter(ByteStream *out) : out_(out) {}

  void begin(const TraceInfo &info, const std::vector<Track> &tracks) override;
  void event(const Event &event) override;
  bool end() override;

  uint64_t packets_written() const { return packets_; }
  uint64_t process_uuid() const { return process_uuid_; }
  uint64_t track_uuid(uint32_t track) const { return process_uuid_ + 1 + track; }

 private:
  // Appends `packet` (a TracePacket's fields) as one Trace.packet record.
  void emit(const ProtoEncoder &packet);
  void track_event(int64_t ts_ns, uint32_t type, uint64_t track_uuid, const Event *event);
  void write_about(int64_t before_ts);
  // Writes a JSON value's members as DebugAnnotations (event args; nested objects as dict entries).
  void annotations(ProtoEncoder &message, uint32_t field, const nlohmann::json &args);
  void annotation_value(ProtoEncoder &annotation, const nlohmann::json &value);
  // `text` (valid UTF-8) as `iid_field` when it is interned, else inline as `text_field`.
  void string_or_iid(ProtoEncoder &message, InternedStrings::Table table, uint32_t iid_field, uint32_t text_field,
                     const std::string &text);

  ByteStream *out_;
  int64_t pid_ = 0;
  uint64_t anchor_ = 0;
  uint64_t process_uuid_ = 0;
  std::vector<Track> tracks_;
  uint64_t packets_ = 0;
  Event about_;  // the "gpuleak_trace" instant, written once events reach ts 0
  bool about_pending_ = false;
  InternedStrings interned_;
  ProtoEncoder event_;  // the TrackEvent being built
  ProtoEncoder packet_;
  ProtoEncoder frame_;
};

}  // namespace gpuleak::output::trace
