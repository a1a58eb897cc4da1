// EmbeddingService — /v1/embeddings for one served model: tokenizes each
// input (text, or token ids checked against the vocabulary) and embeds it
// with the model's engine::Embedder.
//
// Owned by a ServedModel when the server runs with `embeddings: true`.
// Thread-safe; inputs are embedded one after another on the caller's thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "outpost/engine/types.h"
#include "outpost/util/status.h"

namespace outpost::engine {
class Embedder;
class Model;
}  // namespace outpost::engine

namespace outpost::models {

// One input: text, or token ids when tokens is set.
struct EmbeddingInput {
  std::string text;
  std::vector<engine::Token> tokens;
  bool is_tokens = false;
};

struct EmbeddingResult {
  std::vector<std::vector<float>> vectors;  // one per input, unit length
  int32_t prompt_tokens = 0;
};

class EmbeddingService {
 public:
  EmbeddingService(std::shared_ptr<const engine::Model> model,
                   std::unique_ptr<engine::Embedder> embedder);
  ~EmbeddingService();

  // Errors: InvalidArgument naming "input" or "input[i]" (empty, a token id
  // outside the vocabulary, longer than max_tokens()), Internal.
  StatusOr<EmbeddingResult> Embed(const std::vector<EmbeddingInput>& inputs) const;

  int32_t dimensions() const;
  int32_t max_tokens() const;

 private:
  const std::shared_ptr<const engine::Model> model_;
  const std::unique_ptr<engine::Embedder> embedder_;
};

}  // namespace outpost::models
