// Loading a model for serving (or benchmarking): read the GGUF metadata, plan
// capacity, load weights, create the context, check what llama.cpp allocated
// against the plan, and start the model's scheduler on a LlamaEngine. Used by
// `outpost serve` and `outpost bench`, so both run exactly the same engine
// setup. Takes its own options, not the CLI's configuration.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "outpost/engine/types.h"
#include "outpost/models/memory_ledger.h"
#include "outpost/models/serving_set.h"
#include "outpost/scheduler/pinned_prompt.h"
#include "outpost/telemetry/stat_registry.h"
#include "outpost/util/status.h"

namespace outpost::models {

struct ModelRuntimeOptions {
  std::string path;  // GGUF file
  std::string id;    // id clients use; "" = file name without .gguf
  // The store's version when served from it: two versions of one id can be
  // loaded at once (a swap, a standby), their memory held as "<id>@<version>".
  std::string version;
  std::string chat_template_file;  // jinja overriding the GGUF's template; "" = the GGUF's
  bool split_reasoning = true;     // engine::ModelOptions::split_reasoning
  int32_t ctx_per_session = 4096;  // tokens per session (prompt + answer)
  int32_t parallel = 0;            // sessions; 0 = as many as fit, up to parallel_auto_max
  int32_t parallel_auto_max = 16;
  double headroom = 0.20;  // fraction added on top of the planned peak
  std::string kv_type = "f16";
  int32_t batch_size = 512;
  int32_t prefill_chunk = 256;
  int32_t speculative_draft = 0;      // n-gram guesses per sequence and step; 0 = off
  int32_t speculative_max_batch = 4;  // no guessing past this many decoding sequences
  int64_t batch_yield_ms = 5000;      // batch work rationed while users are active
  int32_t batch_busy_tokens = 1;      // (scheduler::SchedulerOptions)
  bool prefix_cache = true;
  int32_t queue_length = 16;
  int64_t queue_wait_ms = 30000;
  int64_t priority_aging_ms = 5000;
  int64_t step_budget_ms = 0;
  int32_t threads = 0;        // 0 = usable CPUs (util/cpus.h)
  int32_t threads_batch = 0;  // prompt work; 0 = threads
  int32_t gpu_layers = 0;     // -1 = all
  // Sampling defaults from the operator (only the set knobs); they win over
  // the GGUF's general.sampling.* keys and llama.cpp's defaults.
  engine::SamplingParams sampling;
  // Also serve /v1/embeddings: a second context of ctx_per_session tokens
  // (one input at a time), its memory held in the ledger as "<id>/embeddings".
  bool embeddings = false;
  // Prompt prefixes computed (or read from pinned_dir) as the model loads
  // (those whose `model` is empty or this model's id)
  // and restored from there once evicted (scheduler/pinned_prompt.h); ""
  // dir = computed, not saved. The directory is kept under
  // pinned_dir_max_bytes (the least recently used files of other models or
  // settings are removed first; the ones this model uses are kept).
  std::vector<scheduler::PinnedPrompt> pinned_prompts;
  std::string pinned_dir;
  uint64_t pinned_dir_max_bytes = 1ull << 30;
};

// Errors name the file or the limit that failed (NotFound, InvalidArgument,
// ResourceExhausted with the numbers). The model is planned against what
// `ledger` has left and holds its planned peak (with headroom) there while it
// is loaded. The returned model's scheduler is running and reports to `stats`
// under the label model=<id>. Ledger and registry must outlive the model.
StatusOr<std::shared_ptr<ServedModel>> LoadModel(const ModelRuntimeOptions& options,
                                                 MemoryLedger* ledger,
                                                 telemetry::StatRegistry* stats);

// The id clients use for the model: options.id, else the file name without .gguf.
std::string ModelIdFor(const ModelRuntimeOptions& options);

}  // namespace outpost::models
