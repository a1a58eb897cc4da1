#include "outpost/api/batch_api.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "outpost/api/errors.h"
#include "outpost/api/http_server.h"
#include "outpost/api/json_fields.h"
#include "outpost/api/kept_request.h"
#include "outpost/api/multipart.h"
#include "outpost/batch/batch_input.h"

namespace outpost::api {
namespace {

using nlohmann::json;

constexpr const char* kEndpoints[] = {"/v1/chat/completions", "/v1/completions", "/v1/responses",
                                      "/v1/embeddings"};
constexpr int64_t kMinFileExpiry = 3600;
constexpr int64_t kMaxFileExpiry = 30 * 24 * 3600;
constexpr int64_t kDefaultInputExpiry = 30 * 24 * 3600;

json OrNull(int64_t v) {
  return v > 0 ? json(v) : json(nullptr);
}

json OrNull(const std::string& s) {
  return s.empty() ? json(nullptr) : json(s);
}

json FileJson(const batch::FileObject& f) {
  return {{"id", f.id},
          {"object", "file"},
          {"bytes", f.bytes},
          {"created_at", f.created_at},
          {"expires_at", OrNull(f.expires_at)},
          {"filename", f.filename},
          {"purpose", f.purpose},
          {"status", "processed"},
          {"status_details", nullptr}};
}

// A field of `usage` (or of one of its *_details objects) that is a count.
int64_t Count(const json& obj, const char* details, const char* key) {
  const json* o = &obj;
  if (details != nullptr) {
    auto d = obj.find(details);
    if (d == obj.end() || !d->is_object()) return 0;
    o = &*d;
  }
  auto v = o->find(key);
  return v != o->end() && v->is_number_integer() ? v->get<int64_t>() : 0;
}

}  // namespace

batch::TokenUsage UsageOf(const json& body) {
  batch::TokenUsage u;
  auto it = body.find("usage");
  if (it == body.end() || !it->is_object()) return u;
  const json& usage = *it;
  if (usage.contains("input_tokens")) {  // the Responses API's names
    u.input = Count(usage, nullptr, "input_tokens");
    u.cached = Count(usage, "input_tokens_details", "cached_tokens");
    u.output = Count(usage, nullptr, "output_tokens");
    u.reasoning = Count(usage, "output_tokens_details", "reasoning_tokens");
  } else {  // chat and text completions', embeddings' (no completion tokens)
    u.input = Count(usage, nullptr, "prompt_tokens");
    u.cached = Count(usage, "prompt_tokens_details", "cached_tokens");
    u.output = Count(usage, nullptr, "completion_tokens");
    u.reasoning = Count(usage, "completion_tokens_details", "reasoning_tokens");
  }
  return u;
}

StatusOr<int64_t> OutputExpiresAfter(const json& body) {
  auto it = body.find("output_expires_after");
  if (it == body.end() || it->is_null()) return int64_t{0};
  if (!it->is_object()) {
    return Status::InvalidArgument(
        "output_expires_after must be an object {\"anchor\": \"created_at\", \"seconds\": N}",
        "output_expires_after");
  }
  for (const auto& [key, value] : it->items()) {
    if (key != "anchor" && key != "seconds") {
      return Status::InvalidArgument("output_expires_after has an unknown field '" +
                                         key.substr(0, 64) + "' (use anchor, seconds)",
                                     "output_expires_after." + key.substr(0, 64));
    }
  }
  auto anchor = it->find("anchor");
  if (anchor == it->end() || !anchor->is_string() || *anchor != "created_at") {
    return Status::InvalidArgument("output_expires_after.anchor must be 'created_at'",
                                   "output_expires_after.anchor");
  }
  auto seconds = it->find("seconds");
  if (seconds == it->end() || !seconds->is_number_integer() ||
      seconds->get<int64_t>() < kMinFileExpiry || seconds->get<int64_t>() > kMaxFileExpiry) {
    return Status::InvalidArgument(
        "output_expires_after.seconds must be an integer from 3600 to 2592000, got " +
            (seconds == it->end() ? std::string("none") : seconds->dump().substr(0, 32)),
        "output_expires_after.seconds");
  }
  return seconds->get<int64_t>();
}

StatusOr<int64_t> ParseCompletionWindow(const std::string& s, int64_t max_s) {
  auto bad = [&] {
    return Status::InvalidArgument(
        "completion_window must be a duration such as \"24h\" (a number followed by s, m, h or d, "
        "at most " +
            std::to_string(max_s / 3600) + "h), got '" + s + "'",
        "completion_window");
  };
  if (s.size() < 2 || s.size() > 12) return bad();
  int64_t unit = 0;
  switch (s.back()) {
    case 's':
      unit = 1;
      break;
    case 'm':
      unit = 60;
      break;
    case 'h':
      unit = 3600;
      break;
    case 'd':
      unit = 86400;
      break;
    default:
      return bad();
  }
  int64_t n = 0;
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return bad();
    n = n * 10 + (s[i] - '0');
  }
  if (n < 1 || n * unit > max_s) return bad();
  return n * unit;
}

