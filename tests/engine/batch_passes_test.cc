// BatchPasses: how llama.cpp splits a batch over one KV stream per sequence
// into passes of the model (llama_batch_allocr::split_equal, sequential).
#include <gtest/gtest.h>

#include <vector>

#include "outpost/engine/kv_layout.h"

namespace outpost::engine {
namespace {

std::vector<int32_t> Passes(const std::vector<int32_t>& tokens) {
  return BatchPasses(tokens);
}

TEST(BatchPasses, ConsecutiveSequencesWithEqualTokensAreOnePass) {
  EXPECT_EQ(Passes({1, 1, 1, 1}), std::vector<int32_t>({4}));
  EXPECT_EQ(Passes({0, 0, 3, 3, 0}), std::vector<int32_t>({6}));
  EXPECT_EQ(Passes({5}), std::vector<int32_t>({5}));
}

TEST(BatchPasses, EachRunOfConsecutiveIdsIsAPassOfItsOwn) {
  EXPECT_EQ(Passes({1, 0, 1, 1}), std::vector<int32_t>({1, 2}));
  EXPECT_EQ(Passes({1, 0, 1, 0, 0, 1, 0, 0, 0, 1}), std::vector<int32_t>({1, 1, 1, 1}));
}

TEST(BatchPasses, UnequalCountsSplitAtTheFewest) {
  // Guesses for sequence 0 only: the decode rows, then its guesses.
  EXPECT_EQ(Passes({5, 1, 1, 1}), std::vector<int32_t>({4, 4}));
  EXPECT_EQ(Passes({1, 5, 1, 1}), std::vector<int32_t>({4, 4}));
  EXPECT_EQ(Passes({5, 5, 1, 1}), std::vector<int32_t>({4, 8}));
  // Sequences 0 and 2 with guesses are two passes after the first.
  EXPECT_EQ(Passes({5, 1, 5, 1}), std::vector<int32_t>({4, 4, 4}));
  EXPECT_EQ(Passes({3, 0, 4, 2}), std::vector<int32_t>({3, 4, 2}));
}

TEST(BatchPasses, AnEmptyBatchIsNoPass) {
  EXPECT_TRUE(Passes({}).empty());
  EXPECT_TRUE(Passes({0, 0}).empty());
}

}  // namespace
}  // namespace outpost::engine
