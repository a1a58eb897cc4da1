// EstimateValidationBytes: what a validation reserves in the memory ledger
// covers what its quality comparison really allocates — both models with a
// context each, llama.cpp's KV and compute scratch and the logits rows of
// every position — and overshoots by no more than the runtime allowance.
// Gemma 3's 262,144-entry vocabulary is the case that matters: 256 logits
// rows of it are 256 MiB in the output buffer and again in the compute graph.
// A smoke prompt with a long answer makes a longer context: covered too.
#include <gtest/gtest.h>

#include "mocks/test_model.h"

#include <string>

#include "outpost/engine/context.h"
#include "outpost/engine/model.h"
#include "outpost/engine/quality.h"
#include "outpost/models/model_validation.h"

namespace outpost::models {
namespace {

void ExpectTheReservationCoversTheComparison(const std::string& path) {
  engine::InstallLlamaLogger(false);
  auto est = EstimateValidationBytes(path, path);
  ASSERT_TRUE(est.ok()) << est.status().ToString();
  engine::ModelOptions mo;
  mo.path = path;
  auto model = engine::Model::Load(mo);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const engine::ContextOptions co = engine::QualityContextOptions(engine::QualityOptions{});
  uint64_t real = 0;
  for (int i = 0; i < 2; ++i) {  // base and candidate: two contexts alive at once
    auto ctx = engine::Context::Create(**model, co);
    ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
    const engine::MemoryBreakdown m = (*ctx)->MeasuredMemory();
    const uint64_t output_buffer =
        static_cast<uint64_t>(co.max_outputs) * (*model)->info().n_vocab * sizeof(float);
    real += (*model)->info().weight_bytes + m.context_bytes + m.compute_bytes + output_buffer;
  }
  EXPECT_GE(*est, real) << "reserved " << *est << " for " << real;
  const uint64_t allowance = engine::RuntimeAllowanceBytes((*model)->info());
  EXPECT_LE(*est, real + 2 * allowance) << "reserved " << *est << " for " << real;
}

TEST(EstimateValidationBytes, CoversGemmasComparison) {
  OUTPOST_TEST_GEMMA(path);
  ExpectTheReservationCoversTheComparison(path);
}

TEST(EstimateValidationBytes, CoversTheDefaultModelsComparison) {
  OUTPOST_TEST_MODEL(path);
  ExpectTheReservationCoversTheComparison(path);
}

// Without a base there is no quality comparison: the smoke answers are the
// peak, and one of up to 4,096 tokens needs a long context — covered, and
// not by much more. (Against a base, the quality context, with its 256
// logits rows, is the larger on this small model; on one with more KV per
// token, 128 KiB for an 8B Llama, the long smoke context is.)
TEST(EstimateValidationBytes, CoversALongSmokeAnswer) {
  OUTPOST_TEST_MODEL(path);
  engine::InstallLlamaLogger(false);
  ValidationSuite suite;
  suite.smoke = {{"Tell me a long story about a lighthouse keeper.", "", "lighthouse", 4096}};
  auto short_est = EstimateValidationBytes(path, "");
  auto long_est = EstimateValidationBytes(path, "", suite);
  ASSERT_TRUE(short_est.ok() && long_est.ok());
  EXPECT_GT(*long_est, *short_est);

  engine::ModelOptions mo;
  mo.path = path;
  auto model = engine::Model::Load(mo);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto prompt = (*model)->ApplyChatTemplate({engine::ChatMessage("user", suite.smoke[0].prompt)});
  ASSERT_TRUE(prompt.ok());
  const auto tokens = (*model)->Tokenize(prompt->text, true, true);
  EXPECT_LT(tokens.size(), suite.smoke[0].prompt.size() + kSmokeTemplateTokens);
  const engine::ContextOptions co =
      engine::GreedyContextOptions(static_cast<int32_t>(tokens.size()), 4096, 0);
  auto ctx = engine::Context::Create(**model, co);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  const engine::MemoryBreakdown m = (*ctx)->MeasuredMemory();
  const uint64_t output_buffer =
      static_cast<uint64_t>(co.max_outputs) * (*model)->info().n_vocab * sizeof(float);
  const uint64_t real =
      (*model)->info().weight_bytes + m.context_bytes + m.compute_bytes + output_buffer;
  EXPECT_GE(*long_est, real) << "reserved " << *long_est << " for " << real;
  const uint64_t allowance = engine::RuntimeAllowanceBytes((*model)->info());
  // The prompt is counted as one token per byte, plus the template's share.
  const uint64_t slack =
      engine::KvBytesPerToken((*model)->info().n_layers, (*model)->info().n_kv_heads,
                              (*model)->info().head_dim_k, (*model)->info().head_dim_v, 2) *
      (suite.smoke[0].prompt.size() + kSmokeTemplateTokens);
  EXPECT_LE(*long_est, real + allowance + slack) << "reserved " << *long_est << " for " << real;
}

}  // namespace
}  // namespace outpost::models
