// HttpServer::HandleEmbeddings — POST /v1/embeddings: parse and check the
// body (input as a string, an array of strings, an array of token ids or an
// array of such arrays; encoding_format float or base64), embed with the
// model's EmbeddingService, answer in OpenAI's shape.

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>

#include "outpost/api/errors.h"
#include "outpost/api/http_server.h"
#include "outpost/api/json_fields.h"
#include "outpost/util/base64.h"

namespace outpost::api {
namespace {

using nlohmann::json;

constexpr size_t kMaxInputs = 2048;

// Little-endian float32 bytes, as OpenAI sends them, in Base64.
std::string Base64(const std::vector<float>& v) {
  return util::Base64Encode(
      std::string_view(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
}

Status TokenArray(const json& a, const std::string& field, models::EmbeddingInput* in) {
  in->is_tokens = true;
  for (size_t k = 0; k < a.size(); ++k) {
    if (!a[k].is_number_integer()) {
      return Status::InvalidArgument(
          "'" + field + "[" + std::to_string(k) + "]' must be a token id", field);
    }
    // Checked against the model's vocabulary later; here only that it fits
    // the type (2^32 + 1 must not pass as id 1).
    const int64_t id = a[k].get<int64_t>();
    if (id < INT32_MIN || id > INT32_MAX) {
      const std::string f = field + "[" + std::to_string(k) + "]";
      return Status::InvalidArgument(
          "'" + f + "' token id " + std::to_string(id) + " is outside the vocabulary", f);
    }
    in->tokens.push_back(static_cast<engine::Token>(id));
  }
  return Status::Ok();
}

StatusOr<std::vector<models::EmbeddingInput>> ParseInputs(const json& body) {
  auto it = body.find("input");
  if (it == body.end() || it->is_null())
    return Status::InvalidArgument("'input' is required", "input");
  std::vector<models::EmbeddingInput> out;
  const json& in = *it;
  if (in.is_string()) {
    out.push_back({in.get<std::string>(), {}, false});
  } else if (in.is_array()) {
    if (in.empty()) return Status::InvalidArgument("'input' must not be empty", "input");
    if (in.size() > kMaxInputs) {
      return Status::InvalidArgument(
          "'input' may hold at most 2048 items, got " + std::to_string(in.size()), "input");
    }
    if (in[0].is_number_integer()) {  // one input given as token ids
      models::EmbeddingInput one;
      Status st = TokenArray(in, "input", &one);
      if (!st.ok()) return st;
      out.push_back(std::move(one));
    } else {
      for (size_t i = 0; i < in.size(); ++i) {
        const std::string f = "input[" + std::to_string(i) + "]";
        if (in[i].is_string()) {
          out.push_back({in[i].get<std::string>(), {}, false});
        } else if (in[i].is_array()) {
          models::EmbeddingInput one;
          Status st = TokenArray(in[i], f, &one);
          if (!st.ok()) return st;
          out.push_back(std::move(one));
        } else {
          return Status::InvalidArgument("'" + f + "' must be a string or an array of token ids",
                                         f);
        }
      }
    }
  } else {
    return Status::InvalidArgument(
        "'input' must be a string, an array of strings, or token ids (an array, or arrays)",
        "input");
  }
  return out;
}

}  // namespace

void HttpServer::HandleEmbeddings(const HttpRequest& req, HttpResponse& res) {
  auto fail = [&](const Status& st) { SendError(res, st); };
  if (!serving_->ready()) {
    return fail(Status::Unavailable("the model is still loading").WithRetryAfter(1));
  }
  auto parsed = ParseObjectBody(req.body);
  if (!parsed.ok()) return fail(parsed.status());
  const json& body = *parsed;
  std::string model_id;
  if (auto m = body.find("model"); m != body.end() && !m->is_null()) {
    if (!m->is_string()) return fail(Status::InvalidArgument("'model' must be a string", "model"));
    model_id = m->get<std::string>();
  }
  bool base64 = false;
  if (auto e = body.find("encoding_format"); e != body.end() && !e->is_null()) {
    if (!e->is_string() || (*e != "float" && *e != "base64")) {
      return fail(
          Status::InvalidArgument("'encoding_format' must be float or base64", "encoding_format"));
    }
    base64 = *e == "base64";
  }
  auto served = serving_->Find(model_id);
  if (!served) {
    return fail(Status::NotFound(
        "the model '" + model_id + "' does not exist; GET /v1/models lists the served models",
        "model"));
  }
  if (!served->embeddings) {
    return fail(
        Status::InvalidArgument("the model '" + served->id +
                                    "' is not loaded for embeddings (start with --embeddings true)",
                                "model"));
  }
  if (auto d = body.find("dimensions"); d != body.end() && !d->is_null()) {
    if (!d->is_number_integer() || d->get<int64_t>() != served->embeddings->dimensions()) {
      return fail(Status::InvalidArgument(
          "'dimensions' must be " + std::to_string(served->embeddings->dimensions()) +
              " for this model (shortened embeddings are not supported)",
          "dimensions"));
    }
  }
  auto inputs = ParseInputs(body);
  if (!inputs.ok()) return fail(inputs.status());
  // gen_ai.server.request.duration, operation "embeddings": from here (the
  // request is valid) to the vectors; no tokens are generated, so neither
  // time to first token nor time per output token.
  const auto start = std::chrono::steady_clock::now();
  auto r = served->embeddings->Embed(*inputs);
  if (served->genai) {
    // Embeddings take no session: no class but the Batch API's mark.
    served->genai->Record(
        "embeddings", req.header("X-Outpost-Priority") == "batch" ? "batch" : "default",
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), -1, 0,
        r.ok() ? std::string() : StatusCodeName(r.status().code()));
  }
  if (!r.ok()) return fail(r.status());
  json data = json::array();
  for (size_t i = 0; i < r->vectors.size(); ++i) {
    json item = {{"object", "embedding"}, {"index", i}};
    if (base64) {
      item["embedding"] = Base64(r->vectors[i]);
    } else {
      item["embedding"] = r->vectors[i];
    }
    data.push_back(std::move(item));
  }
  res.set_content(
      json{{"object", "list"},
           {"data", data},
           {"model", served->id},
           {"usage", {{"prompt_tokens", r->prompt_tokens}, {"total_tokens", r->prompt_tokens}}}}
          .dump(),
      "application/json");
}

}  // namespace outpost::api
