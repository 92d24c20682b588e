// The C side of the dlsym trampoline: look the symbol up for real, then hand out a wrapper when it
// is a driver entry point we track (proc_address.cpp decides which).
#include <dlfcn.h>

#include <link.h>

#include <atomic>
#include <cstring>

#include "shim/proc_address.h"
#include "shim/real_symbols.h"
#include "text/paths.h"

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

namespace {

struct Search {
  const char *prefix;  // basename prefix of the library family: "libcuda.so", "libcudart.so" ...
  const char *name;
  void *found = nullptr;
};

int search_loaded(dl_phdr_info *info, size_t, void *arg) {
  auto *s = static_cast<Search *>(arg);
  const char *path = info->dlpi_name;
  if (!path || !*path) return 0;
  if (text::basename_view(path).substr(0, std::strlen(s->prefix)) != s->prefix) return 0;
  // RTLD_NOLOAD: only a library that is already there, never a new load.
  void *handle = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
  if (!handle) return 0;
  s->found = real_dlsym(handle, s->name);
  dlclose(handle);
  return s->found ? 1 : 0;
}

const char *family_of(const char *name) {
  if (std::strncmp(name, "cupti", 5) == 0) return "libcupti.so";
  if (std::strncmp(name, "cuda", 4) == 0) return "libcudart.so";
  return "libcuda.so";
}

}  // namespace

void *next_symbol(const char *name) {
  if (void *fn = real_dlsym(RTLD_NEXT, name)) return fn;
  // The library may be loaded without RTLD_GLOBAL (a dlopen'ed extension that depends on it, or
  // ctypes): then RTLD_NEXT cannot see it, yet its users' calls reach our export through the
  // global scope. Find the loaded copy itself.
  Search s{family_of(name), name};
  dl_iterate_phdr(search_loaded, &s);
  return s.found;
}

}  // namespace gpuleak::shim
