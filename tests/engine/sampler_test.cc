// Engine-level checks on a real model (Gemma 3 270M: its 262k vocabulary is
// where sampling costs show): the greedy fast path picks exactly what
// llama.cpp's greedy sampler chain picks, with and without bias.
#include "outpost/engine/sampler.h"

#include <gtest/gtest.h>

#include "mocks/test_model.h"

#include <cstdlib>
#include <filesystem>

#include "outpost/engine/context.h"
#include "outpost/engine/model.h"

namespace outpost::engine {
namespace {

class SamplerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string path = outpost::testing::ModelPath("OUTPOST_GEMMA");
    if (path.empty()) return;
    InstallLlamaLogger(false);
    ModelOptions o;
    o.path = path;
    auto m = Model::Load(o);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m).value().release();
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }
  void SetUp() override {
    if (model_) return;
    if (outpost::testing::ModelRequired()) FAIL() << "OUTPOST_GEMMA is missing";
    GTEST_SKIP() << "OUTPOST_GEMMA not set";
  }

  // Greedy-decodes `n` tokens with two samplers side by side on one context;
  // fails the test at the first disagreement.
  static void ExpectSameTokens(const SamplingParams& p, int n) {
    ContextOptions co;
    co.sessions = 1;
    co.ctx_per_session = 256;
    co.batch_size = 64;
    auto ctx = Context::Create(*model_, co);
    ASSERT_TRUE(ctx.ok());
    auto fast_or = Sampler::Create(*model_, p);
    ASSERT_TRUE(fast_or.ok());
    Sampler& fast = **fast_or;
    auto slow = Sampler::WithoutFastPathForTest(*model_, p);
    auto prompt = model_->Tokenize("The three primary colours are", true, false);
    (*ctx)->ClearBatch();
    int32_t idx = 0;
    for (size_t i = 0; i < prompt.size(); ++i)
      idx = (*ctx)->Add(prompt[i], static_cast<int32_t>(i), 0, i + 1 == prompt.size());
    ASSERT_TRUE((*ctx)->Decode().ok());
    int32_t pos = static_cast<int32_t>(prompt.size());
    for (int k = 0; k < n; ++k) {
      const Token a = fast.Sample(**ctx, idx);
      const Token b = slow->Sample(**ctx, idx);
      ASSERT_EQ(a, b) << "step " << k;
      (*ctx)->ClearBatch();
      idx = (*ctx)->Add(a, pos++, 0, true);
      ASSERT_TRUE((*ctx)->Decode().ok());
    }
  }

  static Model* model_;
};

Model* SamplerTest::model_ = nullptr;

TEST_F(SamplerTest, GreedyFastPathMatchesLlamaGreedy) {
  SamplingParams p;
  p.temperature = 0;
  ExpectSameTokens(p, 24);
}

TEST_F(SamplerTest, GreedyFastPathAppliesLogitBiasLikeLlama) {
  SamplingParams p;
  p.temperature = 0;
  p.logit_bias = {{9999, 100.0f}, {236743, -100.0f}, {1, -100.0f}, {106, 3.5f}};
  ExpectSameTokens(p, 12);
}

}  // namespace
}  // namespace outpost::engine
