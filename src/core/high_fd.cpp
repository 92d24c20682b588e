#include "core/high_fd.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace gpuleak::core {

int move_high(int fd) {
  if (fd < 0) return fd;
  int saved = errno;
  rlimit lim{};
  rlim_t soft = getrlimit(RLIMIT_NOFILE, &lim) == 0 ? lim.rlim_cur : 1024;
  if (soft == RLIM_INFINITY || soft > 1024) soft = 1024;
  int target = soft > 64 ? static_cast<int>(soft) - 24 : static_cast<int>(soft) / 2;
  int result = fd;
  if (fd < target) {
    int high = fcntl(fd, F_DUPFD_CLOEXEC, target);
    if (high >= 0) {
      close(fd);
      result = high;
    }
  }
  errno = saved;
  return result;
}

namespace {

// What the library's pipe2 and pipe slots are pointed at. The ends share their open file
// description with the numbers pipe2 returned, so O_NONBLOCK stays; both are close-on-exec.
int pipe2_high(int fds[2], int flags) {
  int r = pipe2(fds, flags);
  if (r == 0) {
    fds[0] = move_high(fds[0]);
    fds[1] = move_high(fds[1]);
  }
  return r;
}
int pipe_high(int fds[2]) { return pipe2_high(fds, 0); }

#if defined(__x86_64__)

struct Relro {
  ElfW(Addr) bias;
  uintptr_t begin = 0, end = 0;
};

int find_relro(dl_phdr_info *info, size_t, void *arg) {
  auto *r = static_cast<Relro *>(arg);
  if (info->dlpi_addr != r->bias) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO) {
      r->begin = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
      r->end = r->begin + info->dlpi_phdr[i].p_memsz;
    }
  return 1;
}

// Writes `fn` into the slot; a slot under RELRO (full RELRO, -z now) is made writable for the
// write and read-only again after it.
bool write_slot(ElfW(Addr) bias, uintptr_t slot, void *fn) {
  Relro relro{bias};
  dl_iterate_phdr(find_relro, &relro);
  bool protected_slot = slot >= relro.begin && slot < relro.end;
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  void *start = reinterpret_cast<void *>(slot & ~(page - 1));
  if (protected_slot && mprotect(start, page, PROT_READ | PROT_WRITE) != 0) return false;
  __atomic_store_n(reinterpret_cast<void **>(slot), fn, __ATOMIC_RELEASE);
  if (protected_slot) mprotect(start, page, PROT_READ);
  return true;
}

#endif

}  // namespace

bool keep_pipes_high(void *handle) {
#if defined(__x86_64__)
  link_map *lm = nullptr;
  if (!handle || dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_ld) return false;
  // The loader has relocated most d_ptr values in place on this platform; an unrelocated one is
  // an offset below the load address.
  const ElfW(Addr) bias = lm->l_addr;
  auto at = [bias](ElfW(Addr) p) { return p < bias ? p + bias : p; };
  const ElfW(Sym) *symtab = nullptr;
  const char *strtab = nullptr;
  const ElfW(Rela) * tables[2] = {nullptr, nullptr};
  size_t sizes[2] = {0, 0};
  for (const ElfW(Dyn) *d = lm->l_ld; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_SYMTAB:
        symtab = reinterpret_cast<const ElfW(Sym) *>(at(d->d_un.d_ptr));
        break;
      case DT_STRTAB:
        strtab = reinterpret_cast<const char *>(at(d->d_un.d_ptr));
        break;
      case DT_JMPREL:
        tables[0] = reinterpret_cast<const ElfW(Rela) *>(at(d->d_un.d_ptr));
        break;
      case DT_PLTRELSZ:
        sizes[0] = d->d_un.d_val;
        break;
      case DT_RELA:
        tables[1] = reinterpret_cast<const ElfW(Rela) *>(at(d->d_un.d_ptr));
        break;
      case DT_RELASZ:
        sizes[1] = d->d_un.d_val;
        break;
      default:
        break;
    }
  }
  if (!symtab || !strtab) return false;
  bool found = false;
  for (int t = 0; t < 2; ++t) {
    if (!tables[t]) continue;
    for (size_t i = 0; i < sizes[t] / sizeof(ElfW(Rela)); ++i) {
      const ElfW(Rela) &r = tables[t][i];
      const unsigned type = ELF64_R_TYPE(r.r_info);
      if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) continue;
      const char *name = strtab + symtab[ELF64_R_SYM(r.r_info)].st_name;
      void *fn = std::strcmp(name, "pipe2") == 0  ? reinterpret_cast<void *>(&pipe2_high)
                 : std::strcmp(name, "pipe") == 0 ? reinterpret_cast<void *>(&pipe_high)
                                                  : nullptr;
      if (fn && write_slot(bias, bias + r.r_offset, fn)) found = true;
    }
  }
  return found;
#else
  (void)handle;
  return false;
#endif
}

}  // namespace gpuleak::core
