#include "perfetto_decoder.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "output/trace/perfetto_fields.h"
#include "trace_test_support.h"

namespace gpuleak::testing {

namespace pf = output::trace::pf;
using nlohmann::json;

namespace {

// The incremental state of the one packet sequence: InternedData field -> iid -> string.
class Reader {
 public:
  explicit Reader(PerfettoTrace *out) : out_(out) {}

  void packet(const std::vector<PbField> &packet) {
    ++out_->packets;
    const PbField *seq = pb_field(packet, pf::kPacketTrustedSequenceId);
    if (!seq || seq->value != 1) problem("a packet outside sequence 1");
    const PbField *flags = pb_field(packet, pf::kPacketSequenceFlags);
    const uint64_t f = flags ? flags->value : 0;
    if (f & pf::kSeqIncrementalStateCleared) {
      interned_.clear();
      valid_ = true;
    }
    if (out_->packets == 1 && !(f & pf::kSeqIncrementalStateCleared))
      problem("the first packet does not clear the incremental state");
    needs_state_ = f & pf::kSeqNeedsIncrementalState;
    // A reader takes in the packet's own definitions before its payload.
    if (const PbField *data = pb_field(packet, pf::kPacketInternedData)) define(pb_message(*data));
    if (const PbField *td = pb_field(packet, pf::kPacketTrackDescriptor)) track(pb_message(*td));
    if (const PbField *te = pb_field(packet, pf::kPacketTrackEvent)) {
      const PbField *ts = pb_field(packet, pf::kPacketTimestamp);
      if (!ts) problem("a track event without a timestamp");
      event(pb_message(*te), ts ? ts->value : 0);
    }
  }

 private:
  void problem(const std::string &what) {
    if (out_->problems.size() < 20) out_->problems.push_back("packet " + std::to_string(out_->packets) + ": " + what);
  }

  void define(const std::vector<PbField> &data) {
    if (!valid_) problem("interned data before any SEQ_INCREMENTAL_STATE_CLEARED");
    for (const PbField &entry_field : data) {
      auto entry = pb_message(entry_field);
      const PbField *iid = pb_field(entry, pf::kInternedIid);
      const PbField *str = pb_field(entry, pf::kInternedString);
      if (!iid || iid->value == 0 || !str) {
        problem("an interned entry without an iid or a string");
        continue;
      }
      auto &table = interned_[entry_field.number];
      if (table.count(iid->value)) problem("iid " + std::to_string(iid->value) + " defined twice");
      table[iid->value] = str->bytes;
      ++out_->definitions;
    }
  }

  // The string that an iid field (or else a text field) of `message` gives.
  std::string text(const std::vector<PbField> &message, uint32_t iid_field, uint32_t text_field, uint32_t table) {
    if (const PbField *t = pb_field(message, text_field)) {
      ++out_->inline_strings;
      return t->bytes;
    }
    const PbField *iid = pb_field(message, iid_field);
    return iid ? resolve(table, iid->value) : std::string();
  }

  std::string resolve(uint32_t table, uint64_t iid) {
    ++out_->iid_references;
    if (!needs_state_) problem("iid used in a packet without SEQ_NEEDS_INCREMENTAL_STATE");
    auto t = interned_.find(table);
    if (t == interned_.end() || !t->second.count(iid)) {
      problem("iid " + std::to_string(iid) + " of InternedData field " + std::to_string(table) +
              " used before its definition");
      return "<undefined iid>";
    }
    return t->second.at(iid);
  }

  json annotation_value(const std::vector<PbField> &a) {
    json dict, array;
    for (const PbField &f : a) {
      switch (f.number) {
        case pf::kAnnotationBool:
          return f.value != 0;
        case pf::kAnnotationUint:
          return f.value;
        case pf::kAnnotationInt:
          return static_cast<int64_t>(f.value);
        case pf::kAnnotationDouble: {
          double d;
          std::memcpy(&d, &f.value, sizeof d);
          return d;
        }
        case pf::kAnnotationPointer: {  // what the JSON spells as hex (Perfetto shows it so)
          char hex[24];
          std::snprintf(hex, sizeof hex, "0x%" PRIx64, f.value);
          return hex;
        }
        case pf::kAnnotationString:
          ++out_->inline_strings;
          return f.bytes;
        case pf::kAnnotationStringIid:
          return resolve(pf::kInternedAnnotationStringValues, f.value);
        case pf::kAnnotationDictEntries: {
          auto entry = pb_message(f);
          dict[name_of(entry)] = annotation_value(entry);
          break;
        }
        case pf::kAnnotationArrayValues:
          array.push_back(annotation_value(pb_message(f)));
          break;
        default:
          break;
      }
    }
    return !dict.is_null() ? dict : array;
  }

