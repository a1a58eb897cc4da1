#include "outpost/models/overhead_plan.h"

#include <algorithm>

namespace outpost::models {

OverheadPlan OverheadPlan::For(const ModelRuntimeOptions& cfg, const engine::ModelInfo& info,
                               engine::KvType kv_type, int32_t most) {
  OverheadPlan p(cfg, info, kv_type);
  auto dry = engine::Context::DryRun(cfg.path, cfg.gpu_layers, p.ContextOptionsFor(most));
  if (dry.ok()) {
    p.compute_bytes_ = dry->compute_bytes;
  } else {
    p.dry_run_ = dry.status();
  }
  return p;
}

int32_t OverheadPlan::LogitsRows(int32_t sessions) const {
  // Each verified guess needs its own row, for at most speculative_max_batch
  // sequences.
  return sessions +
         std::min(sessions, cfg_.speculative_max_batch) * std::max(0, cfg_.speculative_draft);
}

engine::ContextOptions OverheadPlan::ContextOptionsFor(int32_t sessions) const {
  engine::ContextOptions co;
  co.sessions = sessions;
  co.ctx_per_session = cfg_.ctx_per_session;
  co.batch_size = cfg_.batch_size;
  co.n_threads = cfg_.threads;
  co.n_threads_batch = cfg_.threads_batch;
  co.kv_type = kv_type_;
  co.max_outputs = LogitsRows(sessions);
  return co;
}

uint64_t OverheadPlan::BytesFor(int32_t sessions) const {
  return engine::EstimateOverheadBytes(info_, cfg_.batch_size, LogitsRows(sessions),
                                       cfg_.ctx_per_session, compute_bytes_);
}

}  // namespace outpost::models
