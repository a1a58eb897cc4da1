// Context::DryRun: llama.cpp's dry run (no_alloc) sizes exactly the KV cache
// and compute scratch a real context of the same options allocates — the capacity plan's compute
// scratch comes from it — for the default model and for Gemma 3, whose
// sliding-window layers have a KV cache of their own; and a file it cannot
// read is an error naming the file.
#include <gtest/gtest.h>

#include "mocks/test_model.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "outpost/engine/context.h"
#include "outpost/engine/model.h"

namespace outpost::engine {
namespace {

void ExpectDryRunIsWhatCreateAllocates(const std::string& path, const ContextOptions& co) {
  InstallLlamaLogger(false);
  auto dry = Context::DryRun(path, 0, co);
  ASSERT_TRUE(dry.ok()) << dry.status().ToString();
  ModelOptions mo;
  mo.path = path;
  auto model = Model::Load(mo);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto ctx = Context::Create(**model, co);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  const MemoryBreakdown real = (*ctx)->MeasuredMemory();
  // (Weights are not compared: a dry run maps nothing, so it leaves out the
  // weights llama.cpp repacks into buffers of their own when it maps the
  // file — 13 MB of Gemma's. The plan takes the weights from the GGUF.)
  EXPECT_EQ(dry->context_bytes, real.context_bytes);
  EXPECT_EQ(dry->compute_bytes, real.compute_bytes);
  EXPECT_GT(dry->compute_bytes, 0u);
  // The overhead planned from it holds the compute scratch and one logits
  // row per output, and is well under the shape estimate.
  const uint64_t planned = EstimateOverheadBytes((*model)->info(), co.batch_size, co.max_outputs,
                                                 co.ctx_per_session, dry->compute_bytes);
  const uint64_t estimated =
      EstimateOverheadBytes((*model)->info(), co.batch_size, co.max_outputs, co.ctx_per_session);
  EXPECT_GE(planned, real.compute_bytes +
                         static_cast<uint64_t>(co.max_outputs) * (*model)->info().n_vocab * 4);
  EXPECT_LT(planned, estimated);
}

ContextOptions Options(int32_t sessions, int32_t ctx_per_session, int32_t batch_size,
                       int32_t max_outputs, KvType kv_type = KvType::kF16) {
  ContextOptions co;
  co.sessions = sessions;
  co.ctx_per_session = ctx_per_session;
  co.batch_size = batch_size;
  co.max_outputs = max_outputs;
  co.kv_type = kv_type;
  return co;
}

TEST(ContextDryRun, DefaultModelF16AndQ8Caches) {
  OUTPOST_TEST_MODEL(path);
  ExpectDryRunIsWhatCreateAllocates(path, Options(4, 1024, 256, 4));
  // Q8_0 turns flash attention on: a different graph; 9 rows: speculation's.
  ExpectDryRunIsWhatCreateAllocates(path, Options(3, 1024, 256, 9, KvType::kQ8_0));
}

TEST(ContextDryRun, GemmaWithItsSlidingWindowCache) {
  OUTPOST_TEST_GEMMA(path);
  ExpectDryRunIsWhatCreateAllocates(path, Options(2, 2048, 512, 2));
}

// Gemma's load warns of its full-size sliding-window cache. The dry run's copy
// of that warning is debug (the start-up log showed it twice); the real
// load's is still a warning.
TEST(ContextDryRun, ItsLoadWarningsAreDebugAndTheRealLoadsAreNot) {
  OUTPOST_TEST_GEMMA(path);
  InstallLlamaLogger(false);
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  sink->set_pattern("%l %v");
  const auto console = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink));
  size_t seen = 0;
  const auto logged = [&] {  // what was logged since the last call
    const std::string all = out.str();
    const std::string text = all.substr(seen);
    seen = all.size();
    return text;
  };
  const std::string warning = "warning llama.cpp: llama_kv_cache_iswa";
  ASSERT_TRUE(Context::DryRun(path, 0, Options(1, 1024, 256, 1)).ok());
  std::string text = logged();
  EXPECT_EQ(text.find(warning), std::string::npos) << text;
  ModelOptions mo;
  mo.path = path;
  auto model = Model::Load(mo);
  ASSERT_TRUE(model.ok());
  ASSERT_TRUE(Context::Create(**model, Options(1, 1024, 256, 1)).ok());
  text = logged();
  EXPECT_NE(text.find(warning), std::string::npos) << text;
  spdlog::set_default_logger(console);
}

TEST(ContextDryRun, AFileItCannotReadIsNamed) {
  InstallLlamaLogger(false);
  const std::string missing = "/nonexistent/outpost-dry-run.gguf";
  auto r = Context::DryRun(missing, 0, ContextOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(missing), std::string::npos) << r.status().ToString();
  const std::string junk =
      (std::filesystem::temp_directory_path() / "outpost-dry-run-junk.gguf").string();
  std::ofstream(junk) << "GGUF but not really";
  r = Context::DryRun(junk, 0, ContextOptions{});
  std::remove(junk.c_str());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(junk), std::string::npos) << r.status().ToString();
}

}  // namespace
}  // namespace outpost::engine