bool BatchApi::Owns(const std::string& path) {
  return path == "/v1/files" || path.rfind("/v1/files/", 0) == 0 || path == "/v1/batches" ||
         path.rfind("/v1/batches/", 0) == 0;
}

void BatchApi::Handle(const HttpRequest& req, HttpResponse& res, const std::string& owner) {
  const std::string& path = req.path;
  const bool get = req.method == "GET" || req.method == "HEAD";
  const bool post = req.method == "POST";
  // An expired file is gone for every read (the runner also sweeps them).
  if (path.rfind("/v1/files", 0) == 0) store_->DeleteExpiredFiles(clock_->UnixSeconds());
  if (path == "/v1/files") {
    if (post) return UploadFile(req, res, owner);
    if (get) return ListFiles(req, res, owner);
    return SendNotAllowed(res, req, "GET, POST");
  }
  if (path == "/v1/batches") {
    if (post) return CreateBatch(req, res, owner);
    if (get) return ListBatches(req, res, owner);
    return SendNotAllowed(res, req, "GET, POST");
  }
  if (path.rfind("/v1/files/", 0) == 0) {
    std::string id = path.substr(10);
    const bool content = id.size() > 8 && id.compare(id.size() - 8, 8, "/content") == 0;
    if (content) id.resize(id.size() - 8);
    if (id.empty() || id.find('/') != std::string::npos) {
      return SendError(res, Status::NotFound("no route for " + req.method + " " + path));
    }
    if (content) {
      if (!get) return SendNotAllowed(res, req, "GET");
      auto f = store_->GetFile(owner, id);
      if (!f.ok()) return SendError(res, f.status());
      auto bytes = store_->FileContent(owner, id);
      if (!bytes.ok()) return SendError(res, bytes.status());
      res.set_header("Content-Disposition", "attachment; filename=\"" + f->filename + "\"");
      return res.set_content(std::move(bytes).value(), "application/octet-stream");
    }
    if (get) {
      auto f = store_->GetFile(owner, id);
      if (!f.ok()) return SendError(res, f.status());
      return res.set_content(FileJson(*f).dump(), "application/json");
    }
    if (req.method == "DELETE") {
      if (Status st = store_->DeleteFile(owner, id); !st.ok()) return SendError(res, st);
      return res.set_content(json{{"id", id}, {"object", "file"}, {"deleted", true}}.dump(),
                             "application/json");
    }
    return SendNotAllowed(res, req, "GET, DELETE");
  }
  // /v1/batches/{id}[/cancel]
  std::string id = path.substr(12);
  const bool cancel = id.size() > 7 && id.compare(id.size() - 7, 7, "/cancel") == 0;
  if (cancel) id.resize(id.size() - 7);
  if (id.empty() || id.find('/') != std::string::npos) {
    return SendError(res, Status::NotFound("no route for " + req.method + " " + path));
  }
  if (cancel) {
    if (!post) return SendNotAllowed(res, req, "POST");
    auto b = store_->Cancel(owner, id, clock_->UnixSeconds());
    if (!b.ok()) return SendError(res, b.status());
    if (runner_ != nullptr) runner_->Wake();
    return res.set_content(BatchJson(*b).dump(), "application/json");
  }
  if (!get) return SendNotAllowed(res, req, "GET");
  auto b = store_->GetBatch(owner, id);
  if (!b.ok()) return SendError(res, b.status());
  res.set_content(BatchJson(*b).dump(), "application/json");
}

