#include "outpost/util/sha256.h"

#include <gtest/gtest.h>

#include <string>

namespace outpost::util {
namespace {

// FIPS 180-2's test vectors.
constexpr const char* kEmpty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr const char* kAbc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

TEST(Sha256, KnownVectorsAtOnceAndInTheOciForm) {
  EXPECT_EQ(Sha256Hex(""), kEmpty);
  EXPECT_EQ(Sha256Hex("abc"), kAbc);
  EXPECT_EQ(Sha256Digest("abc"), std::string("sha256:") + kAbc);
  // Bytes, not C strings: an embedded NUL counts.
  EXPECT_NE(Sha256Hex(std::string("ab\0c", 4)), Sha256Hex("abc"));
}

TEST(Sha256, AStreamInPiecesEqualsTheWholeAndStartsAgainAfterFinish) {
  Sha256Stream s;
  s.Update("a");
  s.Update("bc", 2);
  EXPECT_EQ(s.Finish(), kAbc);
  EXPECT_EQ(s.Finish(), kEmpty);  // nothing since
  const std::string big(3 << 20, 'x');
  for (size_t off = 0; off < big.size(); off += 1 << 20) s.Update(big.data() + off, 1 << 20);
  EXPECT_EQ(s.Finish(), Sha256Hex(big));
}

}  // namespace
}  // namespace outpost::util
