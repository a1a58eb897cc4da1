// Engine-level checks on a real model (Gemma 3 270M: its 262k vocabulary is
// where sampling costs show): the greedy fast path and the top-k path pick
// exactly what llama.cpp's sampler chain picks over the whole row — the same
// tokens, the same seeded draws — with and without bias.
#include "outpost/engine/sampler.h"

#include <gtest/gtest.h>

#include "mocks/cpu_slot.h"
#include "mocks/test_model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "outpost/engine/context.h"
#include "outpost/engine/llama_engine.h"
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
  static void ExpectSameTokens(const SamplingParams& p, int n, bool row_only = true) {
    ContextOptions co;
    co.sessions = 1;
    co.ctx_per_session = 256;
    co.batch_size = 64;
    auto ctx = Context::Create(*model_, co);
    ASSERT_TRUE(ctx.ok());
    auto fast_or = Sampler::Create(*model_, p);
    ASSERT_TRUE(fast_or.ok());
    Sampler& fast = **fast_or;
    ASSERT_EQ(fast.RowOnly(), row_only);
    auto slow = Sampler::WithoutFastPathForTest(*model_, p);
    ASSERT_FALSE(slow->RowOnly());
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

// A seeded sampling chain: temperature, then top-k, top-p and min-p cuts.
SamplingParams Seeded(float temperature, int32_t top_k, float top_p, float min_p, uint32_t seed) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.min_p = min_p;
  p.seed = seed;
  p.has_seed = true;
  return p;
}

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

TEST_F(SamplerTest, TopKPathDrawsWhatTheFullChainDraws) {
  ExpectSameTokens(Seeded(0.9f, 40, 0.95f, 0.02f, 42), 32);
}

TEST_F(SamplerTest, TopPWithoutTopKIsCutAtTheCapAndDrawsTheSame) {
  // top_k 0 is capped at kTopKCap: the top-k path with k = 1000.
  ExpectSameTokens(Seeded(1.2f, 0, 0.98f, 0.0f, 7), 32);
}

TEST_F(SamplerTest, TopKPathAppliesLogitBiasLikeLlama) {
  SamplingParams p = Seeded(0.8f, 20, 1.0f, 0.0f, 3);
  // Bans, a token listed twice (its biases add up), a push from far down.
  p.logit_bias = {{9999, 12.0f}, {236743, -100.0f}, {1, -100.0f}, {106, 3.5f}, {106, 2.0f}};
  ExpectSameTokens(p, 16);
}

// Random rows where every one of the k candidates carries real probability
// (logits ~ N(0, 1), a high temperature): the top-k path must draw the
// whole-row chain's token every time, the biased tokens included.
void ExpectSameDrawsOnFlatRows(const Model& model, const SamplingParams& p, int draws) {
  auto fast = Sampler::Create(model, p);
  ASSERT_TRUE(fast.ok());
  ASSERT_TRUE((*fast)->RowOnly());
  auto slow = Sampler::WithoutFastPathForTest(model, p);
  std::mt19937 rng(1234);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> row(static_cast<size_t>(model.VocabSize()));
  int differ = 0;
  for (int d = 0; d < draws; ++d) {
    for (auto& v : row) v = normal(rng);
    const Token a = (*fast)->SampleRow(row.data());
    const Token b = slow->SampleWholeRow(row.data());
    differ += a != b;
  }
  EXPECT_EQ(differ, 0) << "of " << draws << " draws";
}

TEST_F(SamplerTest, TopKPathOnFlatRowsDrawsEveryCandidateLikeTheFullChain) {
  SamplingParams p = Seeded(1.5f, 40, 1.0f, 0.0f, 11);
  ExpectSameDrawsOnFlatRows(*model_, p, 200);
  p.top_p = 0.9f;
  p.min_p = 0.05f;
  ExpectSameDrawsOnFlatRows(*model_, p, 200);
  // Biases big enough to move a token into (or out of) the top 40.
  p.logit_bias = {{9999, 4.0f}, {20000, 3.0f}, {20000, 1.5f}, {77, -100.0f}, {123456, 5.0f}};
  ExpectSameDrawsOnFlatRows(*model_, p, 200);
}

