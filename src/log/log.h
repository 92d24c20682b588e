// gpuleak's diagnostics, in the shim and in the CLI: one spdlog logger, its level from
// GPULEAK_LOG=off|error|warn|info|debug|trace (default info) and its sink from GPULEAK_LOG_FILE
// (default stderr). Lines on stderr read "gpuleak: <message>", as they always have; debug and
// trace lines carry their level; the file gets a timestamp, the pid and the thread.
//
// Rules for callers inside the profiled process (research/CAPTURE.md 4):
//   - GPULEAK_LOG_*() costs one relaxed atomic load when the level is off, so a hook may contain
//     a trace line; per-call lines are trace only, never debug.
//   - The logger (spdlog: malloc, a mutex, stdio) is created at the first line that is written,
//     never from a hook before the real call, and never on a signal or _exit path: those keep
//     their raw write(2) (core/shutdown.cpp, core/recorder.cpp).
// Only log.cpp includes spdlog (header-only, hidden in libgpuleak.so), so the formatting here is
// printf's, checked by the compiler.
#pragma once

#include <atomic>

namespace gpuleak::log {

enum class Level : int { kTrace = 0, kDebug, kInfo, kWarn, kError, kOff };

namespace detail {
extern std::atomic<int> g_level;  // -1 until GPULEAK_LOG is read; constant-initialized
Level read_level();
}  // namespace detail

// The level in force: GPULEAK_LOG, read once (a bad value: info, and one warning line).
inline Level level() {
  int v = detail::g_level.load(std::memory_order_relaxed);
  return v >= 0 ? static_cast<Level>(v) : detail::read_level();
}
inline bool enabled(Level l) { return static_cast<int>(l) >= static_cast<int>(level()); }

// One line at level l. Never throws; a line that cannot be written is dropped.
void write(Level l, const char *format, ...) __attribute__((format(printf, 2, 3)));

// Parses a GPULEAK_LOG value: the six names, or "warning" / "err" (case-insensitive); false otherwise.
bool parse_level(const char *text, Level *out);

}  // namespace gpuleak::log

#define GPULEAK_LOG_AT(lvl, ...)                                      \
  do {                                                                \
    if (::gpuleak::log::enabled(::gpuleak::log::Level::lvl))          \
      ::gpuleak::log::write(::gpuleak::log::Level::lvl, __VA_ARGS__); \
  } while (0)
#define GPULEAK_LOG_TRACE(...) GPULEAK_LOG_AT(kTrace, __VA_ARGS__)
#define GPULEAK_LOG_DEBUG(...) GPULEAK_LOG_AT(kDebug, __VA_ARGS__)
#define GPULEAK_LOG_INFO(...) GPULEAK_LOG_AT(kInfo, __VA_ARGS__)
#define GPULEAK_LOG_WARN(...) GPULEAK_LOG_AT(kWarn, __VA_ARGS__)
#define GPULEAK_LOG_ERROR(...) GPULEAK_LOG_AT(kError, __VA_ARGS__)
