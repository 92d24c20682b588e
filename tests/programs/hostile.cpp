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
#include <cuda_runtime_api.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "prog_common.h"

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
  std::fprintf(stderr, "usage: hostile MODE [ARGS]\n");
  return 64;
}
