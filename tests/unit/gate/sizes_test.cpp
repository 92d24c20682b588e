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
  EXPECT_EQ(parse_size("1.5 gib", "x"), 3ull << 29);
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
    EXPECT_STREQ(e.what(), "--max-peak: bad size \"lots\" (examples: 100, 512KiB, \"1 MiB\", 2GB, unlimited)");
  }
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
