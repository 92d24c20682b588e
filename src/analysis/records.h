// What every stage of the analysis asks of one memory record (its address space, device, time,
// the API named, whether it allocated owned memory), and the small keys records are found by.
// Private to src/analysis.
#pragma once

#include <cstdint>
#include <limits>

#include "analysis/flat_map.h"
#include "format/address_space.h"
#include "format/capture_format.h"

namespace gpuleak::analysis::detail {

inline constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

// Address spaces a free is matched in (a VMM handle may equal a device pointer value).
using Space = format::AddressSpace;
inline Space space_of(uint8_t kind) { return format::address_space_of(kind); }
inline bool on_device(Space s) { return s == Space::kDevicePtr || s == Space::kArray || s == Space::kVmm; }
inline int device_of(int16_t device) { return device < 0 ? 0 : device; }
// Monotonic time -> ns since the run's start (clamped at 0).
inline uint64_t since_start(uint64_t ts, uint64_t anchor) { return ts > anchor ? ts - anchor : 0; }
// The API name the program called, as advice sentences show it (advice_text.cpp api_text).
inline uint16_t api_label(const format::MemoryRecord &r) {
  return (r.flags & format::kFlagRuntimeLabel) && r.runtime_api != 0 ? r.runtime_api : r.api;
}
inline bool owned_alloc(const format::MemoryRecord &r) {
  return r.op == static_cast<uint8_t>(format::Op::kAlloc) && r.result == 0 &&
         !(r.flags & format::kFlagGraphReservation) && space_of(r.kind) != Space::kNotOwned;
}
// Stream-ordered calls return at once; everything else may wait for the device.
inline bool stream_ordered(const format::MemoryRecord &r) {
  switch (static_cast<format::Api>(r.api)) {
    case format::Api::cuMemAllocAsync:
    case format::Api::cuMemAllocAsync_ptsz:
    case format::Api::cuMemAllocFromPoolAsync:
    case format::Api::cuMemAllocFromPoolAsync_ptsz:
    case format::Api::cuMemFreeAsync:
    case format::Api::cuMemFreeAsync_ptsz:
      return true;
    default:
      return r.kind == static_cast<uint8_t>(format::Kind::kAsync);
  }
}
inline bool successful_map(const format::MemoryRecord &r) {
  return r.op == static_cast<uint8_t>(format::Op::kMap) && r.result == 0;
}

inline bool is_free(const format::MemoryRecord &r) { return r.op == static_cast<uint8_t>(format::Op::kFree); }

struct U64Hash {
  uint64_t operator()(uint64_t k) const { return mix64(k); }
};
inline uint64_t site_key(uint32_t stack_id, uint32_t py_stack_id) {
  return static_cast<uint64_t>(stack_id) << 32 | py_stack_id;
}

}  // namespace gpuleak::analysis::detail
