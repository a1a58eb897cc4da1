#include "outpost/util/units.h"

#include <gtest/gtest.h>

namespace outpost::util {
namespace {

TEST(ParseBytes, Units) {
  EXPECT_EQ(*ParseBytes("1024"), 1024u);
  EXPECT_EQ(*ParseBytes("4KiB"), 4096u);
  EXPECT_EQ(*ParseBytes("1.5GiB"), 1610612736u);
  EXPECT_EQ(*ParseBytes("8G"), 8589934592u);
  EXPECT_EQ(*ParseBytes("512MB"), 512000000u);
  EXPECT_EQ(*ParseBytes(" 2 mib "), 2097152u);
}

TEST(ParseBytes, Errors) {
  EXPECT_FALSE(ParseBytes("").ok());
  EXPECT_FALSE(ParseBytes("lots").ok());
  EXPECT_FALSE(ParseBytes("-1GiB").ok());
  auto bad = ParseBytes("3 parsecs");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown size unit 'parsecs'"), std::string::npos);
}

TEST(ParseDurationMs, Units) {
  EXPECT_EQ(*ParseDurationMs("250ms"), 250);
  EXPECT_EQ(*ParseDurationMs("30s"), 30000);
  EXPECT_EQ(*ParseDurationMs("30"), 30000);
  EXPECT_EQ(*ParseDurationMs("2m"), 120000);
  EXPECT_EQ(*ParseDurationMs("1h"), 3600000);
  EXPECT_EQ(*ParseDurationMs("30d"), 30LL * 86400000);
  EXPECT_FALSE(ParseDurationMs("soon").ok());
  EXPECT_FALSE(ParseDurationMs("5 fortnights").ok());
}

TEST(FlagValues, PositiveOrANamedError) {
  EXPECT_EQ(*PositiveDurationMsFlag("--duration", "90s"), 90000);
  EXPECT_EQ(*PositiveBytesFlag("--mem", "16GiB"), 16ull << 30);
  for (const char* bad : {"0s", "-5s", "soon", ""}) {
    auto d = PositiveDurationMsFlag("--duration", bad);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_EQ(d.status().param(), "--duration");
    EXPECT_EQ(d.status().message(), "--duration: '" + std::string(bad) +
                                        "' is not a positive duration (e.g. 90s, 250ms)");
  }
  for (const char* bad : {"0", "-4GiB", "lots", ""}) {
    auto b = PositiveBytesFlag("--mem", bad);
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_EQ(b.status().message(),
              "--mem: '" + std::string(bad) + "' is not a positive size (e.g. 16GiB)");
  }
}

TEST(FormatBytes, Binary) {
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(1536), "1.50 KiB");
  EXPECT_EQ(FormatBytes(72ull << 20), "72.00 MiB");
}

}  // namespace
}  // namespace outpost::util
