#include "output/trace/perfetto_interning.h"

#include <functional>

#include "output/trace/perfetto_fields.h"

namespace gpuleak::output::trace {

namespace {

constexpr size_t kFilterSlots = size_t{1} << 16;

// InternedData's field for each table. Every entry message has the same shape: iid = 1, the
// string = 2 (EventName, EventCategory, DebugAnnotationName, InternedString).
constexpr uint32_t kTableField[InternedStrings::kTableCount] = {pf::kInternedEventNames, pf::kInternedEventCategories,
                                                                pf::kInternedAnnotationNames,
                                                                pf::kInternedAnnotationStringValues};

}  // namespace

InternedStrings::InternedStrings() : seen_(kFilterSlots) {}

uint64_t InternedStrings::iid(Table table, const std::string &s) {
  auto &entries = tables_[table];
  if (auto it = entries.find(s); it != entries.end()) {
    referenced_ = true;
    return it->second;
  }
  if (entries.size() >= kMaxEntries) return 0;
  // The table's number is mixed in so that a name and an equal value are told apart.
  const uint64_t hash = std::hash<std::string>{}(s) ^ (table + 1) * 0x9e3779b97f4a7c15ull;
  Sighting &slot = seen_[hash & (kFilterSlots - 1)];
  if (slot.hash != hash) slot = Sighting{hash, 0};
  if (slot.count++ < kInlineSightings) return 0;
  const uint64_t id = entries.size() + 1;  // iids start at 1 in each table
  entries.emplace(s, id);
  pending_.message_field(kTableField[table], [&](ProtoEncoder &entry) {
    entry.varint_field(pf::kInternedIid, id);
    entry.bytes_field(pf::kInternedString, s);
  });
  referenced_ = true;
  return id;
}

bool InternedStrings::write_pending(ProtoEncoder &packet) {
  if (!pending_.data().empty()) packet.bytes_field(pf::kPacketInternedData, pending_.data());
  pending_.clear();
  const bool referenced = referenced_;
  referenced_ = false;
  return referenced;
}

}  // namespace gpuleak::output::trace
