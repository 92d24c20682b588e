/* What GCC 12's C++ runtime takes from a newer glibc than the portable builds link against
 * (cmake/GpuleakSysrootToolchain.cmake: Debian 11, glibc 2.31). Debian's GCC was configured on
 * glibc 2.36, so its static archives (libstdc++.a, libgcc_eh.a) and its headers (<condition_variable>
 * waits through pthread_cond_clockwait) use symbols that glibc 2.17 lacks; each is defined here,
 * hidden, with the behaviour the runtime had before it used them. Linked as an object (never an
 * archive member, which libstdc++.a, linked last, could not pull) into the shim and the CLI, only
 * with GPULEAK_GLIBC_COMPAT. scripts/elf_versions.py, run on the wheel by
 * tests/packaging/wheel_test.sh, checks that nothing newer than the wheel's tag is left. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define GPULEAK_HIDDEN __attribute__((visibility("hidden")))

/* glibc 2.32: libstdc++ skips atomic reference counts while this is non-zero. Zero ("maybe more
 * than one thread") is always correct: the counts stay atomic, as they were before GCC 11. */
GPULEAK_HIDDEN char __libc_single_threaded = 0;

/* The kernel's random bytes, as glibc's own getentropy and arc4random take them: getrandom, a raw
 * syscall (glibc < 2.25 has no wrapper), else /dev/urandom on a kernel older than 3.17. */
static int gpuleak_random_bytes(void *buffer, size_t length) {
  size_t got = 0;
  while (got < length) {
    long n = syscall(SYS_getrandom, (char *)buffer + got, length - got, 0);
    if (n > 0) {
      got += (size_t)n;
    } else if (n < 0 && errno != EINTR) {
      int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
      if (fd < 0) return -1;
      while (got < length) {
        ssize_t r = read(fd, (char *)buffer + got, length - got);
        if (r <= 0 && !(r < 0 && errno == EINTR)) break;
        if (r > 0) got += (size_t)r;
      }
      close(fd);
      return got == length ? 0 : -1;
    }
  }
  return 0;
}

/* glibc 2.36: std::random_device's "arc4random" source (and its default where RDRAND is absent).
 * glibc's aborts when the kernel has no randomness to give; so does this one. */
GPULEAK_HIDDEN uint32_t arc4random(void) {
  uint32_t value = 0;
  if (gpuleak_random_bytes(&value, sizeof value) != 0) abort();
  return value;
}

/* glibc 2.25: std::random_device's "getentropy" source. At most 256 bytes, as glibc's. */
GPULEAK_HIDDEN int getentropy(void *buffer, size_t length) {
  if (length > 256) {
    errno = EIO;
    return -1;
  }
  return gpuleak_random_bytes(buffer, length);
}

/* glibc 2.35: the unwinder's lookup of the object that holds a code address, and its
 * PT_GNU_EH_FRAME. Before GCC 12, libgcc found both by walking dl_iterate_phdr (glibc 2.2.4),
 * which is what this does; the layout is glibc's struct dl_find_object. */
struct gpuleak_dl_find_object {
  unsigned long long dlfo_flags;
  void *dlfo_map_start;
  void *dlfo_map_end;
  struct link_map *dlfo_link_map;
  void *dlfo_eh_frame;
  unsigned long long dlfo_reserved[7];
};

struct gpuleak_find_state {
  uintptr_t pc;
  struct gpuleak_dl_find_object *out;
};

static int gpuleak_find_visit(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  struct gpuleak_find_state *state = data;
  uintptr_t low = UINTPTR_MAX, high = 0;
  const ElfW(Phdr) *eh_frame = NULL;
  int holds_pc = 0;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) *phdr = &info->dlpi_phdr[i];
    if (phdr->p_type == PT_GNU_EH_FRAME) eh_frame = phdr;
    if (phdr->p_type != PT_LOAD) continue;
    uintptr_t start = info->dlpi_addr + phdr->p_vaddr, end = start + phdr->p_memsz;
    if (state->pc >= start && state->pc < end) holds_pc = 1;
    if (start < low) low = start;
    if (end > high) high = end;
  }
  if (!holds_pc) return 0;
  state->out->dlfo_flags = 0;
  state->out->dlfo_map_start = (void *)low;
  state->out->dlfo_map_end = (void *)high;
  state->out->dlfo_link_map = NULL;  // libgcc reads only the eh_frame
  state->out->dlfo_eh_frame = eh_frame ? (void *)(info->dlpi_addr + eh_frame->p_vaddr) : NULL;
  return 1;
}

GPULEAK_HIDDEN int _dl_find_object(void *pc, struct gpuleak_dl_find_object *result) {
  struct gpuleak_find_state state = {(uintptr_t)pc, result};
  return dl_iterate_phdr(gpuleak_find_visit, &state) ? 0 : -1;
}

/* glibc 2.30: std::condition_variable::wait_for/wait_until on steady_clock (the capture writer's
 * and the NVML sampler's waits). The condition variables are default ones (CLOCK_REALTIME), so a
 * deadline on another clock is moved onto the realtime clock, as libstdc++ did before 2.30: a
 * wall-clock step during the wait lengthens or shortens it, and every caller re-checks its
 * predicate after a wake-up anyway. */
GPULEAK_HIDDEN int pthread_cond_clockwait(pthread_cond_t *cond, pthread_mutex_t *mutex, clockid_t clock,
                                          const struct timespec *deadline) {
  if (clock == CLOCK_REALTIME) return pthread_cond_timedwait(cond, mutex, deadline);
  struct timespec now, real;
  if (clock_gettime(clock, &now) != 0 || clock_gettime(CLOCK_REALTIME, &real) != 0) return EINVAL;
  long long ns = (long long)(deadline->tv_sec - now.tv_sec) * 1000000000LL + (deadline->tv_nsec - now.tv_nsec);
  if (ns < 0) ns = 0;
  ns += real.tv_nsec;
  real.tv_sec += (time_t)(ns / 1000000000LL);
  real.tv_nsec = (long)(ns % 1000000000LL);
  return pthread_cond_timedwait(cond, mutex, &real);
}

/* glibc 2.29: new versions of exp, log and pow (without the SVID error handling). The CLI's analysis
 * calls pow; linked with --wrap for each (tools/CMakeLists.txt), every call comes here and goes to
 * the version every glibc since 2.2.5 has, which returns the same values. */
extern double gpuleak_old_exp(double);
extern double gpuleak_old_log(double);
extern double gpuleak_old_pow(double, double);
__asm__(".symver gpuleak_old_exp,exp@GLIBC_2.2.5");
__asm__(".symver gpuleak_old_log,log@GLIBC_2.2.5");
__asm__(".symver gpuleak_old_pow,pow@GLIBC_2.2.5");
GPULEAK_HIDDEN double __wrap_exp(double x) { return gpuleak_old_exp(x); }
GPULEAK_HIDDEN double __wrap_log(double x) { return gpuleak_old_log(x); }
GPULEAK_HIDDEN double __wrap_pow(double x, double y) { return gpuleak_old_pow(x, y); }
