// Context — the decoding state for one model: llama.cpp context, KV cache with
// one stream per sequence, and the batch being assembled for the next step.
//
// Owned by the scheduler; engine thread only (llama.cpp contexts are not
// thread-safe). Memory for the KV cache of all sequences is allocated once at
// Create(), so running sequences can never push the process past its plan.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "outpost/engine/kv_layout.h"
#include "outpost/engine/model.h"
#include "outpost/engine/types.h"
#include "outpost/util/status.h"

struct llama_context;
struct llama_context_params;
struct llama_batch;

namespace outpost::engine {

struct ContextOptions {
  int32_t sessions = 1;            // concurrent sequences
  int32_t ctx_per_session = 4096;  // tokens of context each sequence may hold
  int32_t batch_size = 512;        // max tokens per decode step (decode + prefill chunk)
  int32_t n_threads = 0;           // 0 = the CPUs this process may use (util/cpus.h)
  int32_t n_threads_batch = 0;     // prompt (batched) work; 0 = n_threads
  KvType kv_type = KvType::kF16;
  int32_t max_outputs = 0;  // logits rows one decode may ask for; 0 = one per session
};

// Bytes llama.cpp allocated, summed over its buffer types (CPU, GPU...).
struct MemoryBreakdown {
  uint64_t model_bytes = 0;    // weights (mmapped pages count once touched)
  uint64_t context_bytes = 0;  // KV cache + output (logits) buffers
  uint64_t compute_bytes = 0;  // scratch for the largest graph
  uint64_t total() const { return model_bytes + context_bytes + compute_bytes; }
};

// The runtime allowance of a model's plan: allocator slack, thread stacks,
// the HTTP front, the binary's own pages (58 MiB), and the tokenizer's tables,
// which grow with the vocabulary (128 bytes an entry: resident memory after
// load, beyond weights, KV and llama.cpp's buffers, was 6.5 MiB for the
// default model's 49,152 entries and ~32 MiB for Gemma 3's 262,144). 64 MiB
// for the default model.
uint64_t RuntimeAllowanceBytes(const ModelInfo& info);

// Planned bytes beyond weights and KV for a context: compute scratch, the
// output buffer's logits (one row per sequence; not in llama.cpp's memory
// breakdown) and the runtime allowance (RuntimeAllowanceBytes).
// `compute_bytes` is the scratch a dry run measured (Context::DryRun); 0 =
// estimate it from the shapes — a batch of batch_size tokens attending over
// ctx_per_session, its logits — which is deliberately on the high side: 1.6x
// the real scratch for Gemma 3 at 4 x 1,024 tokens, 3.5x for the default
// model at 7 x 2,048, 6x at 16 x 4,096.
uint64_t EstimateOverheadBytes(const ModelInfo& info, int32_t batch_size, int32_t sessions,
                               int32_t ctx_per_session, uint64_t compute_bytes = 0);

// What would make llama.cpp's CPU threads slow here, one line per finding
// for the start-up log (none: empty). llama.cpp hands each of a step's
// hundreds of operations to its threads and they meet at a barrier after
// each, so (measured on a 2-vCPU box, docs/performance.md#threads-and-cpus):
// - more threads than usable CPUs (`threads`/`threads_batch` above
//   util::UsableCpus) wait at every barrier for a thread that is not
//   running: 3-4 decode threads on 2 CPUs ran at a third of 2 threads' speed;
// - with llama.cpp built with OpenMP, a thread that sleeps at each barrier
//   instead of spinning a while: OMP_WAIT_POLICY=passive made decode 5x
//   slower, GOMP_SPINCOUNT=0 3x (any spin count from 1000 up, or unset, ran
//   at full speed). The environment is read as the process starts, so
//   Outpost can only name it. `threads` 0 = usable CPUs.
std::vector<std::string> CpuThreadWarnings(int32_t threads, int32_t threads_batch);
// The same from explicit inputs, for tests: `usable` CPUs, whether the CPU
// backend uses OpenMP, OMP_WAIT_POLICY and GOMP_SPINCOUNT (null = unset).
std::vector<std::string> CpuThreadWarnings(int32_t threads, int32_t threads_batch, int usable,
                                           bool openmp, const char* wait_policy,
                                           const char* spin_count);

class Context {
 public:
  // Errors: ResourceExhausted when llama.cpp cannot allocate the KV cache.
  static StatusOr<std::unique_ptr<Context>> Create(const Model& model,
                                                   const ContextOptions& options);
  // What Create would allocate for the model file at `model_path` (loaded
  // with `n_gpu_layers`, as Model::Load would) and `options`, without
  // allocating it: llama.cpp's dry run (llama_model_params.no_alloc) reads
  // the file's metadata, lays the KV cache out on paper and reserves the
  // compute graph: its KV and compute bytes are what the real context gets
  // (tests/engine/dry_run_test.cc); its weight bytes leave out what llama.cpp
  // repacks when it maps the file. Costs the tokenizer's tables: ~0.1 s for
  // the default model, ~0.5 s for a 262k vocabulary. llama.cpp's load
  // warnings are logged at debug here (the real load repeats them). Errors:
  // InvalidArgument naming the file when llama.cpp cannot load it,
  // ResourceExhausted when it cannot lay out the context.
  static StatusOr<MemoryBreakdown> DryRun(const std::string& model_path, int32_t n_gpu_layers,
                                          const ContextOptions& options);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // Batch assembly for one decode step. Add returns the token's index in the
  // batch (use it with Sampler::Sample when want_logits).
  // REQUIRES: BatchSize() < options.batch_size.
  void ClearBatch();
  int32_t Add(Token token, int32_t pos, SeqId seq, bool want_logits);
  int32_t BatchSize() const;

