// BatchApi — OpenAI's Files and Batch APIs: /v1/files (upload, list,
// retrieve, content, delete) and /v1/batches (create, retrieve, list,
// cancel), with OpenAI's objects, statuses and JSONL formats.
//
// State lives in a batch::BatchStore; the lines run in a batch::BatchRunner
// (both owned by the app). Every file and batch belongs to the API key that
// made it: another key's ids are 404s. A new batch's input file is checked
// whole before the batch exists (a bad file gives a batch that is "failed"
// with its errors, as OpenAI reports it); then the batch is in_progress and
// the runner takes it. Uploads are bounded by the server's max_body_bytes.
//
// Thread-safety: Handle() runs on any HTTP worker; the store and runner are
// thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "outpost/api/http_message.h"
#include "outpost/batch/batch_runner.h"
#include "outpost/batch/batch_store.h"
#include "outpost/util/clock.h"
#include "outpost/util/random.h"

namespace outpost::api {

struct BatchApiOptions {
  size_t max_lines = 50'000;              // requests in one batch (OpenAI's limit)
  int64_t max_window_s = 30 * 24 * 3600;  // the longest completion_window
};

class BatchApi {
 public:
  BatchApi(batch::BatchStore* store, batch::BatchRunner* runner, BatchApiOptions options = {},
           const util::Clock* clock = &util::RealClock(),
           util::Random* random = &util::RealRandom())
      : store_(store), runner_(runner), options_(options), clock_(clock), random_(random) {}

  // /v1/files, /v1/batches and below.
  static bool Owns(const std::string& path);
  // `owner`: the caller's key id ("" when the API is open). The request's
  // Authorization and X-Data-Class go with every line of a batch it makes.
  void Handle(const HttpRequest& req, HttpResponse& res, const std::string& owner);

 private:
  void UploadFile(const HttpRequest& req, HttpResponse& res, const std::string& owner);
  void ListFiles(const HttpRequest& req, HttpResponse& res, const std::string& owner);
  void CreateBatch(const HttpRequest& req, HttpResponse& res, const std::string& owner);
  void ListBatches(const HttpRequest& req, HttpResponse& res, const std::string& owner);
  nlohmann::json BatchJson(const batch::BatchObject& b) const;

  batch::BatchStore* const store_;
  batch::BatchRunner* const runner_;
  const BatchApiOptions options_;
  const util::Clock* const clock_;
  util::Random* const random_;
};

class HttpServer;

// Runs batch lines through `server` as in-process requests: the line's url
// and body, the batch's forwarded headers, X-Outpost-Priority: batch (the
// lowest admission class). Thread-safe; `server` must outlive it.
batch::Executor LineExecutor(HttpServer* server);

// "24h", "90m", "3600s", "7d" → seconds. Errors: InvalidArgument naming
// completion_window.
StatusOr<int64_t> ParseCompletionWindow(const std::string& s, int64_t max_s);

// A create body's `output_expires_after` ({"anchor": "created_at", "seconds":
// 3600…2592000}) → seconds; 0 when absent or null. Errors: InvalidArgument
// naming the field.
StatusOr<int64_t> OutputExpiresAfter(const nlohmann::json& body);

// The tokens an answer's body reports in `usage`: the Responses API's
// input/output names or chat and text completions' and embeddings'
// prompt/completion ones; zeros when it has none.
batch::TokenUsage UsageOf(const nlohmann::json& body);

}  // namespace outpost::api
