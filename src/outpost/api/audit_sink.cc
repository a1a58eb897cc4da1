#include "outpost/api/audit_sink.h"

#include "outpost/api/errors.h"

namespace outpost::api {

AuditSink::AuditSink(std::shared_ptr<router::ResponseSink> inner, audit::AuditLog* log,
                     AuditRequestInfo info)
    : ForwardingSink(std::move(inner)), log_(log), info_(std::move(info)) {}

AuditSink::~AuditSink() {
  if (!written_) Write(499, "", "cancelled", 0, 0);
}

void AuditSink::Write(int status, const std::string& finish, const std::string& error,
                      int prompt_tokens, int completion_tokens) {
  if (written_.exchange(true)) return;
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json r = {{"request_id", info_.request_id},
                      {"endpoint", info_.endpoint},
                      {"key_id", info_.key_id},
                      {"tenant", info_.tenant},
                      {"data_class", info_.data_class},
                      {"route", route_},
                      {"reason", reason_},
                      {"model", served_model_.empty() ? info_.model : served_model_},
                      {"version", served_version_},
                      {"status", status},
                      {"prompt_tokens", prompt_tokens},
                      {"completion_tokens", completion_tokens}};
  if (!finish.empty()) r["finish_reason"] = finish;
  if (!error.empty()) r["error"] = error;
  log_->Append("request", std::move(r));
}

void AuditSink::OnRoute(const router::RouteReport& route) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    route_ = route.route;
    reason_ = route.reason;
  }
  inner_->OnRoute(route);
}

void AuditSink::OnLocalStart(const router::LocalAnswerMeta& meta) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    served_model_ = meta.model;
    served_version_ = meta.version;
  }
  inner_->OnLocalStart(meta);
}

void AuditSink::OnDone(scheduler::GenerationResult result) {
  const int status = result.error.ok() ? 200 : HttpStatusFor(result.error.code());
  Write(status, scheduler::FinishReasonName(result.finish), result.error.message(),
        result.usage.prompt_tokens, result.usage.completion_tokens);
  inner_->OnDone(std::move(result));
}

void AuditSink::OnRelayHead(int http_status, const std::string& content_type) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    relay_status_ = http_status;
  }
  inner_->OnRelayHead(http_status, content_type);
}

void AuditSink::OnRelayEnd(Status error) {
  int status;
  {
    std::lock_guard<std::mutex> lock(mu_);
    status = relay_status_;
  }
  Write(status, "", error.ok() ? "" : error.message(), 0, 0);
  inner_->OnRelayEnd(std::move(error));
}

void AuditSink::OnError(Status error) {
  Write(HttpStatusFor(error.code()), "", error.message(), 0, 0);
  inner_->OnError(std::move(error));
}

}  // namespace outpost::api
