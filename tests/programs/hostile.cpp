// hostile MODE [ARGS]: a program that does what real programs do to their process and that a
// preloaded profiler must survive unnoticed (tests/safety). Modes:
//   exit-in-signal         a SIGALRM handler calls _exit(3) while main loops in malloc/free
//   close-fds FILE [ERR]   closes 3..1023 (first putting its own file ERR on descriptor 2), then
//                          writes 12 bytes to each of its own FILE0..FILE7; allocates on
//   dup2-capture FILE      dup2s its own FILE over the capture's descriptor; allocates on
//   sigchld-ignore         SIGCHLD = SIG_IGN, leaks 1 MiB per iteration, exits 0
//   sigchld-handler        a SIGCHLD handler that prints "SIGCHLD"; leaks the same, exits 0
//   exec HOW               101 allocations, then exec /bin/true (HOW: execl, execv, execvp, execlp),
//                          or (HOW: fails) an exec that fails, then 20 allocations more and exit 0
//   die-after-first HOW    one allocation, then dies (HOW: kill, abort)
//   fault KIND AT FILE     20 iterations of allocate / print / write a line to FILE; at iteration
//                          AT dies by KIND (kill, segv, term, abort, none)
//   fds                    allocates (through frames with and without CFI), then prints each
//                          open descriptor from 3 to 899 as "N KIND" (KIND: pipe, file, ...)
//   close-reopen IN OUT    allocates, closes 3..1023 but the capture's descriptor, opens IN and
//                          OUT on 3 and 4, allocates from a new thread through frames without
//                          CFI, copies IN to OUT; exits 29 if a descriptor it did not open
//                          appeared in 5..899
//   chdir-leak DIR         one allocation, chdir DIR, then the leak of sigchld-ignore; exits 0
//   end HOW                3 allocations freed, 5 of 1 MiB kept, then at once HOW: _exit (status
//                          0), abort, exec (/bin/true) or return
//   pending-sigpipe        blocks SIGPIPE and raises it, allocates, then prints "pending" if
//                          SIGPIPE is still pending, "gone" if not
//   sigpipe-disposition    prints "default" or "ignored": SIGPIPE's disposition as it started
//   clean-wait MS          allocates and frees for MS milliseconds, exits 0 (no leak)
//   swap-out DIR OTHER     leaks; midway renames DIR to DIR.moved and puts a symlink to OTHER
//                          at DIR; exits 0
#include <cuda_runtime_api.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "prog_common.h"

extern "C" int nocfi_allocate(int depth, size_t bytes);  // hostile_nocfi.cpp: frames without CFI

