// GPULEAK_* parsing: every bad value turns tracking off and names itself.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/config.h"

namespace gpuleak::core {
namespace {

struct Env {
  Env(const char *k, const char *v) : key(k) { setenv(k, v, 1); }
  ~Env() { unsetenv(key); }
  const char *key;
};

TEST(Config, DefaultsWhenNothingIsSet) {
  Config c = read_config();
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.out_dir, "gpuleak-out");
  EXPECT_EQ(c.stack_depth, 32u);
  EXPECT_FALSE(c.cupti);
  EXPECT_EQ(c.error, "");
}

TEST(Config, ParsesGoodValues) {
  Env a("GPULEAK_STACK_DEPTH", "0"), b("GPULEAK_CUPTI", "yes"), d("GPULEAK_OUT", "/tmp/x"),
      e("GPULEAK_MAX_CAPTURE_MB", "16");
  Config c = read_config();
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.stack_depth, 0u);
  EXPECT_TRUE(c.cupti);
  EXPECT_EQ(c.out_dir, "/tmp/x");
  EXPECT_EQ(c.max_capture_bytes, 16u << 20);
}

TEST(Config, BadValuesDisableTrackingAndSayWhich) {
  for (auto [k, v] : std::vector<std::pair<const char *, const char *>>{{"GPULEAK_STACK_DEPTH", "129"},
                                                                        {"GPULEAK_STACK_DEPTH", "-1"},
                                                                        {"GPULEAK_STACK_DEPTH", "3x"},
                                                                        {"GPULEAK_CUPTI", "maybe"},
                                                                        {"GPULEAK_OUT", ""},
                                                                        {"GPULEAK_BUFFER_KB", "1"},
                                                                        {"GPULEAK_DISABLE", "2"}}) {
    Env env(k, v);
    Config c = read_config();
    EXPECT_FALSE(c.enabled) << k << "=" << v;
    EXPECT_EQ(c.error, std::string("bad value ") + k + "=\"" + v + "\"");
  }
}

// Issue #25: the capture budget, on by default, in sizes; 0 turns it off.
TEST(Config, TheCaptureBudgetTakesSizes) {
  EXPECT_EQ(read_config().max_capture_bytes, Config::kDefaultBudget);
  for (auto [v, bytes] : std::vector<std::pair<const char *, uint64_t>>{
           {"4GiB", 4ull << 30}, {"512MiB", 512ull << 20}, {"8M", 8ull << 20}, {"0", 0}, {"2g", 2ull << 30}}) {
    Env env("GPULEAK_MAX_CAPTURE", v);
    Config c = read_config();
    EXPECT_TRUE(c.enabled) << v;
    EXPECT_EQ(c.max_capture_bytes, bytes) << v;
  }
  for (const char *v : {"lots", "4TiB", "-1", "1000", "12 MiB", ""}) {
    Env env("GPULEAK_MAX_CAPTURE", v);
    Config c = read_config();
    EXPECT_FALSE(c.enabled) << v;
    EXPECT_EQ(c.error, std::string("bad value GPULEAK_MAX_CAPTURE=\"") + v + "\"");
  }
}

TEST(Config, BlockNativeStacksAreOffUnlessAsked) {
  EXPECT_FALSE(read_config().block_native_stacks);
  {
    Env a("GPULEAK_BLOCK_NATIVE_STACKS", "1");
    EXPECT_TRUE(read_config().block_native_stacks);
  }
  Env bad("GPULEAK_BLOCK_NATIVE_STACKS", "sometimes");
  Config c = read_config();
  EXPECT_FALSE(c.enabled);
  EXPECT_EQ(c.error, "bad value GPULEAK_BLOCK_NATIVE_STACKS=\"sometimes\"");
}

TEST(Config, Unwinder) {
  EXPECT_FALSE(read_config().prefer_libgcc);
  {
    Env a("GPULEAK_UNWINDER", "libgcc");
    EXPECT_TRUE(read_config().prefer_libgcc);
  }
  {
    Env a("GPULEAK_UNWINDER", "libunwind");
    EXPECT_FALSE(read_config().prefer_libgcc);
    EXPECT_TRUE(read_config().enabled);
  }
  Env bad("GPULEAK_UNWINDER", "gdb");
  Config c = read_config();
  EXPECT_FALSE(c.enabled);
  EXPECT_EQ(c.error, "bad value GPULEAK_UNWINDER=\"gdb\"");
}

TEST(Config, NvmlSampleInterval) {
  EXPECT_EQ(read_config().nvml_interval_ms, 250u);
  {
    Env a("GPULEAK_NVML_INTERVAL_MS", "0");
    Config c = read_config();
    EXPECT_TRUE(c.enabled);
    EXPECT_EQ(c.nvml_interval_ms, 0u);  // at exit only
  }
  {
    Env a("GPULEAK_NVML_INTERVAL_MS", "20");
    EXPECT_EQ(read_config().nvml_interval_ms, 20u);
  }
  for (const char *bad : {"-5", "fast", "", "3600001"}) {
    Env a("GPULEAK_NVML_INTERVAL_MS", bad);
    Config c = read_config();
    EXPECT_FALSE(c.enabled) << bad;
    EXPECT_EQ(c.error, std::string("bad value GPULEAK_NVML_INTERVAL_MS=\"") + bad + "\"");
  }
}

TEST(Config, GpuActivitySettings) {
  Config defaults = read_config();
  EXPECT_TRUE(defaults.activity);
  EXPECT_EQ(defaults.activity_max_bytes, 256ull << 20);
  {
    Env a("GPULEAK_ACTIVITY", "0"), b("GPULEAK_ACTIVITY_MB", "3");
    Config c = read_config();
    EXPECT_TRUE(c.enabled);
    EXPECT_FALSE(c.activity);
    EXPECT_EQ(c.activity_max_bytes, 3u << 20);
  }
  for (const char *bad : {"-1", "lots", ""}) {
    Env a("GPULEAK_ACTIVITY_MB", bad);
    Config c = read_config();
    EXPECT_FALSE(c.enabled) << bad;
    EXPECT_EQ(c.error, std::string("bad value GPULEAK_ACTIVITY_MB=\"") + bad + "\"");
  }
}

TEST(Config, ParseSizeAcceptsUnitsAndRejectsJunk) {
  uint64_t v = 0;
  EXPECT_TRUE(parse_size("64K", &v));
  EXPECT_EQ(v, 64u << 10);
  EXPECT_TRUE(parse_size("2GiB", &v));
  EXPECT_EQ(v, 2ull << 30);
  EXPECT_FALSE(parse_size("2X", &v));
  EXPECT_FALSE(parse_size("-5", &v));
  EXPECT_FALSE(parse_size("99999999999999999999G", &v));
}

}  // namespace
}  // namespace gpuleak::core
