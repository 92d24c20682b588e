// Address spaces that must not be confused: a free matches the live allocation with the same
// address in the same space (a VMM handle may equal a device pointer value). One enum for both
// sides: the recorder keys its live table by the space a hook knows it was handed (core::Space),
// and every replay of a capture (the analysis' ledger, the trace's memory counters) derives the
// space from a record's kind (address_space_of). The values are never written to a capture.
#pragma once

#include <cstdint>

#include "format/capture_format.h"

namespace gpuleak::format {

enum class AddressSpace : uint8_t {
  kDevicePtr,  // device pointers, and VMM ranges while mapped (cuMemMap)
  kArray,      // CUarray and CUmipmappedArray handles
  kVmm,        // cuMemCreate's physical-memory handles
  kHost,       // pinned and registered host memory
  kNotOwned,   // replays only: imported memory, reserved ranges, unknown kinds (never counted)
  // Blocks inside a framework allocator's segments (format 1.3), matched among themselves only (a
  // block at a segment's start has the segment's address) and never counted as device memory.
  kPoolBlock,
  // The recorder only: what it must give a size back for at the free, though no replay counts it.
  kVirtual,  // cuMemAddressReserve ranges
  kPool,     // memory pools (cuMemPoolCreate)
};

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
