// Sizes and percentages as budgets are written.
#include <gtest/gtest.h>

#include "gate/report_view.h"
#include "gate/sizes.h"

namespace gpuleak::gate {
namespace {

TEST(GateSizes, ParsesBinaryDecimalAndBareForms) {
  EXPECT_EQ(parse_size("100", "x"), 100u);
  EXPECT_EQ(parse_size("512KiB", "x"), 512u * 1024);
  EXPECT_EQ(parse_size("1 MiB", "x"), 1u << 20);
  EXPECT_EQ(parse_size("2GB", "x"), 2000000000u);
  EXPECT_EQ(parse_size("1.5 giB", "x"), 3ull << 29);  // any case but a final b (bits)
  EXPECT_EQ(parse_size("4K", "x"), 4096u);
  EXPECT_EQ(parse_size(" 7 b ", "x"), 7u);
  EXPECT_EQ(parse_size("1TB", "x"), 1000000000000ull);
  EXPECT_EQ(parse_size("unlimited", "x"), kUnlimited);
}

TEST(GateSizes, RejectsWhatIsNotASize) {
  for (const char *bad : {"", "MiB", "-1 MiB", "1 MiBs", "1e3", "0x10", "one", "1..2", "99999999999 TiB"})
    EXPECT_THROW(parse_size(bad, "--max-peak"), GateError) << bad;
  try {
    parse_size("lots", "--max-peak");
  } catch (const GateError &e) {
    EXPECT_STREQ(e.what(),
                 "--max-peak: bad size \"lots\" (units: B; KiB, MiB, GiB, TiB (or K, M, G, T) are 1024-based; KB, MB, "
                 "GB, TB are 1000-based; e.g. 512KiB, \"1 MiB\", 2GB, unlimited)");
  }
}

// Issue #17: "1Mb" was read as 1 MB. A lowercase b after a prefix is bits: refused, with the
// bytes spelling to use.
TEST(GateSizes, LowercaseBAfterAPrefixIsBitsAndRefused) {
  for (const char *bits : {"1Mb", "1 mb", "8Gib", "2 kb", "1tb"})
    EXPECT_THROW(parse_size(bits, "--max-peak"), GateError) << bits;
  try {
    parse_size("1Mb", "--max-peak");
    ADD_FAILURE() << "1Mb accepted";
  } catch (const GateError &e) {
    EXPECT_EQ(
        std::string(e.what()).rfind("--max-peak: bad size \"1Mb\": a lowercase b is bits; for bytes write MB (units: "
                                    "B; KiB, MiB, GiB, TiB (or K, M, G, T) are 1024-based; KB, MB, GB, TB are "
                                    "1000-based",
                                    0),
        0u)
        << e.what();
  }
  try {
    parse_size("8 Gib", "x");
  } catch (const GateError &e) {
    EXPECT_NE(std::string(e.what()).find("for bytes write GiB"), std::string::npos) << e.what();
  }
  EXPECT_EQ(parse_size("1MB", "x"), 1000000u);
  EXPECT_EQ(parse_size("1mB", "x"), 1000000u);
  EXPECT_EQ(parse_size("1 MIB", "x"), 1u << 20);
}

TEST(GateSizes, Percentages) {
  EXPECT_DOUBLE_EQ(parse_percent("5%", "t"), 0.05);
  EXPECT_DOUBLE_EQ(parse_percent("0.5 %", "t"), 0.005);
  EXPECT_DOUBLE_EQ(parse_percent("10", "t"), 0.10);
  EXPECT_THROW(parse_percent("-5%", "t"), GateError);
  EXPECT_THROW(parse_percent("five", "t"), GateError);
}

TEST(GateSizes, Formats) {
  EXPECT_EQ(format_size(0), "0 B");
  EXPECT_EQ(format_size(512), "512 B");
  EXPECT_EQ(format_size(1 << 20), "1 MiB");
  EXPECT_EQ(format_size(1.5 * (1 << 30)), "1.5 GiB");
  EXPECT_EQ(format_size(123456), "120.56 KiB");
  EXPECT_EQ(format_size(-4096), "-4 KiB");
  EXPECT_EQ(format_size(static_cast<double>(kUnlimited)), "unlimited");
}

}  // namespace
}  // namespace gpuleak::gate
