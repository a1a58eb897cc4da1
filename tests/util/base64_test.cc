// util/base64.h against RFC 4648's test vectors, and what it refuses.
#include "outpost/util/base64.h"

#include <gtest/gtest.h>

namespace outpost::util {
namespace {

TEST(Base64, Rfc4648VectorsRoundTrip) {
  const std::pair<std::string, std::string> rows[] = {
      {"f", "Zg=="},
      {"fo", "Zm8="},
      {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="},
      {"fooba", "Zm9vYmE="},
      {"foobar", "Zm9vYmFy"},
      {std::string("\0\xff\xfe", 3), "AP/+"},
  };
  for (const auto& [plain, coded] : rows) {
    EXPECT_EQ(Base64Encode(plain), coded);
    std::string back;
    ASSERT_TRUE(Base64Decode(coded, &back)) << coded;
    EXPECT_EQ(back, plain);
  }
  EXPECT_EQ(Base64Encode(""), "");
}

TEST(Base64, RefusesWhatIsNotPaddedBase64) {
  std::string out;
  for (const char* bad : {"", "Zg=", "Zg", "Z===", "Zm9v!A==", "Zg==Zg==", "x=y="}) {
    EXPECT_FALSE(Base64Decode(bad, &out)) << bad;
  }
}

}  // namespace
}  // namespace outpost::util
