#include "outpost/models/embedding_service.h"

#include "outpost/engine/embedder.h"
#include "outpost/engine/model.h"
#include "outpost/engine/token_id.h"
#include "outpost/util/status_macros.h"

namespace outpost::models {

EmbeddingService::EmbeddingService(std::shared_ptr<const engine::Model> model,
                                   std::unique_ptr<engine::Embedder> embedder)
    : model_(std::move(model)), embedder_(std::move(embedder)) {}

EmbeddingService::~EmbeddingService() = default;

int32_t EmbeddingService::dimensions() const {
  return embedder_->dimensions();
}

int32_t EmbeddingService::max_tokens() const {
  return embedder_->max_tokens();
}

StatusOr<EmbeddingResult> EmbeddingService::Embed(const std::vector<EmbeddingInput>& inputs) const {
  // Tokenize and check everything first: a bad input fails the request before
  // any work is done.
  std::vector<std::vector<engine::Token>> all;
  all.reserve(inputs.size());
  const int32_t n_vocab = model_->VocabSize();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string f = inputs.size() == 1 ? "input" : "input[" + std::to_string(i) + "]";
    std::vector<engine::Token> t;
    if (inputs[i].is_tokens) {
      t = inputs[i].tokens;
      for (size_t j = 0; j < t.size(); ++j) {
        OUTPOST_RETURN_IF_ERROR(
            engine::CheckTokenId(t[j], n_vocab, f + "[" + std::to_string(j) + "]"));
      }
    } else {
      t = model_->Tokenize(inputs[i].text, /*add_special=*/true, /*parse_special=*/false);
    }
    if (t.empty()) return Status::InvalidArgument("'" + f + "' must not be empty", f);
    if (static_cast<int32_t>(t.size()) > max_tokens()) {
      return Status::InvalidArgument("'" + f + "' has " + std::to_string(t.size()) +
                                         " tokens; the most one input may have is " +
                                         std::to_string(max_tokens()) + " (ctx_size)",
                                     f)
          .WithErrorCode("context_length_exceeded");
    }
    all.push_back(std::move(t));
  }
  EmbeddingResult r;
  for (const auto& t : all) {
    auto v = embedder_->Embed(t);
    if (!v.ok()) return v.status();
    r.vectors.push_back(std::move(v).value());
    r.prompt_tokens += static_cast<int32_t>(t.size());
  }
  return r;
}

}  // namespace outpost::models