namespace {

// Not inlined, extern "C": the site must show up by name in the report.
extern "C" __attribute__((noinline)) void *allocate_first(size_t bytes) {
  void *p = nullptr;
  CHECK_CUDA(cudaMalloc(&p, bytes));
  asm volatile("" ::: "memory");
  return p;
}

void allocate_some(int n) {
  for (int i = 0; i < n; ++i) {
    void *p = nullptr;
    CHECK_CUDA(cudaMalloc(&p, 4096));
    CHECK_CUDA(cudaFree(p));
  }
}

void write_all(int fd, const char *text) {
  size_t n = std::strlen(text);
  if (write(fd, text, n) != static_cast<ssize_t>(n)) std::exit(20);
}

// Allocations spread over ~150 ms: the shim's writer flushes several times meanwhile.
void keep_allocating() {
  for (int i = 0; i < 15; ++i) {
    allocate_some(20);
    usleep(10000);
  }
}

void on_alarm(int) { _exit(3); }

int exit_in_signal() {
  allocate_first(1 << 20);  // the capture runs
  signal(SIGALRM, on_alarm);
  struct itimerval t {};
  t.it_value.tv_usec = 1000 + (getpid() % 19) * 1000;  // 1-19 ms: a different moment each run
  setitimer(ITIMER_REAL, &t, nullptr);
  std::vector<void *> held(64, nullptr);
  for (unsigned i = 0;; ++i) {
    unsigned k = i % held.size();
    std::free(held[k]);
    held[k] = std::malloc(1100 + (i * 7919) % 60000);  // past the tcache: the arena lock is taken
    if (i % 64 == 0) allocate_some(1);
  }
}

int close_fds(const char *file, const char *stderr_file) {
  allocate_some(10);
  if (*stderr_file) {  // descriptor 2 becomes a file of the program's (gpuleak must not write there)
    close(2);
    if (open(stderr_file, O_WRONLY | O_CREAT | O_TRUNC, 0644) != 2) return 27;
  }
  for (int fd = 3; fd < 1024; ++fd) close(fd);
  int own[8];
  for (int i = 0; i < 8; ++i) {  // the low numbers again, one of them the capture's old one
    own[i] = open((std::string(file) + std::to_string(i)).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (own[i] < 0) return 21;
    write_all(own[i], "hello world\n");
  }
  keep_allocating();
  for (int fd : own) close(fd);
  return 0;
}

int capture_fd() {
  DIR *d = opendir("/proc/self/fd");
  int found = -1;
  while (dirent *e = d ? readdir(d) : nullptr) {
    char link[4096] = {0};
    std::string path = std::string("/proc/self/fd/") + e->d_name;
    ssize_t n = readlink(path.c_str(), link, sizeof link - 1);
    if (n > 8 && std::strcmp(link + n - 8, ".gpuleak") == 0) found = std::atoi(e->d_name);
  }
  if (d) closedir(d);
  return found;
}

int dup2_capture(const char *file) {
  allocate_some(10);
  int cap = capture_fd();
  if (cap < 0) return 22;
  int own = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (own < 0 || dup2(own, cap) != cap) return 23;
  write_all(cap, "hello world\n");
  keep_allocating();
  return 0;
}

void on_child(int) { write_all(1, "SIGCHLD\n"); }

// The shape `gpuleak report` calls a leak: 1 MiB kept per iteration, a temporary freed.
void leak_in_a_loop() {
  for (int i = 0; i < 20; ++i) {
    void *tmp = nullptr;
    CHECK_CUDA(cudaMalloc(&tmp, 4u << 20));
    allocate_first(1u << 20);
    CHECK_CUDA(cudaFree(tmp));
  }
}

int exec_true(const char *how) {
  for (int i = 0; i < 101; ++i) allocate_first(1 << 10);  // all kept
  char *argv[] = {const_cast<char *>("true"), nullptr};
  if (!std::strcmp(how, "execl")) execl("/bin/true", "true", static_cast<char *>(nullptr));
  if (!std::strcmp(how, "execv")) execv("/bin/true", argv);
  if (!std::strcmp(how, "execvp")) execvp("true", argv);
  if (!std::strcmp(how, "execlp")) execlp("true", "true", static_cast<char *>(nullptr));
  if (!std::strcmp(how, "fails")) {  // exec returns: the program (and its capture) go on
    execl("/nonexistent/program", "program", static_cast<char *>(nullptr));
    for (int i = 0; i < 20; ++i) allocate_first(1 << 10);
    usleep(50000);
    return 0;
  }
  return 24;
}

int die_after_first(const char *how) {
  allocate_first(1 << 20);
  if (!std::strcmp(how, "abort")) std::abort();
  raise(SIGKILL);
  return 25;
}

int fault(const char *kind, int at, const char *file) {
  FILE *own = std::fopen(file, "w");
  if (!own) return 26;
  std::vector<void *> kept;
  for (int i = 0; i < 20; ++i) {
    if (i == at) {
      std::fflush(stdout);
      std::fflush(own);
      if (!std::strcmp(kind, "kill")) raise(SIGKILL);
      if (!std::strcmp(kind, "segv")) *static_cast<volatile int *>(nullptr) = 1;
      if (!std::strcmp(kind, "term")) raise(SIGTERM);
      if (!std::strcmp(kind, "abort")) std::abort();
    }
    kept.push_back(allocate_first(1 << 16));
    allocate_some(3);
    std::printf("iteration %d\n", i);
    std::fprintf(own, "line %d\n", i);
    usleep(2000);
  }
  std::fclose(own);
  return 0;
}

// What a descriptor is, from /proc/self/fd: "pipe", "socket", "file", "dir", "other".
std::string fd_kind(int fd) {
  char link[4096] = {0};
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  ssize_t n = readlink(path.c_str(), link, sizeof link - 1);
  if (n <= 0) return "gone";
  std::string target(link, static_cast<size_t>(n));
  if (target.rfind("pipe:", 0) == 0) return "pipe";
  if (target.rfind("socket:", 0) == 0) return "socket";
  struct stat st {};
  if (fstat(fd, &st) != 0) return "other";
  return S_ISDIR(st.st_mode) ? "dir" : S_ISREG(st.st_mode) ? "file" : "other";
}

// The open descriptors in [from, to), but the one that reads the list.
std::vector<int> open_fds(int from, int to) {
  std::vector<int> found;
  DIR *d = opendir("/proc/self/fd");
  if (!d) return found;
  while (dirent *e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    int fd = std::atoi(e->d_name);
    if (fd != dirfd(d) && fd >= from && fd < to) found.push_back(fd);
  }
  closedir(d);
  return found;
}

int list_fds() {
  allocate_some(5);
  for (int depth = 0; depth < 8; ++depth)
    if (nocfi_allocate(depth, 4096) != 0) return 30;
  for (int fd : open_fds(3, 900)) std::printf("%d %s\n", fd, fd_kind(fd).c_str());
  return 0;
}

void *allocate_without_cfi(void *) {
  for (int i = 0; i < 40; ++i)
    if (nocfi_allocate(i % 8, 4096) != 0) return reinterpret_cast<void *>(1);
  return nullptr;
}

int close_reopen(const char *in, const char *out) {
  allocate_some(5);
  int cap = capture_fd();
  for (int fd = 3; fd < 1024; ++fd)
    if (fd != cap) close(fd);
  int a = open(in, O_RDONLY);
  int b = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (a != 3 || b != 4) return 28;
  // A thread of its own: libunwind's cache of validated pages is per thread, so this one's
  // unwinds validate afresh.
  pthread_t t;
  void *failed = nullptr;
  if (pthread_create(&t, nullptr, allocate_without_cfi, nullptr) != 0 || pthread_join(t, &failed) != 0 || failed)
    return 30;
  char buf[4096];
  for (ssize_t n; (n = read(a, buf, sizeof buf)) > 0;)
    if (write(b, buf, static_cast<size_t>(n)) != n) return 20;
  for (int fd : open_fds(5, 900))
    if (fd != cap) {
      std::fprintf(stderr, "descriptor %d (%s) appeared\n", fd, fd_kind(fd).c_str());
      return 29;
    }
  close(a);
  close(b);
  return 0;
}

int chdir_leak(const char *dir) {
  allocate_first(1 << 10);
  if (chdir(dir) != 0) return 31;
  leak_in_a_loop();
  return 0;
}

int end_now(const char *how) {
  for (int i = 0; i < 3; ++i) {
    void *p = nullptr;
    CHECK_CUDA(cudaMalloc(&p, 1 << 20));
    CHECK_CUDA(cudaFree(p));
  }
  for (int i = 0; i < 5; ++i) allocate_first(1 << 20);
  if (!std::strcmp(how, "_exit")) _exit(0);
  if (!std::strcmp(how, "abort")) std::abort();
  if (!std::strcmp(how, "exec")) execl("/bin/true", "true", static_cast<char *>(nullptr));
  return std::strcmp(how, "return") == 0 ? 0 : 32;
}

int pending_sigpipe() {
  sigset_t pipe_only;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  sigprocmask(SIG_BLOCK, &pipe_only, nullptr);
  raise(SIGPIPE);
  allocate_some(3);
  sigset_t pending;
  sigpending(&pending);
  std::printf("%s\n", sigismember(&pending, SIGPIPE) ? "pending" : "gone");
  return 0;
}

int sigpipe_disposition() {
  struct sigaction old {};
  sigaction(SIGPIPE, nullptr, &old);
  std::printf("%s\n", old.sa_handler == SIG_IGN ? "ignored" : old.sa_handler == SIG_DFL ? "default" : "handled");
  allocate_some(3);
  return 0;
}

int clean_wait(int ms) {
  for (int waited = 0; waited < ms; waited += 10) {
    allocate_some(2);
    usleep(10000);
  }
  return 0;
}

int swap_out(const std::string &dir, const char *other) {
  for (int i = 0; i < 10; ++i) allocate_first(1u << 20);
  usleep(50000);  // the writer has flushed: the capture is in DIR
  if (rename(dir.c_str(), (dir + ".moved").c_str()) != 0 || symlink(other, dir.c_str()) != 0) return 33;
  leak_in_a_loop();
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  const char *a2 = argc > 2 ? argv[2] : "";
  if (mode == "exit-in-signal") return exit_in_signal();
  if (mode == "close-fds") return close_fds(a2, argc > 3 ? argv[3] : "");
  if (mode == "dup2-capture") return dup2_capture(a2);
  if (mode == "sigchld-ignore" || mode == "sigchld-handler") {
    if (mode == "sigchld-ignore")
      signal(SIGCHLD, SIG_IGN);
    else
      signal(SIGCHLD, on_child);
    leak_in_a_loop();
    return 0;
  }
  if (mode == "exec") return exec_true(a2);
  if (mode == "die-after-first") return die_after_first(a2);
  if (mode == "fault" && argc > 4) return fault(argv[2], std::atoi(argv[3]), argv[4]);
  if (mode == "fds") return list_fds();
  if (mode == "close-reopen" && argc > 3) return close_reopen(argv[2], argv[3]);
  if (mode == "chdir-leak") return chdir_leak(a2);
  if (mode == "end") return end_now(a2);
  if (mode == "pending-sigpipe") return pending_sigpipe();
  if (mode == "sigpipe-disposition") return sigpipe_disposition();
  if (mode == "clean-wait") return clean_wait(std::atoi(a2));
  if (mode == "swap-out" && argc > 3) return swap_out(argv[2], argv[3]);
  std::fprintf(stderr, "usage: hostile MODE [ARGS]\n");
  return 64;
}
