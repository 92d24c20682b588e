// Writing gpuleak's lines to descriptor 2 without ever raising SIGPIPE in the program: when its
// stderr is a pipe whose reader has gone (`prog 2>&1 | head -1`), a plain write(2) would kill it
// (exit 141) over a line of ours. Shared by the shim's signal-safe lines (core/signal_safe.h)
// and the logger's stderr sink (log.cpp).
#pragma once

#include <cstddef>

namespace gpuleak::log {

// Writes all of `data` to descriptor 2 (EINTR retried), with SIGPIPE blocked on the calling
// thread for the while. A SIGPIPE that the write itself raised is consumed; one the program had
// pending before stays pending. Async-signal-safe; keeps errno. False when the write failed.
bool write_stderr(const char *data, size_t n);

}  // namespace gpuleak::log
