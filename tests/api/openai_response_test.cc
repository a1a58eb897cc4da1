#include "outpost/api/openai_response.h"

#include <gtest/gtest.h>

#include <set>

#include "mocks/seeded_random.h"

namespace outpost::api {
namespace {

TEST(NewId, PrefixAnd24AlphanumericsFromTheInjectedSource) {
  outpost::testing::SeededRandom a(42), b(42);
  const std::string id = NewId("chatcmpl-", a);
  ASSERT_EQ(id.size(), std::string("chatcmpl-").size() + 24);
  EXPECT_EQ(id.rfind("chatcmpl-", 0), 0u);
  for (char c : id.substr(9)) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c))) << id;
  EXPECT_EQ(id, NewId("chatcmpl-", b));  // same seed, same id
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) seen.insert(NewId("cmpl-", a));
  EXPECT_EQ(seen.size(), 1000u);
}

}  // namespace
}  // namespace outpost::api
