// Overhead plan — what the capacity plan counts beyond a model's weights and
// KV cache, the same for `outpost serve` (LoadModel) and `outpost plan` (a
// GGUF at hand), so the two cannot disagree on how many sessions fit:
//
//   overhead(sessions) = llama.cpp's compute scratch, from its own dry run of
//                        the context at the most sessions the plan may choose
//                      + one logits row per row a step may ask for (a row per
//                        session, plus speculation's guesses)
//                      + the runtime allowance (engine::EstimateOverheadBytes)
//
// The scratch does not grow with sessions (15.5-15.7 MiB for the default model
// from 1 to 64), so one dry run serves every count. Where the dry run fails
// the scratch is estimated from the model's shapes (on the high side) and
// `dry_run()` says why. Immutable after For(); thread-safe.
#pragma once

#include <cstdint>

#include "outpost/engine/context.h"
#include "outpost/engine/model_info.h"
#include "outpost/models/model_runtime.h"
#include "outpost/util/status.h"

namespace outpost::models {

class OverheadPlan {
 public:
  // Runs llama.cpp's dry run of `cfg.path` (metadata only; nothing mapped) at
  // `most` sessions. `info` is that file's metadata (engine::ReadModelInfo).
  static OverheadPlan For(const ModelRuntimeOptions& cfg, const engine::ModelInfo& info,
                          engine::KvType kv_type, int32_t most);

  // The context `sessions` sessions get (LoadModel creates exactly this one).
  engine::ContextOptions ContextOptionsFor(int32_t sessions) const;
  // Planned bytes beyond weights and KV at `sessions` sessions.
  uint64_t BytesFor(int32_t sessions) const;
  // The scratch the dry run measured; 0 when it failed.
  uint64_t compute_bytes() const { return compute_bytes_; }
  // OK, or why the dry run failed (the plan then uses the shape estimate).
  const Status& dry_run() const { return dry_run_; }

 private:
  OverheadPlan(const ModelRuntimeOptions& cfg, const engine::ModelInfo& info,
               engine::KvType kv_type)
      : cfg_(cfg), info_(info), kv_type_(kv_type) {}
  int32_t LogitsRows(int32_t sessions) const;

  ModelRuntimeOptions cfg_;
  engine::ModelInfo info_;
  engine::KvType kv_type_;
  uint64_t compute_bytes_ = 0;
  Status dry_run_;
};

}  // namespace outpost::models