TEST_F(SamplerTest, PenaltiesAndUncappedSamplingStayOnTheFullChain) {
  SamplingParams p = Seeded(0.8f, 40, 0.95f, 0.05f, 5);
  p.frequency_penalty = 0.5f;
  ExpectSameTokens(p, 8, /*row_only=*/false);
  // No cut at all: the whole row is the distribution.
  ExpectSameTokens(Seeded(0.8f, 0, 1.0f, 0.0f, 5), 4, /*row_only=*/false);
}

TEST_F(SamplerTest, ArgmaxOnCraftedRows) {
  SamplingParams p;
  p.temperature = 0;
  auto s = Sampler::Create(*model_, p);
  ASSERT_TRUE(s.ok());
  const int32_t n = model_->VocabSize();
  std::vector<float> row(static_cast<size_t>(n), -3.0f);
  EXPECT_EQ((*s)->SampleRow(row.data()), 0);  // all equal: the lowest id
  row[77] = 5.0f;
  row[n - 1] = 5.0f;  // a tie with a later token: the lower id wins
  EXPECT_EQ((*s)->SampleRow(row.data()), 77);
  row[n - 1] = 6.0f;  // the very last token (the vectorised loop's edge)
  EXPECT_EQ((*s)->SampleRow(row.data()), n - 1);
  row[5] = NAN;  // NaN never wins
  EXPECT_EQ((*s)->SampleRow(row.data()), n - 1);
  std::fill(row.begin(), row.end(), -INFINITY);
  row[9] = NAN;
  EXPECT_EQ((*s)->SampleRow(row.data()), 0);  // nothing finite: token 0
  row[12345] = -1e30f;
  EXPECT_EQ((*s)->SampleRow(row.data()), 12345);
}

TEST_F(SamplerTest, BiasesListedTwiceForATokenAddUp) {
  const int32_t n = model_->VocabSize();
  std::vector<float> row(static_cast<size_t>(n), 0.0f);
  row[500] = 5.0f;
  SamplingParams p;
  p.temperature = 0;
  p.logit_bias = {{42, 3.0f}, {42, 3.0f}};  // 6 > 5: token 42 wins only if they add up
  auto greedy = Sampler::Create(*model_, p);
  ASSERT_TRUE(greedy.ok());
  EXPECT_EQ((*greedy)->SampleRow(row.data()), 42);
  // The top-k path: as good as greedy at this temperature.
  SamplingParams q = Seeded(0.01f, 5, 0.95f, 0.05f, 1);
  q.logit_bias = p.logit_bias;
  auto topk = Sampler::Create(*model_, q);
  ASSERT_TRUE(topk.ok());
  ASSERT_TRUE((*topk)->RowOnly());
  EXPECT_EQ((*topk)->SampleRow(row.data()), 42);
}

// LlamaEngine::SampleMany (row-only samplers on the OpenMP team, the rest on
// the engine thread) gives what Sample gives one sequence after another: two
// copies of four sequences — greedy, top-k, top-p under the cap, and one with
// a penalty (the general path) — decoded side by side for 16 steps.
TEST_F(SamplerTest, SampleManyMatchesSamplingOneAfterAnother) {
  outpost::testing::UseEveryCpu();  // a team of two threads
  ContextOptions co;
  co.sessions = 8;
  co.ctx_per_session = 128;
  co.batch_size = 128;
  co.n_threads = 2;
  auto ctx = Context::Create(*model_, co);
  ASSERT_TRUE(ctx.ok());
  LlamaEngine engine(std::shared_ptr<const Model>(model_, [](const Model*) {}),
                     std::move(ctx).value());
  std::vector<SamplingParams> params(4);
  params[0].temperature = 0;
  params[1].temperature = 0.9f;
  params[1].top_k = 40;
  params[2].temperature = 1.1f;
  params[2].top_k = 0;
  params[2].top_p = 0.95f;
  params[3].temperature = 0.9f;
  params[3].top_k = 40;
  params[3].presence_penalty = 0.7f;
  for (int i = 0; i < 4; ++i) {
    params[i].seed = 100 + i;
    params[i].has_seed = true;
    ASSERT_TRUE(engine.StartSequence(i, params[i]).ok());
    ASSERT_TRUE(engine.StartSequence(i + 4, params[i]).ok());
  }
  const char* prompts[4] = {"The capital of France is", "Once upon a time",
                            "List three fruits:", "Water boils at"};
  std::vector<int32_t> pos(8, 0), idx(8, 0);
  engine.ClearBatch();
  for (SeqId q = 0; q < 8; ++q) {
    const auto toks = engine.Tokenize(prompts[q % 4], true, false);
    for (size_t j = 0; j < toks.size(); ++j)
      idx[q] = engine.Add(toks[j], pos[q]++, q, j + 1 == toks.size());
  }
  ASSERT_TRUE(engine.Decode().ok());
  const std::vector<SeqId> many = {0, 1, 2, 3};
  for (int step = 0; step < 16; ++step) {
    std::vector<Token> out(4);
    engine.SampleMany(many, std::span<const int32_t>(idx.data(), 4), out);
    std::vector<Token> one(4);
    for (SeqId q = 4; q < 8; ++q) one[q - 4] = engine.Sample(q, idx[q]);
    ASSERT_EQ(out, one) << "step " << step;
    engine.ClearBatch();
    for (SeqId q = 0; q < 8; ++q) idx[q] = engine.Add(out[q % 4], pos[q]++, q, true);
    ASSERT_TRUE(engine.Decode().ok());
  }
}

