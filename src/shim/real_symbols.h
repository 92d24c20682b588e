// The real dynamic loader, reached without passing through gpuleak's own dlsym (dlsym_hook.cpp).
#pragma once

namespace gpuleak::shim {

// glibc's dlsym, resolved with dlvsym on first use.
void *real_dlsym(void *handle, const char *name);
// The next definition of `name` after libgpuleak in the lookup order (the function we wrap), or
// the definition in an already loaded libcuda / libcudart / libcupti that is not in the global
// scope (loaded RTLD_LOCAL). nullptr when neither exists.
void *next_symbol(const char *name);

}  // namespace gpuleak::shim