  // Runs the model on the batch. Errors: ResourceExhausted (no KV slot),
  // Cancelled (aborted), Internal (other llama.cpp failures).
  Status Decode();
  // Decode() that stops at the next graph node once `interrupt` is true:
  // Cancelled, and every cell the batch had added is removed again (llama.cpp
  // removes the interrupted micro-batch's; this removes the earlier ones').
  // Plain Decode() when the memory could not be cut back exactly (sliding
  // window, recurrent state). REQUIRES: `interrupt` outlives the call.
  Status DecodeInterruptible(const std::atomic<bool>& interrupt);

  // log p(token) under the raw (untempered) distribution at batch index idx
  // of the last decode, with the n_top most likely tokens (best first).
  TokenLogprob TopLogProbs(int32_t idx, Token token, int32_t n_top) const;

  // The whole log-softmax row at batch index idx of the last decode
  // (VocabSize() values), for quality comparisons (engine/quality.h).
  void LogProbs(int32_t idx, std::vector<float>* out) const;

  // dst's KV becomes a copy of src's: shared cells in a unified cache, a
  // buffer copy (at the next decode) with one stream per sequence.
  void CopySequence(SeqId src, SeqId dst);
  // dst's KV becomes a copy of the cells src holds, at once, through a
  // buffer of their size (llama_state_seq_get_data / _set_data); contract as
  // Engine::CopyCells.
  Status CopyCells(SeqId src, SeqId dst);
  // Frees the KV cells of `seq` at once.
  void RemoveSequence(SeqId seq);
  // Drops seq's cells at positions >= keep. False when the memory cannot
  // remove part of a sequence (nothing changed then).
  bool TrimSequence(SeqId seq, int32_t keep);
  // The lowest position seq holds cells for; -1 when none.
  int32_t SequencePosMin(SeqId seq) const;
  // Sequence state to and from a file (llama_state_seq_save_file /
  // _load_file); contracts as Engine::SaveSequence / LoadSequence.
  Status SaveSequence(SeqId seq, const std::string& path, std::span<const Token> tokens);
  StatusOr<std::vector<Token>> LoadSequence(SeqId seq, const std::string& path, size_t max_tokens);

  // Bytes of KV cache allocated by llama.cpp for all sequences.
  uint64_t KvBytesAllocated() const { return kv_bytes_; }
  // The decode threads the context runs with (n_threads resolved).
  int32_t Threads() const;
  // What llama.cpp actually allocated (from its memory breakdown).
  MemoryBreakdown MeasuredMemory() const;
  const ContextOptions& options() const { return options_; }
  llama_context* raw() const { return ctx_; }

 private:
  Context() = default;
  // llama.cpp's parameters for `options` (Create and DryRun).
  static llama_context_params Params(const ContextOptions& options);
  // The breakdown of a context, summed over buffer types.
  static MemoryBreakdown Breakdown(const llama_context* ctx);

  ContextOptions options_;
  llama_context* ctx_ = nullptr;
  std::unique_ptr<llama_batch> batch_;
  uint64_t kv_bytes_ = 0;
  bool can_interrupt_ = false;  // full-attention KV only (Create)
  // Read by llama.cpp's abort callback on its compute threads; set only
  // around one llama_decode by the engine thread.
  const std::atomic<bool>* interrupt_ = nullptr;
  static bool AbortRequested(void* self);
};

}  // namespace outpost::engine
