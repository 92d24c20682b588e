// Load-time set-up of libgpuleak.so and the process events around the capture: fork, exit,
// _exit and fatal signals. The constructor does the minimum (research/CAPTURE.md 4.7): read the
// settings, find itself, register handlers. The capture starts at the first allocation.
#include "shim/preload.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/config.h"
#include "core/module_map.h"
#include "core/recorder.h"
#include "core/signal_safe.h"
#include "log/log.h"
#include "shim/driver_probe.h"
#include "text/paths.h"

namespace gpuleak::shim {

namespace {

std::pair<uintptr_t, uintptr_t> g_own_range{0, 0};
bool g_wrapping = false;

const int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGTERM};
struct sigaction g_previous[NSIG];

// Flush what is buffered, then let the signal do what it would have done without us.
void on_fatal_signal(int sig) {
  core::recorder_flush_from_signal();
  sigaction(sig, &g_previous[sig], nullptr);
  raise(sig);  // blocked until we return; a fault re-executes and meets the restored handler
}

void install_signal_handlers() {
  for (int sig : kFatalSignals) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;  // keep SIG_IGN
    struct sigaction sa {};
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    g_previous[sig] = old;
    sigaction(sig, &sa, nullptr);
  }
}

// on_exit (not atexit): the handler sees the program's exit status, which GPULEAK_EXITCODE may
// replace only when it is 0 (the program's own failure always wins).
void on_process_exit(int status, void *) {
  int code = core::recorder_shutdown("exit");
  if (code >= 0 && status == 0) {
    std::fflush(nullptr);  // _exit skips stdio's flush, which exit() would do after us
    syscall(SYS_exit_group, code);
  }
}
void on_fork_child() { core::recorder_after_fork_child(); }

// Point NVTX at ourselves, so that NVTX ranges reach nvtx_injection.cpp (unless the user already
// chose an injection library, e.g. Nsight's).
void claim_nvtx_injection() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void *>(&claim_nvtx_injection), &info) && info.dli_fname)
    setenv("NVTX_INJECTION64_PATH", info.dli_fname, 0);
}

// GPULEAK_CUPTI=1: the driver calls our InitializeInjection at cuInit (cupti_bridge.cpp).
void claim_cuda_injection() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void *>(&claim_cuda_injection), &info) && info.dli_fname)
    setenv("CUDA_INJECTION64_PATH", info.dli_fname, 0);
}

// The installed CLI sits in ../bin next to lib/libgpuleak.so (the build tree has the same shape).
std::string default_cli_path() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void *>(&default_cli_path), &info) || !info.dli_fname) return {};
  return text::dirname_of(info.dli_fname) + "/../bin/gpuleak";
}

// A relative GPULEAK_OUT (the default ./gpuleak-out) is where the program starts: a program that
// changes directory later must still find its capture there, and so must its at-exit report.
std::string absolute_dir(const std::string &dir) {
  char cwd[PATH_MAX];
  if (dir.empty() || dir[0] == '/' || !getcwd(cwd, sizeof cwd)) return dir;
  return std::string(cwd) + "/" + dir;
}

__attribute__((constructor)) void gpuleak_preload_init() {
  core::Config config = core::read_config();
  config.out_dir = absolute_dir(config.out_dir);
  if (config.cli_path.empty()) config.cli_path = default_cli_path();
  g_own_range = core::ModuleMap::range_of(reinterpret_cast<void *>(&gpuleak_preload_init));
  core::remember_stderr();  // what descriptor 2 is now decides where our lines may go later
  resolve_exec_functions();
  // A bad setting is said at the first CUDA use (recorder_note_cuda_use), not here.
  core::recorder_init(config, g_own_range.first, g_own_range.second);
  if (!config.enabled) return;
  core::recorder_set_probe(driver_probe());
  claim_nvtx_injection();
  if (config.cupti) claim_cuda_injection();
  pthread_atfork(nullptr, nullptr, on_fork_child);
  on_exit(on_process_exit, nullptr);
  install_signal_handlers();
  g_wrapping = true;
  GPULEAK_LOG_DEBUG(
      "preload: pid %d, shim at %p-%p; driver entry points hooked by export, dlsym and "
      "cuGetProcAddress (each binding below); NVTX injection%s",
      static_cast<int>(getpid()), reinterpret_cast<void *>(g_own_range.first),
      reinterpret_cast<void *>(g_own_range.second), config.cupti ? ", CUPTI injection" : "");
}

}  // namespace

std::pair<uintptr_t, uintptr_t> own_text_range() { return g_own_range; }
bool wrapping_enabled() { return g_wrapping; }

}  // namespace gpuleak::shim

// _exit and _Exit skip atexit handlers: flush here, then leave exactly as the program asked. A
// signal handler may call them while the interrupted thread holds malloc's lock, so this path is
// async-signal-safe end to end (recorder_exit_now).
extern "C" __attribute__((visibility("default"), noreturn)) void _exit(int status) {
  int code = gpuleak::core::recorder_exit_now();
  syscall(SYS_exit_group, code >= 0 && status == 0 ? code : status);
  __builtin_unreachable();
}
extern "C" __attribute__((visibility("default"), noreturn)) void _Exit(int status) {
  int code = gpuleak::core::recorder_exit_now();
  syscall(SYS_exit_group, code >= 0 && status == 0 ? code : status);
  __builtin_unreachable();
}
