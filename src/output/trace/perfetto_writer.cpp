#include "output/trace/perfetto_writer.h"

#include <algorithm>
#include <cstdint>

#include "output/trace/perfetto_fields.h"
#include "text/escape.h"

namespace gpuleak::output::trace {

using nlohmann::json;
using text::valid_utf8;

namespace {

constexpr uint32_t kSequenceId = 1;  // one writer, one sequence

// An address or handle as the JSON args spell it ("0x7f3a00200000": hex(), lowercase, no leading
// zeros). Perfetto has a pointer type that it shows in the same hex: 8 bytes or fewer on the wire
// instead of 16, and never a candidate for interning.
bool hex_pointer(const std::string &s, uint64_t *value) {
  if (s.size() < 3 || s.size() > 18 || s[0] != '0' || s[1] != 'x' || (s[2] == '0' && s.size() > 3)) return false;
  uint64_t v = 0;
  for (size_t i = 2; i < s.size(); ++i) {
    const char c = s[i];
    const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) return false;
    v = v << 4 | static_cast<uint64_t>(digit);
  }
  *value = v;
  return true;
}

}  // namespace

void PerfettoWriter::string_or_iid(ProtoEncoder &message, InternedStrings::Table table, uint32_t iid_field,
                                   uint32_t text_field, const std::string &text) {
  if (const uint64_t iid = interned_.iid(table, text))
    message.varint_field(iid_field, iid);
  else
    message.bytes_field(text_field, text);
}

// The value half of a DebugAnnotation.
void PerfettoWriter::annotation_value(ProtoEncoder &a, const json &v) {
  switch (v.type()) {
    case json::value_t::boolean:
      a.bool_field(pf::kAnnotationBool, v.get<bool>());
      break;
    case json::value_t::number_unsigned:
      a.varint_field(pf::kAnnotationUint, v.get<uint64_t>());
      break;
    case json::value_t::number_integer:
      a.int_field(pf::kAnnotationInt, v.get<int64_t>());
      break;
    case json::value_t::number_float:
      a.double_field(pf::kAnnotationDouble, v.get<double>());
      break;
    case json::value_t::string: {
      const std::string &text = v.get_ref<const std::string &>();
      if (uint64_t pointer; hex_pointer(text, &pointer))
        a.varint_field(pf::kAnnotationPointer, pointer);
      else
        string_or_iid(a, InternedStrings::kAnnotationValues, pf::kAnnotationStringIid, pf::kAnnotationString,
                      valid_utf8(text));
      break;
    }
    case json::value_t::object:
      annotations(a, pf::kAnnotationDictEntries, v);
      break;
    case json::value_t::array:
      for (const json &item : v)
        a.message_field(pf::kAnnotationArrayValues, [&](ProtoEncoder &e) { annotation_value(e, item); });
      break;
    default:
      a.bytes_field(pf::kAnnotationString, "null");
      break;
  }
}

void PerfettoWriter::annotations(ProtoEncoder &message, uint32_t field, const json &args) {
  if (!args.is_object()) return;
  for (const auto &[key, value] : args.items()) {
    message.message_field(field, [&](ProtoEncoder &a) {
      string_or_iid(a, InternedStrings::kAnnotationNames, pf::kAnnotationNameIid, pf::kAnnotationName, valid_utf8(key));
      annotation_value(a, value);
    });
  }
}

void PerfettoWriter::emit(const ProtoEncoder &packet) {
  frame_.clear();
  frame_.bytes_field(pf::kTracePacket, packet.data());
  out_->write(frame_.data());
  ++packets_;
}

