// Memory accounting for engine contexts: the planner's overhead, a dry run of
// what a context would allocate, and what llama.cpp reports it allocated.
#include <llama-ext.h>
#include <llama.h>

#include <algorithm>
#include <memory>
#include <string>

#include "outpost/engine/context.h"

namespace outpost::engine {

uint64_t RuntimeAllowanceBytes(const ModelInfo& info) {
  return (58ull << 20) + 128ull * static_cast<uint64_t>(std::max(0, info.n_vocab));
}

uint64_t EstimateOverheadBytes(const ModelInfo& info, int32_t batch_size, int32_t sessions,
                               int32_t ctx_per_session, uint64_t compute_bytes) {
  const uint64_t f32 = 4;
  // The context's output buffer: one vocabulary-sized row of logits per sequence.
  const uint64_t logits =
      static_cast<uint64_t>(sessions) * static_cast<uint64_t>(info.n_vocab) * f32;
  const uint64_t runtime = RuntimeAllowanceBytes(info);
  if (compute_bytes > 0) return compute_bytes + logits + runtime;
  const uint64_t batch = static_cast<uint64_t>(batch_size);
  // Activations of one layer for the batch (residual, norms, Q/K/V, FFN ~4x).
  const uint64_t activations = batch * static_cast<uint64_t>(info.n_embd) * f32 * 16;
  // Attention scores for the batch over one session's context.
  const uint64_t scores =
      static_cast<uint64_t>(info.n_heads) * batch * static_cast<uint64_t>(ctx_per_session) * f32;
  // The graph's output tensor: the logits again.
  return logits + activations + scores + logits + runtime;
}

MemoryBreakdown Context::Breakdown(const llama_context* ctx) {
  MemoryBreakdown out;
  for (const auto& [buft, mb] : llama_get_memory_breakdown(ctx)) {
    out.model_bytes += mb.model;
    out.context_bytes += mb.context;
    out.compute_bytes += mb.compute;
  }
  return out;
}

MemoryBreakdown Context::MeasuredMemory() const {
  return Breakdown(ctx_);
}

StatusOr<MemoryBreakdown> Context::DryRun(const std::string& model_path, int32_t n_gpu_layers,
                                          const ContextOptions& options) {
  const QuietLlamaWarnings quiet;  // the real load repeats them
  llama_model_params mp = llama_model_default_params();
  mp.load_mode = LLAMA_LOAD_MODE_NONE;  // llama.cpp's dry run maps nothing
  mp.no_alloc = true;                   // metadata only; buffers are sized, not allocated
  mp.n_gpu_layers = n_gpu_layers;
  std::unique_ptr<llama_model, void (*)(llama_model*)> model(
      llama_model_load_from_file(model_path.c_str(), mp), &llama_model_free);
  if (model == nullptr) {
    return Status::InvalidArgument("llama.cpp could not read '" + model_path + "' for a dry run",
                                   "model");
  }
  std::unique_ptr<llama_context, void (*)(llama_context*)> ctx(
      llama_init_from_model(model.get(), Params(options)), &llama_free);
  if (ctx == nullptr) {
    return Status::ResourceExhausted("llama.cpp could not lay out a context for " +
                                     std::to_string(options.sessions) + " sequences x " +
                                     std::to_string(options.ctx_per_session) + " tokens");
  }
  return Breakdown(ctx.get());
}

}  // namespace outpost::engine
