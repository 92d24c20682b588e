// Handing out wrappers for driver entry points, however the program found them: dlsym() on
// libcuda, cuGetProcAddress / cuGetProcAddress_v2 (what cudart, static or shared, and
// cudaGetDriverEntryPoint use), or a direct call to an exported symbol (driver_exports.cpp).
#pragma once

#include <cstdint>

#include "shim/cuda_headers.h"

namespace gpuleak::shim {

// dlsym(handle, name) returned `fn`: the wrapper to return instead, or `fn` itself.
void *wrap_exported_symbol(const char *name, void *fn);

// cuGetProcAddress(symbol, version, flags) returned `fn`: the wrapper to return instead, or `fn`.
void *wrap_proc_address(const char *symbol, void *fn, int version, cuuint64_t flags);

// Counters for the doctor and tests: wrappers bound, and pointers left unwrapped because every
// slot of their entry point was taken.
uint64_t wrappers_bound();
uint64_t wrappers_exhausted();

// True when `fn` is one of libgpuleak's own exported driver functions (never wrap those twice).
bool is_own_export(const void *fn);

}  // namespace gpuleak::shim
