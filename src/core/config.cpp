#include "core/config.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace gpuleak::core {

bool parse_unsigned(const char *text, unsigned lo, unsigned hi, unsigned *out) {
  if (!text || !*text) return false;
  errno = 0;
  char *end = nullptr;
  unsigned long v = std::strtoul(text, &end, 10);
  if (errno || *end || text[0] == '-' || v < lo || v > hi) return false;
  *out = static_cast<unsigned>(v);
  return true;
}

bool parse_size(const char *text, uint64_t *out) {
  if (!text || !*text || text[0] == '-') return false;
  errno = 0;
  char *end = nullptr;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (errno || end == text) return false;
  uint64_t mult = 1;
  if (*end) {
    switch (*end) {
      case 'k':
      case 'K':
        mult = 1ull << 10;
        break;
      case 'm':
      case 'M':
        mult = 1ull << 20;
        break;
      case 'g':
      case 'G':
        mult = 1ull << 30;
        break;
      default:
        return false;
    }
    ++end;
    if (*end == 'i' || *end == 'I') ++end;
    if (*end == 'b' || *end == 'B') ++end;
    if (*end) return false;
  }
  if (v > UINT64_MAX / mult) return false;
  *out = v * mult;
  return true;
}

namespace {

// "1"/"0"/"true"/"false"/"on"/"off"/"yes"/"no".
bool parse_bool(const char *text, bool *out) {
  static const char *const yes[] = {"1", "true", "on", "yes"};
  static const char *const no[] = {"0", "false", "off", "no"};
  for (const char *y : yes)
    if (strcasecmp(text, y) == 0) return *out = true, true;
  for (const char *n : no)
    if (strcasecmp(text, n) == 0) return *out = false, true;
  return false;
}

void fail(Config *c, const char *name, const char *value) {
  if (!c->error.empty()) return;
  c->error = std::string("bad value ") + name + "=\"" + value + "\"";
  c->enabled = false;
}

template <typename Parse>
void read(Config *c, const char *name, Parse parse) {
  const char *v = std::getenv(name);
  if (v && !parse(v)) fail(c, name, v);
}

}  // namespace

Config read_config() {
  Config c;
  read(&c, "GPULEAK_DISABLE", [&](const char *v) {
    bool off = false;
    if (!parse_bool(v, &off)) return false;
    if (off) c.enabled = false;
    return true;
  });
  read(&c, "GPULEAK_OUT", [&](const char *v) {
    if (!*v) return false;
    c.out_dir = v;
    return true;
  });
  read(&c, "GPULEAK_STACK_DEPTH", [&](const char *v) { return parse_unsigned(v, 0, 128, &c.stack_depth); });
  read(&c, "GPULEAK_STACK_MEMO", [&](const char *v) { return parse_bool(v, &c.stack_memo); });
  read(&c, "GPULEAK_BLOCK_NATIVE_STACKS", [&](const char *v) { return parse_bool(v, &c.block_native_stacks); });
  read(&c, "GPULEAK_UNWINDER", [&](const char *v) {
    c.prefer_libgcc = std::strcmp(v, "libgcc") == 0;
    return c.prefer_libgcc || std::strcmp(v, "libunwind") == 0;
  });
  read(&c, "GPULEAK_SELF_TIME", [&](const char *v) { return parse_bool(v, &c.self_time); });
  read(&c, "GPULEAK_CUPTI", [&](const char *v) { return parse_bool(v, &c.cupti); });
  read(&c, "GPULEAK_ACTIVITY", [&](const char *v) { return parse_bool(v, &c.activity); });
  read(&c, "GPULEAK_ACTIVITY_MB", [&](const char *v) {
    unsigned mb = 0;
    if (!parse_unsigned(v, 0, 1u << 30, &mb)) return false;
    c.activity_max_bytes = static_cast<uint64_t>(mb) << 20;
    return true;
  });
  read(&c, "GPULEAK_QUIET", [&](const char *v) { return parse_bool(v, &c.quiet); });
  read(&c, "GPULEAK_NVML", [&](const char *v) { return parse_bool(v, &c.nvml); });
  read(&c, "GPULEAK_NVML_INTERVAL_MS",
       [&](const char *v) { return parse_unsigned(v, 0, 3600000, &c.nvml_interval_ms); });
  read(&c, "GPULEAK_UNDER_RUN", [&](const char *v) { return parse_bool(v, &c.under_run); });
  read(&c, "GPULEAK_RUN_TOKEN", [&](const char *v) {
    c.run_token.assign(v, strnlen(v, 64));
    return true;
  });
  read(&c, "GPULEAK_CLI", [&](const char *v) {
    c.cli_path = v;
    return true;
  });
  read(&c, "GPULEAK_REPORT_TIMEOUT", [&](const char *v) { return parse_unsigned(v, 0, 86400, &c.report_timeout_s); });
  read(&c, "GPULEAK_EXITCODE", [&](const char *v) { return parse_unsigned(v, 0, 255, &c.exit_code); });
  read(&c, "GPULEAK_BUFFER_KB", [&](const char *v) { return parse_unsigned(v, 16, 65536, &c.buffer_kib); });
  read(&c, "GPULEAK_MAX_CAPTURE_MB", [&](const char *v) {
    unsigned mb = 0;
    if (!parse_unsigned(v, 0, 1u << 30, &mb)) return false;
    c.max_capture_bytes = static_cast<uint64_t>(mb) << 20;
    return true;
  });
  read(&c, "GPULEAK_MAX_CAPTURE", [&](const char *v) {
    uint64_t bytes = 0;
    // Less than 1 MiB would hold no more than the header and the module map: a typo, not a budget.
    if (!parse_size(v, &bytes) || bytes == Config::kDefaultBudget || (bytes != 0 && bytes < (1u << 20))) return false;
    c.max_capture_bytes = bytes;
    return true;
  });
  return c;
}

}  // namespace gpuleak::core
