#include "outpost/engine/token_id.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace outpost::engine {
namespace {

TEST(CheckTokenId, IdsInsideTheVocabularyPass) {
  EXPECT_TRUE(CheckTokenId(0, 49152, "prompt[0]").ok());
  EXPECT_TRUE(CheckTokenId(49151, 49152, "prompt[0]").ok());
}

TEST(CheckTokenId, EveryIdOutsideItIsNamedWithTheField) {
  struct Case {
    int64_t id;
    std::string message;
  } cases[] = {
      {-1, "'logit_bias' token id -1 is negative (ids start at 0)"},
      {INT64_MIN, "'logit_bias' token id -9223372036854775808 is negative (ids start at 0)"},
      {49152, "'logit_bias' token id 49152 is outside the vocabulary [0, 49152)"},
      {int64_t{1} << 40,
       "'logit_bias' token id 1099511627776 is outside the vocabulary [0, 49152)"},
  };
  for (const Case& c : cases) {
    const Status st = CheckTokenId(c.id, 49152, "logit_bias");
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << c.id;
    EXPECT_EQ(st.message(), c.message);
    EXPECT_EQ(st.param(), "logit_bias");
  }
}

}  // namespace
}  // namespace outpost::engine
