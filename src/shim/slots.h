// Wrapper slots: one distinct C function per real pointer handed out for an entry point.
//
// cuGetProcAddress can return several real implementations of one entry point (the legacy-stream
// and per-thread-stream variants measured on the H200, research/CAPTURE.md 1.7), and each wrapper
// must know which one to call. A wrapper therefore cannot be a single function with a flag: each
// real pointer is bound to its own slot, `entry<I>`, which calls the row's handler with it.
#pragma once

#include <array>
#include <atomic>
#include <utility>

#include "core/recorder.h"
#include "format/capture_format.h"
#include "shim/cuda_headers.h"
#include "shim/driver_handlers.h"
#include "shim/real_symbols.h"

namespace gpuleak::shim {

template <typename Row, typename Pfn = typename Row::Pfn>
struct Slots;

template <typename Row, typename... A>
struct Slots<Row, CUresult (*)(A...)> {
  static constexpr int kCount = 8;
  static inline std::atomic<void *> real[kCount];

  template <int I>
  static CUresult entry(A... a) {
    auto fn = reinterpret_cast<typename Row::Pfn>(real[I].load(std::memory_order_acquire));
    return Row::handler(fn, Row::api, a...);
  }

  // The wrapper bound to `fn` (the same slot for the same pointer), or nullptr when all slots
  // are taken (the caller then hands out `fn` unwrapped and counts it). Lock-free: a fork child
  // whose parent was binding on another thread finds no lock held for ever.
  static void *bind(void *fn) {
    for (int i = 0; i < kCount; ++i) {
      void *cur = real[i].load(std::memory_order_acquire);
      if (!cur && real[i].compare_exchange_strong(cur, fn, std::memory_order_acq_rel)) cur = fn;
      if (cur == fn) return reinterpret_cast<void *>(kEntries[i]);
    }
    return nullptr;
  }

  // Body of libgpuleak's exported symbol of the same name: wraps the next definition (libcuda's).
  static CUresult exported(A... a) {
    static std::atomic<void *> next{nullptr};
    void *fn = next.load(std::memory_order_acquire);
    if (!fn) {
      core::recorder_note_cuda_use();  // the first call of this export: say a bad setting now
      fn = next_symbol(Row::export_name);
      next.store(fn, std::memory_order_release);
    }
    if (!fn) return CUDA_ERROR_NOT_INITIALIZED;
    return Row::handler(reinterpret_cast<typename Row::Pfn>(fn), Row::api, a...);
  }

 private:
  using Entry = CUresult (*)(A...);
  template <int... I>
  static constexpr std::array<Entry, kCount> make(std::integer_sequence<int, I...>) {
    return {&entry<I>...};
  }
  static const std::array<Entry, kCount> kEntries;
};

// Constant-initialized (constexpr): no guard variable that a fork could leave taken.
template <typename Row, typename... A>
constexpr std::array<typename Slots<Row, CUresult (*)(A...)>::Entry, Slots<Row, CUresult (*)(A...)>::kCount>
    Slots<Row, CUresult (*)(A...)>::kEntries = make(std::make_integer_sequence<int, kCount>());

// One Row type per driver row of hooks.def.
#define GPULEAK_ROW_TYPE(EXPORT, BASE, MINV, MAXV, PTSZ, PFN, HANDLER, ...) \
  struct Row_##EXPORT {                                                     \
    using Pfn = PFN;                                                        \
    static constexpr const char *export_name = #EXPORT;                     \
    static constexpr format::Api api = format::Api::EXPORT;                 \
    static constexpr auto handler = &HANDLER;                               \
  };
GPULEAK_DRIVER_HOOKS(GPULEAK_ROW_TYPE)
#undef GPULEAK_ROW_TYPE

#define GPULEAK_EXPORTED(EXPORT) Slots<Row_##EXPORT>::exported

}  // namespace gpuleak::shim
