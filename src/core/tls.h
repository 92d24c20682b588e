// Thread-local state in the profiled process. initial-exec: the shim is preloaded, so the static
// TLS block has room for it, and an access is one instruction; the default general-dynamic model
// may call malloc (through __tls_get_addr) on a thread's first touch, inside a hook
// (research/CAPTURE.md 4.2). Every such variable must be trivially destructible: a thread_local
// with a destructor registers an exit handler that may run after gpuleak has shut down.
#pragma once

#define GPULEAK_TLS_MODEL __attribute__((tls_model("initial-exec")))

// A file- or function-local thread-local of the recorder: `GPULEAK_TLS T *t_x = nullptr;`.
#define GPULEAK_TLS static thread_local GPULEAK_TLS_MODEL
