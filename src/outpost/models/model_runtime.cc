#include "outpost/models/model_runtime.h"

#include "outpost/models/model_stats.h"
#include "outpost/models/overhead_plan.h"
#include "outpost/telemetry/genai_stats.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "outpost/engine/context.h"
#include "outpost/engine/embedder.h"
#include "outpost/engine/llama_engine.h"
#include "outpost/engine/model.h"
#include "outpost/scheduler/capacity.h"
#include "outpost/scheduler/scheduler.h"
#include "outpost/util/units.h"
#include "outpost/version.h"

namespace outpost::models {
namespace {

// What a saved pinned prefix depends on beside its tokens: the model file
// (real path, size, modification time), llama.cpp's state format, the KV
// type, the context per session and the session count (one KV stream each).
std::string PinnedKey(const ModelRuntimeOptions& cfg, int32_t sessions) {
  std::error_code ec;
  const auto real = std::filesystem::canonical(cfg.path, ec);
  const std::string path = ec ? cfg.path : real.string();
  const auto size = std::filesystem::file_size(path, ec);
  const auto mtime = std::filesystem::last_write_time(path, ec).time_since_epoch().count();
  return path + "|" + std::to_string(ec ? 0 : size) + "|" + std::to_string(mtime) + "|" +
         OUTPOST_LLAMA_VERSION + "|" + cfg.kv_type + "|" + std::to_string(cfg.ctx_per_session) +
         "|" + std::to_string(sessions);
}

}  // namespace

std::string ModelIdFor(const ModelRuntimeOptions& cfg) {
  if (!cfg.id.empty()) return cfg.id;
  // From the real file name (the bootstrap's default.gguf is a symlink).
  std::error_code ec;
  const auto real = std::filesystem::canonical(cfg.path, ec);
  std::string stem = (ec ? std::filesystem::path(cfg.path) : real).stem().string();
  // A split model's first shard, NAME-00001-of-00003: the model is NAME.
  constexpr size_t kSplitSuffix = sizeof("-00001-of-00003") - 1;
  if (stem.size() > kSplitSuffix && stem.compare(stem.size() - kSplitSuffix, 7, "-00001-") == 0 &&
      stem.compare(stem.size() - 9, 4, "-of-") == 0) {
    stem.resize(stem.size() - kSplitSuffix);
  }
  return stem;
}

StatusOr<std::shared_ptr<ServedModel>> LoadModel(const ModelRuntimeOptions& cfg,
                                                 MemoryLedger* ledger,
                                                 telemetry::StatRegistry* stats) {
  const std::string id = ModelIdFor(cfg);
  const auto load_start = std::chrono::steady_clock::now();
  auto info = engine::ReadModelInfo(cfg.path);
  if (!info.ok()) return info.status();
  auto kv_type = engine::ParseKvType(cfg.kv_type);
  if (!kv_type.ok()) return kv_type.status();

  scheduler::CapacityInputs in;
  in.weight_bytes = info->weight_bytes;
  in.kv_bytes_per_token =
      scheduler::KvBytesPerToken(info->n_layers, info->n_kv_heads, info->head_dim_k,
                                 info->head_dim_v, engine::KvBytesPerElement(*kv_type));
  in.ctx_per_session = cfg.ctx_per_session;
  const int32_t most = cfg.parallel > 0 ? cfg.parallel : cfg.parallel_auto_max;
  const OverheadPlan overhead = OverheadPlan::For(cfg, *info, *kv_type, most);
  if (!overhead.dry_run().ok()) {
    spdlog::warn("capacity: {}; planning with compute scratch estimated from the model's shapes",
                 overhead.dry_run().message());
  }
  in.overhead_bytes = overhead.BytesFor(most);
  // Planned against what the other loaded models left of the one budget.
  in.memory_budget_bytes = ledger->available();
  in.headroom_fraction = cfg.headroom;
  if (in.memory_budget_bytes == 0) {
    return Status::ResourceExhausted("model '" + id + "': nothing is left of the memory budget " +
                                     util::FormatBytes(ledger->budget()) +
                                     " after the models already loaded; raise memory_budget");
  }
  if (cfg.ctx_per_session > info->n_ctx_train && info->n_ctx_train > 0) {
    spdlog::warn("ctx_size {} exceeds the model's training context {}", cfg.ctx_per_session,
                 info->n_ctx_train);
  }
  auto plan = scheduler::PlanCapacity(in, cfg.parallel, cfg.parallel_auto_max);
  if (!plan.ok()) return plan.status();
  if (cfg.parallel == 0) {
    // The overhead grows with the session count (one logits row each), and the
    // first estimate assumed the cap. Settle on the largest count that fits
    // with its own overhead.
    in.overhead_bytes = overhead.BytesFor(plan->sessions);
    auto wider = scheduler::PlanCapacity(in, 0, cfg.parallel_auto_max);
    for (int32_t n = wider.ok() ? wider->sessions : plan->sessions; n >= 1; --n) {
      in.overhead_bytes = overhead.BytesFor(n);
      auto p = scheduler::PlanCapacity(in, n, cfg.parallel_auto_max);
      if (p.ok()) {
        plan = std::move(p);
        break;
      }
    }
  }
  spdlog::info("model {}: {} ({}), {} layers, {} KV heads x {} dim, vocab {}, {} parameters",
               info->name, info->architecture, util::FormatBytes(info->file_bytes), info->n_layers,
               info->n_kv_heads, info->head_dim_k, info->n_vocab, info->n_params);
  spdlog::info("{}", plan->ToText());

  engine::ModelOptions mo;
  mo.sampling = cfg.sampling;
  mo.path = cfg.path;
  mo.n_gpu_layers = cfg.gpu_layers;
  mo.split_reasoning = cfg.split_reasoning;
  if (!cfg.chat_template_file.empty()) {
    std::ifstream in(cfg.chat_template_file);
    if (!in) {
      return Status::NotFound("chat template file '" + cfg.chat_template_file + "' cannot be read",
                              "chat_template_file");
    }
    std::ostringstream text;
    text << in.rdbuf();
    mo.chat_template = text.str();
  }
  auto model = engine::Model::Load(mo);
  if (!model.ok()) return model.status();

  auto ctx = engine::Context::Create(**model, overhead.ContextOptionsFor(plan->sessions));
  if (!ctx.ok()) return ctx.status();
  const auto actual = (*ctx)->MeasuredMemory();
  spdlog::info(
      "allocated by llama.cpp: weights {}, KV and outputs {}, compute {} (planned KV {}, overhead "
      "{})",
      util::FormatBytes(actual.model_bytes), util::FormatBytes(actual.context_bytes),
      util::FormatBytes(actual.compute_bytes),
      util::FormatBytes(plan->kv_bytes_per_session * static_cast<uint64_t>(plan->sessions)),
      util::FormatBytes(plan->overhead_bytes));

  // The plan is an estimate; what llama.cpp really allocated must fit too.
  if (actual.total() > plan->usable_bytes) {
    return Status::ResourceExhausted("llama.cpp allocated " + util::FormatBytes(actual.total()) +
                                     " for " + std::to_string(plan->sessions) +
                                     " sessions, more than the usable " +
                                     util::FormatBytes(plan->usable_bytes) +
                                     "; lower parallel or ctx_size, or raise memory_budget");
  }

  scheduler::SchedulerOptions so;
  so.sessions = plan->sessions;
  so.ctx_per_session = cfg.ctx_per_session;
  so.batch_size = cfg.batch_size;
  so.prefill_chunk = std::min(cfg.prefill_chunk, cfg.batch_size);
  so.prefix_cache = cfg.prefix_cache;
  so.max_queue = cfg.queue_length;
  so.max_queue_wait_ms = cfg.queue_wait_ms;
  so.priority_aging_ms = cfg.priority_aging_ms;
  so.step_budget_ms = cfg.step_budget_ms;
  so.spec_draft_max = cfg.speculative_draft;
  so.spec_max_batch = cfg.speculative_max_batch;
  so.batch_yield_ms = cfg.batch_yield_ms;
  so.batch_busy_tokens = cfg.batch_busy_tokens;
  so.kv_bytes_per_token = plan->kv_bytes_per_token;
  for (const scheduler::PinnedPrompt& p : cfg.pinned_prompts) {
    if (p.model.empty() || p.model == id) so.pinned.push_back(p);
  }
  so.pinned_dir = cfg.pinned_dir;
  so.pinned_dir_max_bytes = cfg.pinned_dir_max_bytes;
  so.pinned_key = PinnedKey(cfg, plan->sessions);

  auto reservation =
      ledger->Reserve(cfg.version.empty() ? id : id + "@" + cfg.version, plan->required_bytes);
  if (!reservation.ok()) return reservation.status();
  auto served = std::make_shared<ServedModel>();
  served->id = id;
  served->version = cfg.version;
  served->memory = std::move(reservation).value();
  served->created = static_cast<int64_t>(std::time(nullptr));
  const size_t h = std::hash<std::string>{}(info->name + "|" + std::to_string(info->file_bytes) +
                                            "|" + OUTPOST_VERSION + "|" + OUTPOST_LLAMA_VERSION);
  char fp[32];
  std::snprintf(fp, sizeof fp, "fp_%010llx", static_cast<unsigned long long>(h & 0xffffffffffULL));
  served->system_fingerprint = fp;
  served->plan = *plan;
  served->info = *info;
  std::shared_ptr<const engine::Model> shared_model = std::move(model).value();
  auto engine = std::make_unique<engine::LlamaEngine>(shared_model, std::move(ctx).value());
  // Two versions of one model (a canary, a swap) are two series; an unloaded
  // version's gauges go to 0, so sums over versions stay true.
  const std::vector<std::string> model_label = ServedModelLabelNames();
  const std::vector<std::string> model_values = ServedModelLabels(*served);
  const ModelStats model_stats = ModelStats::Register(*stats, model_label, model_values);
  served->on_unload = [stats, model_label, model_values] {
    ModelStats::Register(*stats, model_label, model_values).ZeroGauges();
    scheduler::SchedulerStats::Register(*stats, model_label, model_values).ZeroGauges();
  };
  model_stats.memory_budget_bytes.Set(static_cast<double>(plan->budget_bytes));
  model_stats.memory_planned_peak_bytes.Set(static_cast<double>(plan->peak_bytes));
  model_stats.weight_bytes.Set(static_cast<double>(plan->weight_bytes));
  served->scheduler = std::make_shared<scheduler::Scheduler>(
      std::move(engine), so,
      scheduler::SchedulerStats::Register(*stats, model_label, model_values));
  served->genai = std::make_shared<telemetry::GenAiServerStats>(stats, served->id);
  served->scheduler->SetGenAiStats(served->genai);
  served->scheduler->WarmPinned();
  served->scheduler->Start();
  model_stats.load_seconds.Set(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count());
  model_stats.loaded.Set(1);
  if (cfg.embeddings) {
    auto embedder = engine::Embedder::Create(shared_model, cfg.ctx_per_session, cfg.threads);
    if (!embedder.ok()) return embedder.status();
    // Its memory counts against the same budget as the sessions'.
    const uint64_t bytes = (*embedder)->allocated_bytes();
    auto held =
        ledger->Reserve((cfg.version.empty() ? id : id + "@" + cfg.version) + "/embeddings", bytes);
    if (!held.ok()) {
      return Status::ResourceExhausted("model '" + id + "': the embeddings context needs " +
                                       util::FormatBytes(bytes) + ": " + held.status().message());
    }
    served->embeddings_memory = std::move(held).value();
    spdlog::info("embeddings: {} dimensions, inputs up to {} tokens, {} held",
                 (*embedder)->dimensions(), (*embedder)->max_tokens(), util::FormatBytes(bytes));
    served->embeddings =
        std::make_shared<EmbeddingService>(shared_model, std::move(embedder).value());
  }
  return served;
}

}  // namespace outpost::models
