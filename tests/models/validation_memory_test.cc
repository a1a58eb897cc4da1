// EstimateValidationBytes: what a validation reserves in the memory ledger
// covers what its quality comparison really allocates — both models with a
// context each, llama.cpp's KV and compute scratch and the logits rows of
// every position — and overshoots by no more than the runtime allowance.
// Gemma 3's 262,144-entry vocabulary is the case that matters: 256 logits
// rows of it are 256 MiB in the output buffer and again in the compute graph.
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

}  // namespace
}  // namespace outpost::models
