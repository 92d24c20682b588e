// What every driver hook does around the real call, so that each hook is a few lines: the
// re-entry guard, the entry timestamp, and hand-off of the facts to the recorder (its hot path
// inline, core/hot_path.h).
#pragma once

#include <type_traits>

#include "core/clock.h"
#include "core/hot_path.h"
#include "core/recorder.h"
#include "shim/cuda_headers.h"
#include "shim/driver_probe.h"

namespace gpuleak::shim {

using core::Space;
using format::Api;
using format::Kind;
using format::Op;

class Hook {
 public:
  explicit Hook(Api api, core::Timing timing = core::Timing::kCall) : active_(core::hook_enter()) {
    facts_.api = api;
    facts_.timing = timing;
    if (active_ && timing != core::Timing::kEnd) facts_.start = core::clock_read();
  }
  ~Hook() {
    if (active_) core::hook_leave();
  }
  Hook(const Hook &) = delete;
  Hook &operator=(const Hook &) = delete;

  // False: forward the call and record nothing (tracking off, or we are inside another hook).
  explicit operator bool() const { return active_; }

  // An allocation-type call returned `r`.
  __attribute__((always_inline)) void alloc(CUresult r, Op op, Kind kind, Space space, uint64_t address, uint64_t size,
                                            uint64_t stream = 0, uint64_t aux = 0,
                                            int16_t device = core::CallFacts::kQueryDevice, uint16_t flags = 0) {
    fill(r, op, kind, address, size, stream, aux, device_or_current(device), flags);
    core::hot::record_alloc(facts_, space);
  }

  // Frees: call before the real free (see core::begin_free), then freed() with its result.
  __attribute__((always_inline)) void freeing(Space space, uint64_t address) {
    space_ = space;
    facts_.address = address;
    pending_ = core::hot::begin_free();
  }
  __attribute__((always_inline)) void freed(CUresult r, Kind kind, uint64_t stream = 0, uint16_t flags = 0,
                                            Op op = Op::kFree) {
    fill(r, op, kind, facts_.address, 0, stream, 0, core::CallFacts::kQueryDevice, flags);
    core::hot::end_free(pending_, facts_, space_);
  }

  // Calls with no address of their own (pool trims, context resets, unmaps).
  void event(CUresult r, Op op, Kind kind, uint64_t address, uint64_t size, uint64_t aux = 0,
             int16_t device = core::CallFacts::kQueryDevice) {
    fill(r, op, kind, address, size, 0, aux, device_or_current(device), 0);
    core::record_event(facts_);
  }

 private:
  // The device a call named, else the calling thread's current one, asked here, straight from the
  // driver (a synchronous call's duration, read after it, includes this query: ~10 ns on the H200).
  // Frees need none: theirs is the allocation's, which the reader pairs them with.
  static int16_t device_or_current(int16_t device) {
    return device == core::CallFacts::kQueryDevice ? static_cast<int16_t>(current_device()) : device;
  }

  void fill(CUresult r, Op op, Kind kind, uint64_t address, uint64_t size, uint64_t stream, uint64_t aux,
            int16_t device, uint16_t flags) {
    facts_.result = static_cast<int32_t>(r);
    facts_.op = op;
    facts_.kind = kind;
    facts_.address = address;
    facts_.size = size;
    facts_.stream = stream;
    facts_.aux = aux;
    facts_.device = device;
    facts_.flags = flags;
  }

  bool active_;
  core::CallFacts facts_{};
  core::PendingFree pending_{};
  Space space_ = Space::kDevicePtr;
};

inline uint64_t addr(CUdeviceptr p) { return static_cast<uint64_t>(p); }
inline uint64_t addr(const void *p) { return reinterpret_cast<uintptr_t>(p); }
template <typename T>
inline uint64_t handle(T h) {  // opaque CUDA handles (pointers or integers) as capture addresses
  if constexpr (std::is_pointer_v<T>)
    return reinterpret_cast<uintptr_t>(h);
  else
    return static_cast<uint64_t>(h);
}

}  // namespace gpuleak::shim