// Decodes `prompt`, then samples up to `n` tokens under `p`, feeding each back;
// stops after kNoToken or an end-of-generation token.
std::vector<Token> SampleUnder(const Model& model, const SamplingParams& p, int n) {
  ContextOptions co;
  co.sessions = 1;
  co.ctx_per_session = 128;
  co.batch_size = 64;
  auto ctx = Context::Create(model, co);
  EXPECT_TRUE(ctx.ok());
  if (!ctx.ok()) return {};
  auto sampler = Sampler::Create(model, p);
  EXPECT_TRUE(sampler.ok()) << sampler.status().ToString();
  if (!sampler.ok()) return {};
  auto prompt = model.Tokenize("Answer yes or no: is water wet?", true, false);
  (*ctx)->ClearBatch();
  int32_t idx = 0;
  for (size_t i = 0; i < prompt.size(); ++i)
    idx = (*ctx)->Add(prompt[i], static_cast<int32_t>(i), 0, i + 1 == prompt.size());
  EXPECT_TRUE((*ctx)->Decode().ok());
  int32_t pos = static_cast<int32_t>(prompt.size());
  std::vector<Token> out;
  for (int k = 0; k < n; ++k) {
    const Token t = (*sampler)->Sample(**ctx, idx);
    out.push_back(t);
    if (t == kNoToken || model.IsEndOfGeneration(t)) break;
    (*ctx)->ClearBatch();
    idx = (*ctx)->Add(t, pos++, 0, true);
    EXPECT_TRUE((*ctx)->Decode().ok());
  }
  return out;
}

// ignore_eos bans the end-of-generation tokens (-100); once a grammar's
// answer is complete they are all it allows. The grammar wins: the answer
// ends (llama.cpp's grammar threw, killing the server, when the draw had
// nothing but banned tokens).
TEST_F(SamplerTest, AGrammarEndsItsAnswerEvenWhenTheEndIsBanned) {
  for (float temperature : {0.0f, 0.8f}) {
    SamplingParams p = Seeded(temperature, 40, 0.95f, 0.05f, 7);
    p.grammar = R"(root ::= "yes")";
    for (Token t : model_->EndOfGenerationTokens()) p.logit_bias.emplace_back(t, -100.0f);
    const std::vector<Token> out = SampleUnder(*model_, p, 8);
    ASSERT_FALSE(out.empty());
    EXPECT_TRUE(model_->IsEndOfGeneration(out.back())) << "temperature " << temperature;
    std::string text;
    for (size_t i = 0; i + 1 < out.size(); ++i) text += model_->TokenPiece(out[i], false);
    EXPECT_EQ(text, "yes");
  }
}

// A grammar that dead-ends (no token can give the NUL it asks for next; a
// token starting with NUL is never allowed): the sampler says kNoToken,
// every time it is asked, instead of drawing a token the grammar refuses.
TEST_F(SamplerTest, AGrammarThatAllowsNoTokenGivesNoToken) {
  SamplingParams p = Seeded(0.8f, 40, 0.95f, 0.05f, 3);
  p.grammar = R"(root ::= "no" "\x00")";
  const std::vector<Token> out = SampleUnder(*model_, p, 8);
  ASSERT_GE(out.size(), 2u);
  EXPECT_EQ(out.back(), kNoToken);
  std::string text;
  for (size_t i = 0; i + 1 < out.size(); ++i) text += model_->TokenPiece(out[i], false);
  EXPECT_EQ(text, "no");
}

}  // namespace
}  // namespace outpost::engine
