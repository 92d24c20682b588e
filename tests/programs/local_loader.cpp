// local_loader LIB: dlopen(LIB, RTLD_NOW | RTLD_LOCAL) and call its local_alloc_and_free().
// Exit 0 when the allocation and the free succeeded.
#include <dlfcn.h>

#include <cstdio>

int main(int argc, char** argv) {
    if (argc < 2) return 2;
    void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        std::fprintf(stderr, "%s\n", dlerror());
        return 2;
    }
    auto fn = reinterpret_cast<int (*)()>(dlsym(lib, "local_alloc_and_free"));
    int r = fn ? fn() : 3;
    if (r) std::fprintf(stderr, "local_alloc_and_free failed: %d\n", r);
    return r;
}
