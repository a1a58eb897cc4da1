// OverheadPlan: the bytes beyond weights and KV that `serve` and `outpost
// plan` both count — llama.cpp's dry-run compute scratch, a logits row per
// row a step may ask for (speculation's guesses included), the runtime
// allowance — and the shape estimate when the dry run cannot read the file.
#include <gtest/gtest.h>

#include "mocks/temp_file.h"
#include "mocks/test_model.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "outpost/engine/model.h"
#include "outpost/engine/model_info.h"
#include "outpost/models/overhead_plan.h"

namespace outpost::models {
namespace {

TEST(OverheadPlan, DryRunScratchAndALogitsRowPerRow) {
  OUTPOST_TEST_MODEL(path);
  engine::InstallLlamaLogger(false);
  auto info = engine::ReadModelInfo(path);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  ModelRuntimeOptions cfg;
  cfg.path = path;
  cfg.ctx_per_session = 2048;
  cfg.speculative_draft = 3;
  cfg.speculative_max_batch = 4;
  const auto plan = OverheadPlan::For(cfg, *info, engine::KvType::kF16, 8);
  ASSERT_TRUE(plan.dry_run().ok()) << plan.dry_run().ToString();
  auto dry = engine::Context::DryRun(path, 0, plan.ContextOptionsFor(8));
  ASSERT_TRUE(dry.ok());
  EXPECT_EQ(plan.compute_bytes(), dry->compute_bytes);
  EXPECT_GT(plan.compute_bytes(), 0u);
  const uint64_t row = static_cast<uint64_t>(info->n_vocab) * sizeof(float);
  for (int32_t n : {1, 2, 4, 5, 8, 16}) {
    // A row per session, and three guesses for at most four of them.
    const int32_t rows = n + std::min(n, 4) * 3;
    const engine::ContextOptions co = plan.ContextOptionsFor(n);
    EXPECT_EQ(co.sessions, n);
    EXPECT_EQ(co.max_outputs, rows) << n;
    EXPECT_EQ(co.ctx_per_session, 2048);
    EXPECT_EQ(plan.BytesFor(n),
              plan.compute_bytes() + rows * row + engine::RuntimeAllowanceBytes(*info))
        << n;
  }
  // 64 MiB for the default model's 49,152-entry vocabulary.
  EXPECT_EQ(engine::RuntimeAllowanceBytes(*info), 64ull << 20);
  // Past speculation's cap each session adds one row.
  EXPECT_EQ(plan.BytesFor(9) - plan.BytesFor(8), row);
  EXPECT_EQ(plan.BytesFor(2) - plan.BytesFor(1), 4 * row);
}

TEST(OverheadPlan, AFileTheDryRunCannotReadFallsBackToTheShapeEstimate) {
  OUTPOST_TEST_MODEL(path);
  engine::InstallLlamaLogger(false);
  auto info = engine::ReadModelInfo(path);
  ASSERT_TRUE(info.ok());
  const std::filesystem::path junk = testing::TempPath("_overhead_plan_junk.gguf");
  std::ofstream(junk) << "GGUF but not really";
  ModelRuntimeOptions cfg;
  cfg.path = junk.string();
  const auto plan = OverheadPlan::For(cfg, *info, engine::KvType::kF16, 4);
  EXPECT_FALSE(plan.dry_run().ok());
  EXPECT_NE(plan.dry_run().message().find(junk.string()), std::string::npos)
      << plan.dry_run().message();
  EXPECT_EQ(plan.compute_bytes(), 0u);
  EXPECT_EQ(plan.BytesFor(4),
            engine::EstimateOverheadBytes(*info, cfg.batch_size, 4, cfg.ctx_per_session));
  std::filesystem::remove(junk);
}

}  // namespace
}  // namespace outpost::models