void PerfettoWriter::begin(const TraceInfo &info, const std::vector<Track> &tracks) {
  pid_ = info.pid;
  anchor_ = info.monotonic_anchor_ns;
  tracks_ = tracks;
  // Unique per process, so that the traces of several processes concatenate without clashes
  // (the pid, then a track's number in the low 20 bits; never 0, which means "no track"), and
  // short: every event repeats its track's uuid, 5 or 6 bytes as a varint where a full 64-bit
  // value takes 10.
  process_uuid_ = (static_cast<uint64_t>(info.pid) << 20) + 1;

  packet_.clear();
  packet_.varint_field(pf::kPacketTrustedSequenceId, kSequenceId);
  packet_.varint_field(pf::kPacketSequenceFlags, pf::kSeqIncrementalStateCleared);
  packet_.message_field(pf::kPacketTrackDescriptor, [&](ProtoEncoder &d) {
    d.varint_field(pf::kTrackUuid, process_uuid_);
    d.message_field(pf::kTrackProcess, [&](ProtoEncoder &p) {
      p.int_field(pf::kProcessPid, info.pid);
      p.bytes_field(pf::kProcessName, valid_utf8(info.process_name));
      if (!info.host.empty()) p.bytes_field(pf::kProcessLabels, valid_utf8("host " + info.host));
      if (info.rank >= 0) p.bytes_field(pf::kProcessLabels, "rank " + std::to_string(info.rank));
    });
  });
  emit(packet_);

  for (uint32_t i = 0; i < tracks_.size(); ++i) {
    const Track &t = tracks_[i];
    packet_.clear();
    packet_.varint_field(pf::kPacketTrustedSequenceId, kSequenceId);
    packet_.message_field(pf::kPacketTrackDescriptor, [&](ProtoEncoder &d) {
      d.varint_field(pf::kTrackUuid, track_uuid(i));
      if (t.kind == TrackKind::kThread) {
        d.message_field(pf::kTrackThread, [&](ProtoEncoder &th) {
          th.int_field(pf::kThreadPid, pid_);
          th.int_field(pf::kThreadTid, t.tid);
          th.bytes_field(pf::kThreadName, valid_utf8(t.name));
        });
        return;
      }
      d.bytes_field(pf::kTrackName, valid_utf8(t.name));
      if (t.kind != TrackKind::kGlobal) d.varint_field(pf::kTrackParentUuid, process_uuid_);
      if (t.kind == TrackKind::kCounter) {
        d.message_field(pf::kTrackCounter, [&](ProtoEncoder &c) {
          if (t.bytes_unit) {
            c.varint_field(pf::kCounterUnit, pf::kCounterUnitSizeBytes);
            c.bytes_field(pf::kCounterYAxisShareKey, "gpuleak.live_bytes");
          }
        });
      }
    });
    emit(packet_);
  }

  // The trace's own description, where a Perfetto user can see it: an instant at ts 0, written
  // in its place among the events (records from before the anchor come first).
  about_.name = "gpuleak_trace";
  about_.args = info.metadata;
  about_pending_ = true;
}

void PerfettoWriter::write_about(int64_t before_ts) {
  if (!about_pending_ || before_ts < 0) return;
  about_pending_ = false;
  track_event(0, pf::kTypeInstant, process_uuid_, &about_);
}

bool PerfettoWriter::end() {
  write_about(0);
  return true;
}

void PerfettoWriter::track_event(int64_t ts_ns, uint32_t type, uint64_t track_uuid, const Event *e) {
  ProtoEncoder &te = event_;
  te.clear();
  te.varint_field(pf::kEventType, type);
  te.varint_field(pf::kEventTrackUuid, track_uuid);
  if (e && type == pf::kTypeCounter) {
    te.int_field(pf::kEventCounterValue, static_cast<int64_t>(e->value));
  } else if (e) {
    if (e->category)
      string_or_iid(te, InternedStrings::kCategories, pf::kEventCategoryIids, pf::kEventCategories, e->category);
    if (!e->name.empty())
      string_or_iid(te, InternedStrings::kEventNames, pf::kEventNameIid, pf::kEventName, valid_utf8(e->name));
    annotations(te, pf::kEventDebugAnnotations, e->args);
    if (type == pf::kTypeSliceBegin) {
      for (uint64_t id : e->flows_out) te.fixed64_field(pf::kEventFlowIds, id);
      if (e->flow_in) te.fixed64_field(pf::kEventTerminatingFlowIds, e->flow_in);
    }
  }

  packet_.clear();
  // The capture's own clock: records from before the header's anchor keep their place.
  const int64_t floor = -static_cast<int64_t>(std::min<uint64_t>(anchor_, INT64_MAX));
  packet_.varint_field(pf::kPacketTimestamp, anchor_ + static_cast<uint64_t>(std::max(ts_ns, floor)));
  packet_.varint_field(pf::kPacketTrustedSequenceId, kSequenceId);
  // The definitions go in the packet that first uses them: every prefix of the file resolves.
  if (interned_.write_pending(packet_)) packet_.varint_field(pf::kPacketSequenceFlags, pf::kSeqNeedsIncrementalState);
  packet_.bytes_field(pf::kPacketTrackEvent, te.data());
  emit(packet_);
}

void PerfettoWriter::event(const Event &e) {
  write_about(e.ts_ns);
  // A process-wide instant belongs on the process' own track.
  const uint64_t track = e.phase == Phase::kInstant && e.scope == Scope::kProcess ? process_uuid_ : track_uuid(e.track);
  switch (e.phase) {
    case Phase::kComplete:
    case Phase::kBegin:
    case Phase::kAsyncBegin:
      return track_event(e.ts_ns, pf::kTypeSliceBegin, track, &e);
    case Phase::kCompleteEnd:
    case Phase::kEnd:
    case Phase::kAsyncEnd:
      return track_event(e.ts_ns, pf::kTypeSliceEnd, track, nullptr);
    case Phase::kInstant:
      return track_event(e.ts_ns, pf::kTypeInstant, track, &e);
    case Phase::kCounter:
      return track_event(e.ts_ns, pf::kTypeCounter, track, &e);
  }
}

}  // namespace gpuleak::output::trace
