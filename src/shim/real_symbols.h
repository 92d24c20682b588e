// The real dynamic loader, reached without passing through gpuleak's own dlsym (dlsym_hook.cpp).
#pragma once

namespace gpuleak::shim {

// glibc's dlsym, resolved with dlvsym on first use.
void *real_dlsym(void *handle, const char *name);
// The next definition of `name` after libgpuleak in the lookup order (the function we wrap).
void *next_symbol(const char *name);

}  // namespace gpuleak::shim
