// HttpServer::HandleStoredResponse — the stored ones: GET and DELETE
// /v1/responses/{id} (GET ?stream=true&starting_after=N replays a
// background run's events), GET /v1/responses/{id}/input_items, POST
// /v1/responses/{id}/cancel; POST /v1/responses/input_tokens is routed on
// to HandleInputTokens (responses_handler.cc).
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "outpost/api/errors.h"
#include "outpost/api/http_server.h"
#include "outpost/api/json_fields.h"
#include "outpost/api/responses_turn.h"

namespace outpost::api {

using nlohmann::json;

void HttpServer::HandleStoredResponse(const HttpRequest& req, HttpResponse& res) {
  // /v1/responses/{id}[/input_items | /cancel]
  const std::string rest = req.path.substr(std::string_view("/v1/responses/").size());
  const size_t slash = rest.find('/');
  const std::string id = rest.substr(0, slash);
  const std::string sub = slash == std::string::npos ? "" : rest.substr(slash + 1);
  const bool get = req.method == "GET" || req.method == "HEAD";
  if (id == "input_tokens" && sub.empty()) {
    if (req.method != "POST") return SendNotAllowed(res, req, "POST");
    return HandleInputTokens(req, res);
  }
  if (id.empty() || (!sub.empty() && sub != "input_items" && sub != "cancel")) {
    return SendError(res, Status::NotFound("no route for " + req.method + " " + req.path));
  }
  if (sub.empty() && !get && req.method != "DELETE") return SendNotAllowed(res, req, "GET, DELETE");
  if (sub == "input_items" && !get) return SendNotAllowed(res, req, "GET");
  if (sub == "cancel" && req.method != "POST") return SendNotAllowed(res, req, "POST");
  if (responses_ == nullptr) {
    return SendError(res, Status::NotFound("no stored response with id '" + id +
                                               "': this server stores no responses "
                                               "(responses_retention: 0)",
                                           "response_id"));
  }
  const std::string owner = OwnerOf(req);
  const int64_t now = clock_->UnixSeconds();
  std::shared_ptr<BackgroundRun> run = background_->Find(owner, id);
  if (req.method == "DELETE") {
    // A background response still running stops first: it would store itself again.
    if (run != nullptr && !run->done()) {
      run->Cancel();
      run->WaitDone(30'000);
    }
    if (Status st = responses_->Delete(owner, id, now); !st.ok()) return SendError(res, st);
    return res.set_content(json{{"id", id}, {"object", "response"}, {"deleted", true}}.dump(),
                           "application/json");
  }
  if (sub == "cancel" && run != nullptr && !run->done()) {
    // Stops the run; it stores itself as cancelled (or, if its answer was
    // already whole, as answered) before it is done.
    run->Cancel();
    if (!run->WaitDone(30'000)) {
      return SendError(
          res, Status::Unavailable("'" + id + "' is still stopping; retry").WithRetryAfter(1));
    }
  }
  auto stored = responses_->Get(owner, id, now);
  if (!stored.ok()) return SendError(res, stored.status());
  const json response = json::parse(stored->response, nullptr, false);
  const bool background = response.is_object() && response.value("background", json()) == true;
  const std::string status = StatusOf(stored->response);
  if (sub == "cancel") {
    if (!background) {
      return SendError(res, Status::InvalidArgument("only a background response can be "
                                                    "cancelled; '" +
                                                    id + "' was answered at once"));
    }
    // Cancelling again answers the same; an answered one is not undone.
    if (status != "cancelled") {
      return SendError(res, Status::InvalidArgument("'" + id + "' has already ended (" + status +
                                                    "): there is nothing to cancel"));
    }
    return res.set_content(stored->response, "application/json");
  }
  if (sub.empty()) {
    if (QueryParam(req.query, "stream").value_or("false") != "false") {
      if (!background) {
        return SendError(
            res, Status::InvalidArgument("stream: '" + id +
                                             "' was answered at once and is retrieved whole (only "
                                             "a background response streams again)",
                                         "stream"));
      }
      if (run == nullptr) {
        return SendError(
            res, Status::InvalidArgument("stream: the events of '" + id +
                                             "' are kept 10 minutes after it ends (or until a "
                                             "restart); retrieve it whole",
                                         "stream"));
      }
      int64_t after = -1;
      if (auto a = QueryParam(req.query, "starting_after")) {
        char* end = nullptr;
        errno = 0;
        const long long v = std::strtoll(a->c_str(), &end, 10);
        if (a->empty() || *end != '\0' || errno != 0 || v < 0) {
          return SendError(
              res, Status::InvalidArgument("starting_after must be an event's sequence_number (an "
                                           "integer ≥ 0), got '" +
                                               *a + "'",
                                           "starting_after"));
        }
        after = v;
      }
      return StreamBackground(run, after, "/v1/responses/{id}", res);
    }
    return res.set_content(stored->response, "application/json");
  }
  // input_items: newest first unless order=asc; `after` an item id.
  auto page = ItemPage(json::parse(stored->input_items, nullptr, false), req.query, id);
  if (!page.ok()) return SendError(res, page.status());
  res.set_content(DumpLossy(*page), "application/json");
}

}  // namespace outpost::api
