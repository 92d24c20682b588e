#include "shim/proc_address.h"

#include <atomic>
#include <cstring>

#include "core/recorder.h"
#include "log/log.h"
#include "shim/preload.h"
#include "shim/slots.h"

namespace gpuleak::shim {

namespace {

struct RowInfo {
  const char *export_name;
  const char *base;
  int min_version;
  int max_version;  // exclusive; 0 = none
  bool ptsz;
  void *(*bind)(void *);
};

#define GPULEAK_ROW_INFO(EXPORT, BASE, MINV, MAXV, PTSZ, PFN, HANDLER, ...) \
  {#EXPORT, BASE, MINV, MAXV, PTSZ, &Slots<Row_##EXPORT>::bind},
const RowInfo kRows[] = {GPULEAK_DRIVER_HOOKS(GPULEAK_ROW_INFO)};
#undef GPULEAK_ROW_INFO

std::atomic<uint64_t> g_bound{0};
std::atomic<uint64_t> g_exhausted{0};

// `how`: where the program got the pointer from (GPULEAK_LOG=debug says so for each hook).
void *bind(const RowInfo &row, void *fn, const char *how, int version) {
  void *wrapper = row.bind(fn);
  if (!wrapper) {
    g_exhausted.fetch_add(1, std::memory_order_relaxed);
    GPULEAK_LOG_DEBUG("hook %s via %s (version %d): no wrapper slot left, calls through it are not seen",
                      row.export_name, how, version);
    return fn;
  }
  g_bound.fetch_add(1, std::memory_order_relaxed);
  GPULEAK_LOG_DEBUG("hook %s via %s (version %d): %p -> wrapper %p", row.export_name, how, version, fn, wrapper);
  return wrapper;
}

const RowInfo *find_proc_row(const char *symbol, int version, bool want_ptsz) {
  const RowInfo *fallback = nullptr;
  for (const RowInfo &row : kRows) {
    if (std::strcmp(row.base, symbol) != 0 || version < row.min_version ||
        (row.max_version && version >= row.max_version))
      continue;
    if (row.ptsz == want_ptsz) return &row;
    if (!row.ptsz) fallback = &row;  // entry points without a per-thread variant
  }
  return want_ptsz ? fallback : nullptr;
}

}  // namespace

bool is_own_export(const void *fn) {
  auto p = reinterpret_cast<uintptr_t>(fn);
  auto [lo, hi] = own_text_range();
  return p >= lo && p < hi;
}

// A driver or runtime entry point ("cuInit", "cudaMalloc"), not libc's "cuserid".
bool is_cuda_name(const char *name) { return (name[2] >= 'A' && name[2] <= 'Z') || std::strncmp(name, "cuda", 4) == 0; }

void *wrap_exported_symbol(const char *name, void *fn) {
  if (is_cuda_name(name)) core::recorder_note_cuda_use();
  if (!wrapping_enabled()) return fn;
  // dlsym(RTLD_DEFAULT, "cuMemAlloc_v2") finds our export first; without libcuda behind it, the
  // honest answer is the one the program would get without us: not found.
  if (is_own_export(fn)) return next_symbol(name) ? fn : nullptr;
  for (const RowInfo &row : kRows)
    if (std::strcmp(row.export_name, name) == 0) return bind(row, fn, "dlsym", 0);
  return fn;
}

void *wrap_proc_address(const char *symbol, void *fn, int version, cuuint64_t flags) {
  core::recorder_note_cuda_use();
  if (!wrapping_enabled() || is_own_export(fn)) return fn;
  const RowInfo *row = find_proc_row(symbol, version, (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0);
  return row ? bind(*row, fn, "cuGetProcAddress", version) : fn;
}

uint64_t wrappers_bound() { return g_bound.load(); }
uint64_t wrappers_exhausted() { return g_exhausted.load(); }

CUresult on_get_proc_address_v2(PFN_cuGetProcAddress_v12000 real, ApiId, const char *symbol, void **pfn, int version,
                                cuuint64_t flags, CUdriverProcAddressQueryResult *status) {
  CUresult r = real(symbol, pfn, version, flags, status);
  if (r == CUDA_SUCCESS && symbol && pfn && *pfn) *pfn = wrap_proc_address(symbol, *pfn, version, flags);
  return r;
}

CUresult on_get_proc_address_v1(PFN_cuGetProcAddress_v11030 real, ApiId, const char *symbol, void **pfn, int version,
                                cuuint64_t flags) {
  CUresult r = real(symbol, pfn, version, flags);
  if (r == CUDA_SUCCESS && symbol && pfn && *pfn) *pfn = wrap_proc_address(symbol, *pfn, version, flags);
  return r;
}

}  // namespace gpuleak::shim
