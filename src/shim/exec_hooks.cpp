// The exec family: exec replaces the process image without running exit handlers, so the events
// still in the thread buffers would be lost (the capture would end up to 20 ms short). Each
// wrapper flushes them synchronously, then calls the real function; if exec fails and returns,
// the capture goes on. Every glibc exec function is interposed, because glibc calls its internal
// __execve between them (execvp never reaches our execve). posix_spawn and system() are left
// alone: they do not replace this image.
//
// exec is async-signal-safe and is what a vfork child calls: the flush is signal-safe too
// (recorder_before_exec), and does nothing in a child that is not the capture's process.
#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>

#include "core/recorder.h"
#include "shim/preload.h"
#include "shim/real_symbols.h"

extern "C" char **environ;

namespace gpuleak::shim {

namespace {

using Execve = int (*)(const char *, char *const[], char *const[]);
using Execv = int (*)(const char *, char *const[]);
using Fexecve = int (*)(int, char *const[], char *const[]);
using Execveat = int (*)(int, const char *, char *const[], char *const[], int);

struct RealExec {
  Execve execve, execvpe;
  Execv execv, execvp;
  Fexecve fexecve;
  Execveat execveat;  // glibc 2.34 and later
};
RealExec g_real{};

template <typename Fn>
Fn next(const char *name) {
  return reinterpret_cast<Fn>(real_dlsym(RTLD_NEXT, name));
}

// Calls the real exec with the capture flushed; returns only when exec failed.
template <typename Call>
int around_exec(Call call) {
  if (!g_real.execve) resolve_exec_functions();  // exec before our constructor ran: not signal-safe, but rare
  bool held = core::recorder_before_exec();
  int r = call();
  if (held) {
    int saved = errno;
    core::recorder_after_failed_exec();
    errno = saved;
  }
  return r;
}

int missing() {
  errno = ENOSYS;
  return -1;
}

// The argument list of execl, execle and execlp: `first` and what follows, up to the null.
#define GPULEAK_COLLECT_ARGS(first, argv)      \
  size_t count_ = 1;                           \
  {                                            \
    va_list ap;                                \
    va_start(ap, first);                       \
    while (va_arg(ap, const char *)) ++count_; \
    va_end(ap);                                \
  }                                            \
  const char *argv[count_ + 1];                \
  argv[0] = first;                             \
  va_list ap_;                                 \
  va_start(ap_, first);                        \
  for (size_t i_ = 1; i_ <= count_; ++i_) argv[i_] = va_arg(ap_, const char *);

}  // namespace

void resolve_exec_functions() {
  g_real.execvpe = next<Execve>("execvpe");
  g_real.execv = next<Execv>("execv");
  g_real.execvp = next<Execv>("execvp");
  g_real.fexecve = next<Fexecve>("fexecve");
  g_real.execveat = next<Execveat>("execveat");
  __atomic_store_n(&g_real.execve, next<Execve>("execve"), __ATOMIC_RELEASE);
}

}  // namespace gpuleak::shim

using gpuleak::shim::around_exec;
using gpuleak::shim::g_real;
using gpuleak::shim::missing;

#define GPULEAK_API extern "C" __attribute__((visibility("default")))

GPULEAK_API int execve(const char *path, char *const argv[], char *const envp[]) {
  return around_exec([&] { return g_real.execve ? g_real.execve(path, argv, envp) : missing(); });
}
GPULEAK_API int execv(const char *path, char *const argv[]) {
  return around_exec([&] { return g_real.execv ? g_real.execv(path, argv) : missing(); });
}
GPULEAK_API int execvp(const char *file, char *const argv[]) {
  return around_exec([&] { return g_real.execvp ? g_real.execvp(file, argv) : missing(); });
}
GPULEAK_API int execvpe(const char *file, char *const argv[], char *const envp[]) {
  return around_exec([&] { return g_real.execvpe ? g_real.execvpe(file, argv, envp) : missing(); });
}
GPULEAK_API int fexecve(int fd, char *const argv[], char *const envp[]) {
  return around_exec([&] { return g_real.fexecve ? g_real.fexecve(fd, argv, envp) : missing(); });
}
GPULEAK_API int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags) {
  return around_exec([&] { return g_real.execveat ? g_real.execveat(dirfd, path, argv, envp, flags) : missing(); });
}

// The variadic forms, turned into the vector forms above (on the stack: no malloc).
GPULEAK_API int execl(const char *path, const char *arg, ...) {
  GPULEAK_COLLECT_ARGS(arg, argv);
  va_end(ap_);
  return execve(path, const_cast<char *const *>(argv), environ);
}
GPULEAK_API int execlp(const char *file, const char *arg, ...) {
  GPULEAK_COLLECT_ARGS(arg, argv);
  va_end(ap_);
  return execvpe(file, const_cast<char *const *>(argv), environ);
}
GPULEAK_API int execle(const char *path, const char *arg, ...) {
  GPULEAK_COLLECT_ARGS(arg, argv);
  char *const *envp = va_arg(ap_, char *const *);  // after the null that ends the arguments
  va_end(ap_);
  return execve(path, const_cast<char *const *>(argv), envp);
}