void BatchApi::UploadFile(const HttpRequest& req, HttpResponse& res, const std::string& owner) {
  auto parts = ParseMultipart(req.header("Content-Type"), req.body);
  if (!parts.ok()) return SendError(res, parts.status());
  const MultipartPart* file = nullptr;
  std::string purpose;
  bool has_purpose = false;
  std::string anchor;
  std::string seconds;
  for (const MultipartPart& p : *parts) {
    if (p.name == "file") file = &p;
    if (p.name == "purpose") {
      purpose = p.data;
      has_purpose = true;
    }
    if (p.name == "expires_after[anchor]") anchor = p.data;
    if (p.name == "expires_after[seconds]") seconds = p.data;
  }
  if (file == nullptr) {
    return SendError(res, Status::InvalidArgument("the form has no 'file' part", "file"));
  }
  if (!has_purpose) {
    return SendError(res, Status::InvalidArgument("the form has no 'purpose' part", "purpose"));
  }
  if (purpose != "batch") {
    return SendError(res, Status::InvalidArgument(
                              "purpose must be 'batch' (files here are batch inputs), got '" +
                                  purpose.substr(0, 64) + "'",
                              "purpose"));
  }
  const int64_t now = clock_->UnixSeconds();
  batch::FileObject f;
  f.id = util::RandomId("file-", *random_);
  f.owner = owner;
  f.purpose = purpose;
  f.filename = file->filename.empty() ? "upload.jsonl" : file->filename.substr(0, 255);
  f.bytes = static_cast<int64_t>(file->data.size());
  f.created_at = now;
  // As OpenAI: a batch input expires after 30 days unless it says otherwise
  // (a box's disk is not an archive; the batch keeps its own copy of the lines).
  f.expires_at = now + kDefaultInputExpiry;
  if (!anchor.empty() || !seconds.empty()) {
    if (anchor != "created_at") {
      return SendError(res, Status::InvalidArgument("expires_after[anchor] must be 'created_at'",
                                                    "expires_after.anchor"));
    }
    char* end = nullptr;
    const long long s = std::strtoll(seconds.c_str(), &end, 10);
    if (seconds.empty() || *end != '\0' || s < kMinFileExpiry || s > kMaxFileExpiry) {
      return SendError(res, Status::InvalidArgument(
                                "expires_after[seconds] must be from 3600 to 2592000, got '" +
                                    seconds.substr(0, 32) + "'",
                                "expires_after.seconds"));
    }
    f.expires_at = now + s;
  }
  if (Status st = store_->AddFile(f, file->data); !st.ok()) return SendError(res, st);
  res.set_content(FileJson(f).dump(), "application/json");
}

void BatchApi::ListFiles(const HttpRequest& req, HttpResponse& res, const std::string& owner) {
  auto limit = QueryLimit(req.query, 10000, 10000);
  if (!limit.ok()) return SendError(res, limit.status());
  batch::FileQuery q;
  q.limit = *limit;
  q.purpose = QueryParam(req.query, "purpose").value_or("");
  q.after = QueryParam(req.query, "after").value_or("");
  const std::string order = QueryParam(req.query, "order").value_or("desc");
  if (order != "asc" && order != "desc") {
    return SendError(res, Status::InvalidArgument("order must be 'asc' or 'desc'", "order"));
  }
  q.ascending = order == "asc";
  batch::Page page;
  json data = json::array();
  for (const auto& f : store_->ListFiles(owner, q, &page)) data.push_back(FileJson(f));
  res.set_content(ListJson(std::move(data), page.has_more).dump(), "application/json");
}

