// Which address space an allocation of a given kind lives in: a free matches the live allocation
// with the same address in the same space (a VMM handle may equal a device pointer value).
// Shared by every replay of a capture (the analysis' ledger, the trace's memory counters).
#pragma once

#include <cstdint>

#include "format/capture_format.h"

namespace gpuleak::format {

// kPoolBlock: blocks inside a framework allocator's segments (format 1.3), matched among themselves
// only (a block at a segment's start has the segment's address) and never counted as device memory.
enum class AddressSpace : uint8_t { kDevicePtr, kArray, kVmm, kHost, kNotOwned, kPoolBlock };

inline AddressSpace address_space_of(uint8_t kind) {
  switch (static_cast<Kind>(kind)) {
    case Kind::kDevice:
    case Kind::kAsync:
    case Kind::kManaged:
    case Kind::kPitched:
      return AddressSpace::kDevicePtr;
    case Kind::kArray:
    case Kind::kMipmappedArray:
      return AddressSpace::kArray;
    case Kind::kVmm:
      return AddressSpace::kVmm;
    case Kind::kHostPinned:
    case Kind::kHostRegistered:
      return AddressSpace::kHost;
    case Kind::kPoolBlock:
      return AddressSpace::kPoolBlock;
    default:
      return AddressSpace::kNotOwned;  // imported, virtual ranges, unknown
  }
}

}  // namespace gpuleak::format
