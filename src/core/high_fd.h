// gpuleak's own descriptors (the capture file, the output folder, libunwind's validation pipe)
// live far from the low numbers that programs close and reuse (closing 3..N, dup2 onto "their"
// number, opening their files there): docs/safety.md "Descriptors".
#pragma once

namespace gpuleak::core {

// Moves `fd` to the lowest free number from just under the soft RLIMIT_NOFILE (at most ~1000, so
// that the descriptor table need not grow), close-on-exec, and returns the new number; where that
// fails, returns `fd` unchanged. Keeps errno.
int move_high(int fd);

// Makes the library behind `handle` (a dlopen handle) create its pipes high: its own PLT/GOT slots
// for pipe2 and pipe are pointed at wrappers that move both ends with move_high. Must be called
// before the library's first pipe (libunwind makes its address-validation pipe at its first call,
// and again whenever a read of it fails). Only that library's calls change; false when no slot
// was found (not x86-64, or the library makes no pipe).
bool keep_pipes_high(void *handle);

}  // namespace gpuleak::core
