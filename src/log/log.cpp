// The logger behind log.h: spdlog, header-only (with fmt header-only), so libgpuleak.so carries
// its own hidden copy and neither needs nor displaces a libspdlog or libfmt of the program's.
#include "log/log.h"
#include "log/stderr_write.h"

#include <spdlog/logger.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <strings.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>

namespace gpuleak::log {

namespace detail {
std::atomic<int> g_level{-1};
}  // namespace detail

namespace {

constexpr const char *kNames[] = {"trace", "debug", "info", "warn", "error", "off"};

std::atomic<spdlog::logger *> g_logger{nullptr};
std::mutex g_create;

// "[debug] " or "[trace] " after "gpuleak: " on stderr; nothing for the levels whose lines users
// have always seen (their text says "warning:" where it is one).
class DebugLevelTag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg &msg, const std::tm &, spdlog::memory_buf_t &dest) override {
    if (msg.level > spdlog::level::debug) return;
    spdlog::string_view_t name = spdlog::level::to_string_view(msg.level);
    dest.push_back('[');
    dest.append(name.data(), name.data() + name.size());
    dest.push_back(']');
    dest.push_back(' ');
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<DebugLevelTag>(); }
};

spdlog::level::level_enum to_spdlog(Level l) {
  switch (l) {
    case Level::kTrace:
      return spdlog::level::trace;
    case Level::kDebug:
      return spdlog::level::debug;
    case Level::kInfo:
      return spdlog::level::info;
    case Level::kWarn:
      return spdlog::level::warn;
    case Level::kError:
      return spdlog::level::err;
    case Level::kOff:
      break;
  }
  return spdlog::level::off;
}

// Lines to descriptor 2 through write_stderr: a stderr whose reader has gone never kills the
// program (or `gpuleak run`) with SIGPIPE over a diagnostic.
class StderrSink final : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg &msg) override {
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    write_stderr(line.data(), line.size());
  }
  void flush_() override {}
};

// Not in spdlog's registry: no global state shared with a program that uses spdlog itself, no
// periodic flusher thread. Never deleted: threads and atexit handlers may log until the end.
spdlog::logger *create() {
  std::lock_guard<std::mutex> lock(g_create);
  if (spdlog::logger *existing = g_logger.load(std::memory_order_acquire)) return existing;
  std::shared_ptr<spdlog::sinks::sink> sink;
  std::string file_error;
  const char *path = std::getenv("GPULEAK_LOG_FILE");
  if (path && *path) {
    try {
      sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, /*truncate=*/false);  // ranks share a file
    } catch (const spdlog::spdlog_ex &e) {
      file_error = e.what();
    }
  }
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  if (sink) {
    formatter->set_pattern("%Y-%m-%d %H:%M:%S.%f %n[%P:%t] %l: %v");
  } else {
    sink = std::make_shared<StderrSink>();
    formatter->add_flag<DebugLevelTag>('*').set_pattern("gpuleak: %*%v");
  }
  sink->set_formatter(std::move(formatter));
  auto *logger = new spdlog::logger("gpuleak", std::move(sink));
  logger->set_level(spdlog::level::trace);  // enabled() filters, before any formatting
  logger->flush_on(spdlog::level::trace);   // each line reaches the file at once: an _exit loses none
  g_logger.store(logger, std::memory_order_release);
  if (!file_error.empty())
    logger->warn("warning: GPULEAK_LOG_FILE={}: {}; logging to stderr instead", path, file_error);
  return logger;
}

}  // namespace

bool parse_level(const char *text, Level *out) {
  if (!text) return false;
  for (int i = 0; i < 6; ++i)
    if (strcasecmp(text, kNames[i]) == 0) {
      *out = static_cast<Level>(i);
      return true;
    }
  if (strcasecmp(text, "warning") == 0 || strcasecmp(text, "err") == 0) {  // spdlog's and Python's spellings
    *out = text[0] == 'w' || text[0] == 'W' ? Level::kWarn : Level::kError;
    return true;
  }
  return false;
}

Level detail::read_level() {
  const char *env = std::getenv("GPULEAK_LOG");
  Level l = Level::kInfo;
  bool bad = env && *env && !parse_level(env, &l);
  detail::g_level.store(static_cast<int>(l), std::memory_order_relaxed);
  if (bad)
    write(Level::kWarn, "warning: GPULEAK_LOG=%s is not one of off, error, warn, info, debug, trace; using info", env);
  return l;
}

void write(Level l, const char *format, ...) {
  if (l == Level::kOff) return;
  char small[512];
  std::string large;
  va_list ap;
  va_start(ap, format);
  va_list again;
  va_copy(again, ap);
  int n = std::vsnprintf(small, sizeof small, format, ap);
  va_end(ap);
  const char *text = small;
  if (n >= static_cast<int>(sizeof small)) {
    large.resize(static_cast<size_t>(n) + 1);
    std::vsnprintf(large.data(), large.size(), format, again);
    text = large.c_str();
  }
  va_end(again);
  if (n < 0) return;
  try {
    spdlog::logger *logger = g_logger.load(std::memory_order_acquire);
    if (!logger) logger = create();
    logger->log(to_spdlog(l), spdlog::string_view_t(text, static_cast<size_t>(n)));
  } catch (...) {
    // A diagnostic must never fail the program or the command: the line is dropped.
  }
}

}  // namespace gpuleak::log
