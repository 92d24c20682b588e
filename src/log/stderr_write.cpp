#include "log/stderr_write.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

namespace gpuleak::log {

bool write_stderr(const char *data, size_t n) {
  const int saved = errno;
  sigset_t pipe_only, old, pending;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  // Standard signals do not queue: a SIGPIPE already pending (the program's own, blocked) and ours
  // would be one, so then ours is left in place rather than taking the program's.
  const bool was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
  bool ok = true, broken = false;
  for (size_t done = 0; done < n;) {
    ssize_t w = write(2, data + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      ok = false;
      broken = w < 0 && errno == EPIPE;
      break;
    }
    done += static_cast<size_t>(w);
  }
  if (broken && !was_pending) {
    const timespec now{0, 0};
    while (sigtimedwait(&pipe_only, nullptr, &now) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = saved;
  return ok;
}

}  // namespace gpuleak::log
