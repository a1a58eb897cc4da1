// HttpServer::HandleTokenize and HandleDetokenize — POST /tokenize and POST
// /detokenize: a served model's tokenizer, for clients that count or budget
// tokens before they send (RAG chunkers, agents trimming a history), in
// llama-server's shapes and vLLM's at once:
//
//   /tokenize {"content": "..."}                 llama-server: the text as is
//                                                (add_special false, parse_special true)
//   /tokenize {"prompt": "..."}                  vLLM: add_special_tokens true
//   /tokenize {"messages": [...], tools, ...}    vLLM: the prompt exactly as a chat
//                                                completion would prefill it
//   -> {"tokens": [ids], "count", "max_model_len", "model"}, "tokens" as
//      [{"id", "piece"}] with with_pieces (a piece that is not UTF-8 as its
//      bytes), "token_strs" with return_token_strs.
//   /detokenize {"tokens": [ids]} -> {"content", "prompt", "model"} (the same
//      text under llama-server's name and vLLM's).
//
// Only models served here (no routing: a tokenizer belongs to the box's
// model); every field is checked and a bad one is a 400 naming it.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "outpost/api/errors.h"
#include "outpost/api/http_server.h"
#include "outpost/api/json_fields.h"
#include "outpost/engine/token_id.h"
#include "outpost/router/local_target.h"
#include "outpost/util/status_macros.h"
#include "outpost/util/utf8.h"

namespace outpost::api {
namespace {

using nlohmann::json;

// Token ids in one /tokenize content array or one /detokenize body, at most
// (the request body's size limit bounds them too; this names the limit).
constexpr size_t kMaxTokenIds = 1 << 20;

// body[name] as a boolean; `fallback` when absent or null.
StatusOr<bool> Flag(const json& body, const char* name, bool fallback) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) return WrongType(name, "a boolean", *it);
  return it->get<bool>();
}

// The served model `body` names ("" or absent: the default one).
StatusOr<std::shared_ptr<const models::ServedModel>> FindModel(const models::ServingSet& serving,
                                                               const json& body) {
  std::string id;
  if (auto m = body.find("model"); m != body.end() && !m->is_null()) {
    if (!m->is_string()) return WrongType("model", "a string", *m);
    id = m->get<std::string>();
  }
  auto served = serving.Find(id);
  if (served == nullptr) {
    return Status::NotFound("the model '" + id +
                                "' is not served here; tokens are counted with a served "
                                "model's tokenizer (GET /v1/models)",
                            "model");
  }
  return served;
}

// A token id of a vocabulary of n_vocab from a JSON number (`field` names it
// in the error).
StatusOr<engine::Token> TokenId(const json& v, int32_t n_vocab, const std::string& field) {
  if (!v.is_number_integer()) return WrongType(field, "a token id (an integer)", v);
  const int64_t id = v.get<int64_t>();
  OUTPOST_RETURN_IF_ERROR(engine::CheckTokenId(id, n_vocab, field));
  return static_cast<engine::Token>(id);
}

// llama-server's content: a string, or an array mixing strings (tokenized)
// and token ids (kept as they are).
StatusOr<std::vector<engine::Token>> ContentTokens(const models::ServedModel& model,
                                                   const json& content, bool add_special,
                                                   bool parse_special) {
  if (content.is_string()) {
    return router::LocalTarget::Tokenize(model, content.get_ref<const std::string&>(), add_special,
                                         parse_special);
  }
  if (!content.is_array()) {
    return WrongType("content", "a string, or an array of strings and token ids", content);
  }
  if (content.size() > kMaxTokenIds) {
    return Status::InvalidArgument("'content' may hold at most " + std::to_string(kMaxTokenIds) +
                                       " items, got " + std::to_string(content.size()),
                                   "content");
  }
  std::vector<engine::Token> out;
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string field = "content[" + std::to_string(i) + "]";
    if (content[i].is_string()) {
      // Special tokens (BOS) only in front of the first piece, as llama-server.
      auto t = router::LocalTarget::Tokenize(model, content[i].get_ref<const std::string&>(),
                                             add_special && i == 0, parse_special);
      out.insert(out.end(), t.begin(), t.end());
      continue;
    }
    // Checked against the vocabulary: an id is kept as it is.
    auto id = TokenId(content[i], router::LocalTarget::VocabSize(model), field);
    if (!id.ok()) return id.status();
    out.push_back(*id);
  }
  return out;
}

}  // namespace

