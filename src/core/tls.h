// Thread-local state in the profiled process. initial-exec: the shim is preloaded, so the static
// TLS block has room for it, and an access is one instruction; the default general-dynamic model
// may call malloc (through __tls_get_addr) on a thread's first touch, inside a hook
// (research/CAPTURE.md 4.2). Every such variable must be trivially destructible: a thread_local
// with a destructor registers an exit handler that may run after gpuleak has shut down.
#pragma once

#define GPULEAK_TLS_MODEL __attribute__((tls_model("initial-exec")))

// A file- or function-local thread-local of the recorder: `GPULEAK_TLS T *t_x = nullptr;`.
#define GPULEAK_TLS static thread_local GPULEAK_TLS_MODEL

// A thread-local named from other files: `extern GPULEAK_SHARED_TLS T t_x;` in the header and
// `GPULEAK_SHARED_TLS T t_x = ...;` in one file. __thread, not thread_local: C++ reaches another
// file's thread_local through a wrapper that checks for dynamic initialization on every access
// (a load, a branch and maybe a call, several times in every hook); __thread admits only constant
// initialization, so an access is one instruction.
#define GPULEAK_SHARED_TLS __thread GPULEAK_TLS_MODEL
