// The C side of the dlsym trampoline: look the symbol up for real, then hand out a wrapper when it
// is a driver entry point we track (proc_address.cpp decides which).
#include <dlfcn.h>

#include <atomic>

#include "shim/proc_address.h"
#include "shim/real_symbols.h"

using DlsymFn = void *(*)(void *, const char *);

// Read by the trampoline; hidden so the assembly reaches it PC-relative.
extern "C" {
__attribute__((visibility("hidden"))) DlsymFn gpuleak_real_dlsym_ptr = nullptr;
}

extern "C" __attribute__((visibility("hidden"))) DlsymFn gpuleak_resolve_real_dlsym() {
  if (gpuleak_real_dlsym_ptr) return gpuleak_real_dlsym_ptr;
  // glibc 2.34 moved dlsym into libc (GLIBC_2.34); older ones only have the 2.2.5 version.
  void *fn = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (!fn) fn = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  __atomic_store_n(&gpuleak_real_dlsym_ptr, reinterpret_cast<DlsymFn>(fn), __ATOMIC_RELEASE);
  return gpuleak_real_dlsym_ptr;
}

extern "C" __attribute__((visibility("hidden"))) void *gpuleak_dlsym_dispatch(void *handle, const char *name) {
  DlsymFn real = gpuleak_resolve_real_dlsym();
  if (!real) return nullptr;
  void *fn = real(handle, name);
  if (!fn || !name || name[0] != 'c' || name[1] != 'u') return fn;
  return gpuleak::shim::wrap_exported_symbol(name, fn);
}

namespace gpuleak::shim {

void *real_dlsym(void *handle, const char *name) {
  DlsymFn real = gpuleak_resolve_real_dlsym();
  return real ? real(handle, name) : nullptr;
}

void *next_symbol(const char *name) { return real_dlsym(RTLD_NEXT, name); }

}  // namespace gpuleak::shim