void HttpServer::HandleTokenize(const HttpRequest& req, HttpResponse& res) {
  auto fail = [&](const Status& st) { SendError(res, st); };
  if (!serving_->ready()) {
    return fail(Status::Unavailable("the model is still loading").WithRetryAfter(1));
  }
  auto body = ParseObjectBody(req.body);
  if (!body.ok()) return fail(body.status());
  const bool has_content = body->contains("content") && !(*body)["content"].is_null();
  const bool has_prompt = body->contains("prompt") && !(*body)["prompt"].is_null();
  const bool has_messages = body->contains("messages") && !(*body)["messages"].is_null();
  if (has_content + has_prompt + has_messages != 1) {
    return fail(Status::InvalidArgument(
        has_content + has_prompt + has_messages == 0
            ? "give the text to tokenize as 'content' (llama-server), 'prompt' or 'messages'"
            : "give only one of 'content', 'prompt' and 'messages'",
        has_prompt && !has_content     ? "prompt"
        : has_messages && !has_content ? "messages"
                                       : "content"));
  }
  auto with_pieces = Flag(*body, "with_pieces", false);
  if (!with_pieces.ok()) return fail(with_pieces.status());
  auto token_strs = Flag(*body, "return_token_strs", false);
  if (!token_strs.ok()) return fail(token_strs.status());
  auto parse_special = Flag(*body, "parse_special", true);
  if (!parse_special.ok()) return fail(parse_special.status());
  // llama-server says add_special, vLLM add_special_tokens; their defaults
  // differ as their text fields do.
  const bool both = body->contains("add_special") && body->contains("add_special_tokens");
  if (both) {
    return fail(Status::InvalidArgument(
        "give 'add_special' (llama-server's name) or 'add_special_tokens' (vLLM's), not both",
        "add_special_tokens"));
  }
  const char* add_name = body->contains("add_special") ? "add_special" : "add_special_tokens";
  auto add_special = Flag(*body, add_name, /*fallback=*/has_prompt);

  std::vector<engine::Token> tokens;
  std::shared_ptr<const models::ServedModel> model;
  if (has_messages) {
    // The chat path's own parser and preparation: the template, tools,
    // chat_template_kwargs and reasoning_effort as a completion applies them.
    if (body->contains("add_special") || body->contains("add_special_tokens")) {
      return fail(Status::InvalidArgument(
          "'" + std::string(add_name) +
              "' does not apply to 'messages': the chat template places the special tokens",
          add_name));
    }
    // add_generation_prompt false alone counts the messages without the
    // assistant header (a history's tokens), which generation refuses.
    auto parsed = ParseRequest(Endpoint::kChat, req.body, INT32_MAX, /*for_tokenize=*/true);
    if (!parsed.ok()) return fail(parsed.status());
    auto found = FindModel(*serving_, *body);
    if (!found.ok()) return fail(found.status());
    model = *found;
    router::CompletionCall call;
    call.request = std::move(parsed).value();
    scheduler::GenerationRequest gen;
    if (Status st = router::LocalTarget::Prepare(*model, call, &gen); !st.ok()) return fail(st);
    tokens = std::move(gen.prompt);
  } else {
    if (!add_special.ok()) return fail(add_special.status());
    auto found = FindModel(*serving_, *body);
    if (!found.ok()) return fail(found.status());
    model = *found;
    if (has_prompt) {
      const json& p = (*body)["prompt"];
      if (!p.is_string()) return fail(WrongType("prompt", "a string", p));
      tokens = router::LocalTarget::Tokenize(*model, p.get_ref<const std::string&>(), *add_special,
                                             *parse_special);
    } else {
      auto t = ContentTokens(*model, (*body)["content"], *add_special, *parse_special);
      if (!t.ok()) return fail(t.status());
      tokens = std::move(t).value();
    }
  }

  json out = json::object();
  if (*with_pieces || *token_strs) {
    auto pieces = router::LocalTarget::Pieces(*model, tokens, "tokens");
    if (!pieces.ok()) return fail(pieces.status());
    if (*with_pieces) {
      json list = json::array();
      for (size_t i = 0; i < tokens.size(); ++i) {
        const std::string& p = (*pieces)[i];
        list.push_back(
            {{"id", tokens[i]}, {"piece", util::IsValidUtf8(p) ? json(p) : ByteArray(p)}});
      }
      out["tokens"] = std::move(list);
    } else {
      out["tokens"] = tokens;
    }
    if (*token_strs) out["token_strs"] = *pieces;  // DumpLossy replaces a partial character
  } else {
    out["tokens"] = tokens;
  }
  out["count"] = tokens.size();
  out["max_model_len"] = router::LocalTarget::ContextLength(*model);
  out["model"] = model->id;
  res.set_content(DumpLossy(out), "application/json");
}

void HttpServer::HandleDetokenize(const HttpRequest& req, HttpResponse& res) {
  auto fail = [&](const Status& st) { SendError(res, st); };
  if (!serving_->ready()) {
    return fail(Status::Unavailable("the model is still loading").WithRetryAfter(1));
  }
  auto body = ParseObjectBody(req.body);
  if (!body.ok()) return fail(body.status());
  auto it = body->find("tokens");
  if (it == body->end() || it->is_null()) {
    return fail(Status::InvalidArgument("'tokens' is required: an array of token ids", "tokens"));
  }
  if (!it->is_array()) return fail(WrongType("tokens", "an array of token ids", *it));
  if (it->size() > kMaxTokenIds) {
    return fail(Status::InvalidArgument("'tokens' may hold at most " +
                                            std::to_string(kMaxTokenIds) + " ids, got " +
                                            std::to_string(it->size()),
                                        "tokens"));
  }
  auto found = FindModel(*serving_, *body);
  if (!found.ok()) return fail(found.status());
  const int32_t n_vocab = router::LocalTarget::VocabSize(**found);
  std::vector<engine::Token> tokens;
  tokens.reserve(it->size());
  for (size_t i = 0; i < it->size(); ++i) {
    auto id = TokenId((*it)[i], n_vocab, "tokens[" + std::to_string(i) + "]");
    if (!id.ok()) return fail(id.status());
    tokens.push_back(*id);
  }
  auto pieces = router::LocalTarget::Pieces(**found, tokens, "tokens");
  if (!pieces.ok()) return fail(pieces.status());
  std::string text;
  for (const auto& p : *pieces) text += p;
  // Ids cut inside a character leave a partial one: replaced (U+FFFD).
  res.set_content(DumpLossy(json{{"content", text}, {"prompt", text}, {"model", (*found)->id}}),
                  "application/json");
}

}  // namespace outpost::api
