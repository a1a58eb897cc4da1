// ModelInfo — what Outpost needs to know about a GGUF model to plan memory,
// read from the file's metadata without loading the weights.
//
// Plain value type; no llama.cpp types leak out. Thread-safe to copy.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "outpost/util/status.h"

namespace outpost::engine {

struct ModelInfo {
  std::string path;
  std::string name;           // general.name, or the file stem
  std::string architecture;   // general.architecture ("gemma3", "llama", ...)
  std::string file_type;      // quantization as written by llama.cpp ("Q4_K - Medium")
  int64_t file_type_id = -1;  // general.file_type as a number (-1: absent)
  uint64_t file_bytes = 0;
  uint64_t weight_bytes = 0;  // sum of tensor data sizes
  uint64_t n_params = 0;
  int32_t n_layers = 0;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;  // max over layers when per-layer
  int32_t head_dim_k = 0;  // key length per head
  int32_t head_dim_v = 0;  // value length per head
  int32_t n_embd = 0;
  int32_t n_vocab = 0;
  int32_t n_ctx_train = 0;
  int32_t sliding_window = 0;  // 0 when the model has no sliding-window layers
  // A model split across files by llama.cpp's gguf-split
  // (PREFIX-00001-of-00003.gguf, …): every file, first to last; file_bytes,
  // weight_bytes and n_params are their totals. Empty for a single file.
  std::vector<std::string> shards;
};

// Reads the metadata of the GGUF at `path` — for a split model, the first
// shard, whose siblings are found beside it by llama.cpp's naming and read
// too. Errors: NotFound when the file (or a shard) is missing,
// InvalidArgument when it is not a GGUF, is truncated, is a shard other
// than the first, or lacks the architecture keys needed for planning (the
// message names the key).
StatusOr<ModelInfo> ReadModelInfo(const std::string& path);

// One tensor of a GGUF model, as its file's header describes it.
struct GgufTensor {
  std::string name;
  std::string type;  // ggml's name: "q8_0", "iq4_nl", "f32", ...
  int64_t row_length = 0;
  uint64_t bytes = 0;
  std::string file;     // the file (shard) holding it
  uint64_t offset = 0;  // of its data in that file
};

// Every tensor of the model at `path` (all shards of a split model), in file
// order. Errors: as ReadModelInfo.
StatusOr<std::vector<GgufTensor>> ListTensors(const std::string& path);

// The output head among `tensors`: output.weight, or token_embd.weight when
// the model ties its head to the embeddings (as llama.cpp loads it). Null
// when it has neither. Points into `tensors`.
const GgufTensor* FindOutputHead(const std::vector<GgufTensor>& tensors);

}  // namespace outpost::engine