void BatchApi::CreateBatch(const HttpRequest& req, HttpResponse& res, const std::string& owner) {
  auto body_or = ParseObjectBody(req.body);
  if (!body_or.ok()) return SendError(res, body_or.status());
  const json& body = *body_or;
  auto str = [&](const char* key, std::string* out) -> Status {
    const auto it = body.find(key);
    if (it == body.end() || !it->is_string()) {
      return Status::InvalidArgument(std::string(key) + " must be a string", key);
    }
    *out = it->get<std::string>();
    return Status::Ok();
  };
  batch::BatchObject b;
  for (const auto& [key, out] :
       {std::pair<const char*, std::string*>{"input_file_id", &b.input_file_id},
        {"endpoint", &b.endpoint},
        {"completion_window", &b.completion_window}}) {
    if (Status st = str(key, out); !st.ok()) return SendError(res, st);
  }
  bool supported = false;
  for (const char* e : kEndpoints) supported = supported || b.endpoint == e;
  if (!supported) {
    return SendError(
        res, Status::InvalidArgument("endpoint must be /v1/chat/completions, /v1/completions, "
                                     "/v1/responses or /v1/embeddings, got '" +
                                         b.endpoint.substr(0, 100) + "'",
                                     "endpoint"));
  }
  auto window = ParseCompletionWindow(b.completion_window, options_.max_window_s);
  if (!window.ok()) return SendError(res, window.status());
  const json metadata = body.value("metadata", json(nullptr));
  if (Status st = CheckMetadata(metadata); !st.ok()) return SendError(res, st);
  auto expires_after = OutputExpiresAfter(body);
  if (!expires_after.ok()) return SendError(res, expires_after.status());
  b.output_expires_after = *expires_after;
  auto input = store_->GetFile(owner, b.input_file_id);
  if (!input.ok()) return SendError(res, input.status().WithParam("input_file_id"));
  if (input->purpose != "batch") {
    return SendError(res, Status::InvalidArgument("file '" + b.input_file_id + "' has purpose '" +
                                                      input->purpose + "', not 'batch'",
                                                  "input_file_id"));
  }
  auto content = store_->FileContent(owner, b.input_file_id);
  if (!content.ok()) return SendError(res, content.status().WithParam("input_file_id"));

  const int64_t now = clock_->UnixSeconds();
  b.id = util::RandomId("batch_", *random_);
  b.owner = owner;
  b.created_at = now;
  b.expires_at = now + *window;
  b.metadata_json = metadata.dump();
  b.headers_json = KeepHeaders(req, {"Authorization", "X-Data-Class"}).dump();
  batch::ParsedInput parsed = batch::ParseBatchInput(*content, b.endpoint, options_.max_lines);
  if (!parsed.errors.empty()) {
    b.status = batch::BatchStatus::kFailed;
    b.failed_at = now;
    b.errors_json = batch::InputErrorsJson(parsed.errors);
    parsed.lines.clear();
  } else {
    b.status = batch::BatchStatus::kInProgress;
    b.in_progress_at = now;
    b.model = parsed.model;
  }
  if (Status st = store_->CreateBatch(b, parsed.lines); !st.ok()) return SendError(res, st);
  if (runner_ != nullptr) runner_->Wake();
  auto stored = store_->GetBatch(owner, b.id);
  if (!stored.ok()) return SendError(res, stored.status());
  res.set_content(BatchJson(*stored).dump(), "application/json");
}

void BatchApi::ListBatches(const HttpRequest& req, HttpResponse& res, const std::string& owner) {
  auto limit = QueryLimit(req.query, 20, 100);
  if (!limit.ok()) return SendError(res, limit.status());
  batch::Page page;
  json data = json::array();
  for (const auto& b :
       store_->ListBatches(owner, QueryParam(req.query, "after").value_or(""), *limit, &page)) {
    data.push_back(BatchJson(b));
  }
  res.set_content(ListJson(std::move(data), page.has_more).dump(), "application/json");
}

