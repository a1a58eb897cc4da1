// Memory accounting for engine contexts: the planner's estimate and what
// llama.cpp reports it allocated.
#include <llama-ext.h>
#include <llama.h>

#include "outpost/engine/context.h"

namespace outpost::engine {

uint64_t EstimateOverheadBytes(const ModelInfo& info, int32_t batch_size, int32_t sessions,
                               int32_t ctx_per_session) {
  const uint64_t f32 = 4;
  const uint64_t batch = static_cast<uint64_t>(batch_size);
  // Logits: the context's output buffer and the graph's output tensor, one
  // vocabulary-sized row per sequence each.
  const uint64_t logits =
      2 * static_cast<uint64_t>(sessions) * static_cast<uint64_t>(info.n_vocab) * f32;
  // Activations of one layer for the batch (residual, norms, Q/K/V, FFN ~4x).
  const uint64_t activations = batch * static_cast<uint64_t>(info.n_embd) * f32 * 16;
  // Attention scores for the batch over one session's context.
  const uint64_t scores =
      static_cast<uint64_t>(info.n_heads) * batch * static_cast<uint64_t>(ctx_per_session) * f32;
  const uint64_t runtime = 64ull << 20;  // allocator slack, thread stacks, tokenizer tables
  return logits + activations + scores + runtime;
}

MemoryBreakdown Context::MeasuredMemory() const {
  MemoryBreakdown out;
  for (const auto& [buft, mb] : llama_get_memory_breakdown(ctx_)) {
    out.model_bytes += mb.model;
    out.context_bytes += mb.context;
    out.compute_bytes += mb.compute;
  }
  return out;
}

}  // namespace outpost::engine
