// RequantizeHead — a copy of a GGUF model whose output head is stored in a
// smaller type, every other tensor copied byte for byte.
//
// Why: a small model's decode reads every weight once per token, and in a
// small model the output head (n_vocab x n_embd) is a large share of them —
// 170 of Gemma 3 270M's 235 MiB, 29 of SmolLM2 135M's 92 MiB — usually kept
// at Q8_0 (llama-quantize's choice for the head, and its fallback when
// n_embd is no multiple of 256). Stored as IQ4_NL or Q4_0 it is half the
// bytes and runs on the CPU backend's repacked 4-bit kernels: on a 2-vCPU
// AVX-512 box Gemma 3 270M decoded 72.8 → 123 tokens/s and SmolLM2 137.6 →
// 178.5 (llama-bench tg64, docs/performance.md), at a perplexity cost that
// `outpost model validate` measures before the version can serve.
//
// The head is `output.weight`, or `token_embd.weight` when the model ties
// its head to the input embedding (Gemma, SmolLM2): the embedding then
// changes too (its rows are read once per token, so only the head's share
// matters for speed). The file's other tensors, its metadata and its
// general.file_type stay as they were; a split model is read whole and
// written as one file. Blocking (seconds for these models); thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "outpost/engine/model_info.h"
#include "outpost/util/status.h"

namespace outpost::engine {

// The types a head may be given: the 32-wide block types, which fit any
// n_embd that is a multiple of 32 (llama-quantize silently falls back from
// the 256-wide K types otherwise). Lower case, as llama-quantize names them.
const std::vector<std::string>& HeadTypeNames();

struct HeadRequantizeResult {
  std::string tensor;     // "output.weight" or "token_embd.weight" (tied)
  std::string from_type;  // "q8_0", ...
  std::string to_type;    // as asked
  uint64_t head_bytes_before = 0, head_bytes_after = 0;
  uint64_t file_bytes_before = 0, file_bytes_after = 0;  // all shards before
};

// Writes `out_path` (replaced if it exists; removed again on failure).
// Errors: InvalidArgument (param "head") for a type not in HeadTypeNames(),
// a head that already has that type, or one whose row length the type's
// block does not divide; NotFound for a missing `in_path`; InvalidArgument
// (param "model") for a file that is no GGUF or has no head tensor;
// ResourceExhausted, before writing, when `out_path`'s disk lacks room for
// the new file and 5% more; Internal when llama.cpp's quantizer fails (its
// log says why).
StatusOr<HeadRequantizeResult> RequantizeHead(const std::string& in_path,
                                              const std::string& out_path, const std::string& type,
                                              int32_t n_threads = 0);

}  // namespace outpost::engine