json BatchApi::BatchJson(const batch::BatchObject& b) const {
  json j = {
      {"id", b.id},
      {"object", "batch"},
      {"endpoint", b.endpoint},
      {"errors", json::parse(b.errors_json, nullptr, false)},
      {"input_file_id", b.input_file_id},
      {"completion_window", b.completion_window},
      {"status", batch::BatchStatusName(b.status)},
      {"output_file_id", OrNull(b.output_file_id)},
      {"error_file_id", OrNull(b.error_file_id)},
      {"created_at", b.created_at},
      {"in_progress_at", OrNull(b.in_progress_at)},
      {"expires_at", OrNull(b.expires_at)},
      {"finalizing_at", OrNull(b.finalizing_at)},
      {"completed_at", OrNull(b.completed_at)},
      {"failed_at", OrNull(b.failed_at)},
      {"expired_at", OrNull(b.expired_at)},
      {"cancelling_at", OrNull(b.cancelling_at)},
      {"cancelled_at", OrNull(b.cancelled_at)},
      {"request_counts",
       {{"total", b.counts.total}, {"completed", b.counts.completed}, {"failed", b.counts.failed}}},
      {"metadata", json::parse(b.metadata_json, nullptr, false)},
      {"model", OrNull(b.model)},
      {"usage",
       {{"input_tokens", b.usage.input},
        {"input_tokens_details", {{"cached_tokens", b.usage.cached}}},
        {"output_tokens", b.usage.output},
        {"output_tokens_details", {{"reasoning_tokens", b.usage.reasoning}}},
        {"total_tokens", b.usage.input + b.usage.output}}}};
  if (j["errors"].is_discarded()) j["errors"] = nullptr;
  if (j["metadata"].is_discarded()) j["metadata"] = nullptr;
  // Outpost's addition: when the batch should be done at the rate its lines
  // are finishing now (null until one has finished here).
  j["estimated_completion_at"] = nullptr;
  if (b.status == batch::BatchStatus::kInProgress && runner_ != nullptr) {
    const double rate = runner_->LinesPerSecond(b.id);
    const int64_t left = b.counts.total - b.counts.completed - b.counts.failed;
    if (rate > 0) {
      j["estimated_completion_at"] =
          clock_->UnixSeconds() + static_cast<int64_t>(std::ceil(static_cast<double>(left) / rate));
    }
  }
  return j;
}

batch::Executor LineExecutor(HttpServer* server) {
  return [server](const batch::LineRequest& line, const std::function<bool()>& cancelled) {
    HttpRequest req;
    req.method = "POST";
    req.path = line.url;
    req.body = line.body;
    req.remote_addr = "batch";
    req.client_gone = cancelled;
    RestoreHeaders(
        json::parse(line.headers_json, nullptr, false),
        [server](const std::string& id) { return server->KeyWithId(id); }, &req);
    req.headers.emplace_back("Content-Type", "application/json");
    req.headers.emplace_back("X-Outpost-Priority", "batch");
    HttpResponse res;
    server->Execute(req, res);
    batch::LineResult r;
    r.status_code = res.status;
    if (res.streamed()) {
      // Never for a batch line (they cannot ask to stream); drained all the same.
      struct Collect : ChunkWriter {
        std::string out;
        bool Write(const std::string& data) override {
          out += data;
          return true;
        }
      } collect;
      while (res.provider(collect)) {
      }
      if (res.on_end) res.on_end(true);
      r.body = std::move(collect.out);
    } else {
      r.body = std::move(res.body);
    }
    const json body = json::parse(r.body, nullptr, false);
    if (body.is_object()) {
      if (auto id = body.find("id"); id != body.end() && id->is_string()) r.request_id = *id;
      if (auto m = body.find("model"); m != body.end() && m->is_string()) r.model = *m;
      r.usage = UsageOf(body);
    }
    return r;
  };
}

}  // namespace outpost::api