  std::string name_of(const std::vector<PbField> &a) {
    return text(a, pf::kAnnotationNameIid, pf::kAnnotationName, pf::kInternedAnnotationNames);
  }

  void track(const std::vector<PbField> &desc) {
    PerfettoTrace::Track &t = out_->tracks[pb_field(desc, pf::kTrackUuid)->value];
    if (const PbField *proc = pb_field(desc, pf::kTrackProcess)) {
      auto pd = pb_message(*proc);
      out_->process_pid = static_cast<int64_t>(pb_field(pd, pf::kProcessPid)->value);
      out_->process_name = t.name = pb_field(pd, pf::kProcessName)->bytes;
    }
    if (const PbField *th = pb_field(desc, pf::kTrackThread)) {
      auto td = pb_message(*th);
      t.pid = static_cast<int64_t>(pb_field(td, pf::kThreadPid)->value);
      t.tid = static_cast<int64_t>(pb_field(td, pf::kThreadTid)->value);
      t.name = pb_field(td, pf::kThreadName)->bytes;
    }
    if (const PbField *n = pb_field(desc, pf::kTrackName)) t.name = n->bytes;
    t.has_parent = pb_field(desc, pf::kTrackParentUuid) != nullptr;
    if (const PbField *c = pb_field(desc, pf::kTrackCounter)) {
      auto cd = pb_message(*c);
      const PbField *unit = pb_field(cd, pf::kCounterUnit);
      t.counter_bytes = unit && unit->value == pf::kCounterUnitSizeBytes;
    }
  }

  void event(const std::vector<PbField> &ev, uint64_t ts) {
    PerfettoTrace::Event e;
    e.ts = ts;
    e.type = pb_field(ev, pf::kEventType)->value;
    e.track = pb_field(ev, pf::kEventTrackUuid)->value;
    e.name = text(ev, pf::kEventNameIid, pf::kEventName, pf::kInternedEventNames);
    for (const PbField &c : pb_fields(ev, pf::kEventCategories)) {
      ++out_->inline_strings;
      e.categories.push_back(c.bytes);
    }
    for (const PbField &c : pb_fields(ev, pf::kEventCategoryIids))
      e.categories.push_back(resolve(pf::kInternedEventCategories, c.value));
    if (const PbField *v = pb_field(ev, pf::kEventCounterValue)) e.counter = static_cast<int64_t>(v->value);
    for (const PbField &a : pb_fields(ev, pf::kEventDebugAnnotations)) {
      auto ann = pb_message(a);
      e.args[name_of(ann)] = annotation_value(ann);
    }
    out_->events.push_back(std::move(e));
  }

  PerfettoTrace *out_;
  std::map<uint32_t, std::map<uint64_t, std::string>> interned_;
  bool valid_ = false;        // a SEQ_INCREMENTAL_STATE_CLEARED was seen
  bool needs_state_ = false;  // the current packet says it uses interned state
};

json annotations_of(const json &v) {
  if (v.is_null()) return "null";
  if ((v.is_object() || v.is_array()) && v.empty()) return nullptr;
  if (v.is_object()) {
    json out = json::object();
    for (const auto &[k, x] : v.items()) out[k] = annotations_of(x);
    return out;
  }
  if (v.is_array()) {
    json out = json::array();
    for (const json &x : v) out.push_back(annotations_of(x));
    return out;
  }
  return v;
}

}  // namespace

PerfettoTrace decode_perfetto(const std::string &bytes) {
  PerfettoTrace out;
  std::vector<PbField> trace;
  if (!pb_decode(bytes, &trace)) out.problems.push_back("not a protobuf message");
  Reader reader(&out);
  for (const PbField &p : trace) {
    if (p.number != pf::kTracePacket) {
      out.problems.push_back("a Trace field other than packet: " + std::to_string(p.number));
      continue;
    }
    reader.packet(pb_message(p));
  }
  return out;
}

json as_annotations(const json &args) { return args.is_null() ? json() : annotations_of(args); }

}  // namespace gpuleak::testing
