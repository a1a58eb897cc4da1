// AuditSink — one audit record per completion request: wraps the HTTP sink,
// passes every call through, and when the answer ends (OnDone, OnRelayEnd or
// OnError) appends the record: request id, endpoint, the API key's id (a hash
// prefix, never the key), tenant, declared data class, route and reason,
// model, token counts, status and finish reason. No prompt or answer text.
//
// Thread-safety: as router::ResponseSink; the record is written once.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "outpost/api/api_keys.h"
#include "outpost/audit/audit_log.h"
#include "outpost/router/response_sink.h"

namespace outpost::api {

struct AuditRequestInfo {
  std::string request_id;
  std::string endpoint;
  std::string key_id;  // "" without a key
  std::string tenant;
  std::string data_class;  // as declared (X-Data-Class), "" if none
  std::string model;       // as requested
};

class AuditSink final : public router::ForwardingSink {
 public:
  AuditSink(std::shared_ptr<router::ResponseSink> inner, audit::AuditLog* log,
            AuditRequestInfo info);
  ~AuditSink() override;  // writes the record if no end came (cancelled before any)

  void OnRoute(const router::RouteReport& route) override;
  void OnLocalStart(const router::LocalAnswerMeta& meta) override;
  void OnDone(scheduler::GenerationResult result) override;
  void OnRelayHead(int http_status, const std::string& content_type) override;
  void OnRelayEnd(Status error) override;
  void OnError(Status error) override;

 private:
  void Write(int status, const std::string& finish, const std::string& error, int prompt_tokens,
             int completion_tokens);

  audit::AuditLog* const log_;
  std::mutex mu_;
  AuditRequestInfo info_;
  std::string route_ = "local", reason_;
  std::string served_model_;
  std::string served_version_;
  int relay_status_ = 0;
  std::atomic<bool> written_{false};
};

}  // namespace outpost::api
