#include "outpost/router/proxy.h"

#include <httplib.h>

namespace outpost::router {

using Clock = std::chrono::steady_clock;

UpstreamCall::UpstreamCall(const UpstreamConfig& cfg, ConnectionPool* pool, const std::string& path,
                           std::string body)
    : cfg_(cfg),
      pool_(pool),
      deadline_(Clock::now() + std::chrono::milliseconds(cfg.total_timeout_ms)) {
  thread_ = std::thread([this, path, b = std::move(body)]() mutable { Run(path, std::move(b)); });
}

UpstreamCall::~UpstreamCall() {
  cancelled_ = true;
  if (thread_.joinable()) thread_.join();
}

namespace {

httplib::Request NewRequest(const UpstreamConfig& cfg, const std::string& path, std::string body) {
  httplib::Request req;
  req.method = "POST";
  req.path = cfg.path_prefix + path;
  req.body = std::move(body);
  req.set_header("Content-Type", "application/json");
  req.set_header("Accept", "application/json, text/event-stream");
  // Relayed bodies are small and the next hop is near: compressing and
  // decompressing them (brotli by default between cpp-httplib peers) costs
  // more CPU than the bytes saved.
  req.set_header("Accept-Encoding", "identity");
  if (!cfg.api_key.empty()) req.set_header("Authorization", "Bearer " + cfg.api_key);
  // Loop prevention: an Outpost that receives a forwarded request serves it
  // itself and never forwards it again (two peers would otherwise ping-pong).
  req.set_header(kForwardedHeader, "1");
  return req;
}

// Sends `req` on a pooled connection and returns it to the pool after a clean
// exchange. A pooled connection the server closed while it sat idle fails at
// once, before any response: the request never arrived, so it is sent again
// on a fresh connection. A read timeout takes the whole first-byte timeout
// and is not retried here.
template <typename HeadSeen>
bool Exchange(const UpstreamConfig& cfg, ConnectionPool* pool, httplib::Request& req,
              httplib::Error* err, const std::atomic<bool>& cancelled, HeadSeen head_seen) {
  ConnectionPool::Lease lease = pool->Acquire(cfg);
  httplib::Response res;
  const auto t0 = Clock::now();
  bool ok = lease.client->send(req, res, *err);
  if (!ok && lease.reused && !cancelled && !head_seen() &&
      Clock::now() - t0 < std::chrono::milliseconds(cfg.first_byte_timeout_ms)) {
    lease = pool->Acquire(cfg, /*fresh=*/true);
    res = httplib::Response();
    *err = httplib::Error::Success;
    ok = lease.client->send(req, res, *err);
  }
  if (ok && !cancelled) pool->Release(cfg.name, std::move(lease.client));
  return ok;
}

}  // namespace

Status FetchUpstream(const UpstreamConfig& cfg, ConnectionPool* pool, const std::string& path,
                     std::string body, UpstreamReply* reply) {
  const auto t0 = Clock::now();
  const auto deadline = t0 + std::chrono::milliseconds(cfg.total_timeout_ms);
  httplib::Request req = NewRequest(cfg, path, std::move(body));
  *reply = UpstreamReply();
  req.response_handler = [&](const httplib::Response& r) {
    reply->status = r.status;
    reply->content_type = r.get_header_value("Content-Type");
    return true;
  };
  bool over_deadline = false;
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    if (Clock::now() > deadline) {
      over_deadline = true;
      return false;
    }
    reply->body.append(data, n);
    return true;
  };
  const std::atomic<bool> never_cancelled{false};
  httplib::Error err = httplib::Error::Success;
  if (Exchange(cfg, pool, req, &err, never_cancelled, [&] { return reply->status != 0; })) {
    return Status::Ok();
  }
  const std::string who = "upstream " + cfg.name + " (" + cfg.base_url + ") ";
  if (over_deadline) return Status::Unavailable(who + "exceeded its total timeout");
  const bool silent = err == httplib::Error::Read &&
                      Clock::now() - t0 >= std::chrono::milliseconds(cfg.first_byte_timeout_ms);
  if (silent && reply->status == 0) {
    return Status::Unavailable(who + "sent no response within the first-byte timeout (" +
                               std::to_string(cfg.first_byte_timeout_ms) + " ms)");
  }
  if (reply->status != 0) {
    return Status::Unavailable(who + "broke off the response body: " + httplib::to_string(err));
  }
  return Status::Unavailable(who + "failed: " + httplib::to_string(err));
}

void UpstreamCall::Run(std::string path, std::string body) {
  httplib::Request req = NewRequest(cfg_, path, std::move(body));
  req.response_handler = [this](const httplib::Response& r) {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = r.status;
    content_type_ = r.get_header_value("Content-Type");
    cv_.notify_all();
    return !cancelled_;
  };
  req.content_receiver = [this](const char* data, size_t n, uint64_t, uint64_t) {
    if (cancelled_ || Clock::now() > deadline_) return false;
    std::lock_guard<std::mutex> lock(mu_);
    chunks_.emplace_back(data, n);
    DeliverLocked();
    cv_.notify_all();
    return !cancelled_;
  };
  httplib::Error err = httplib::Error::Success;
  const bool ok = Exchange(cfg_, pool_, req, &err, cancelled_, [this] {
    std::lock_guard<std::mutex> lock(mu_);
    return status_ != 0;
  });
  std::lock_guard<std::mutex> lock(mu_);
  if (!ok && !cancelled_) {
    const std::string what = Clock::now() > deadline_ ? "exceeded its total timeout"
                                                      : "failed: " + httplib::to_string(err);
    error_ = Status::Unavailable("upstream " + cfg_.name + " (" + cfg_.base_url + ") " + what);
  }
  finished_ = true;
  DeliverLocked();
  cv_.notify_all();
}

void UpstreamCall::DeliverLocked() {
  if (!on_chunk_) return;
  while (!chunks_.empty()) {
    std::string c = std::move(chunks_.front());
    chunks_.pop_front();
    if (!cancelled_ && !on_chunk_(std::move(c))) cancelled_ = true;
  }
  if (finished_ && !end_delivered_) {
    end_delivered_ = true;
    on_end_(error_);
  }
}

void UpstreamCall::StreamTo(ChunkFn on_chunk, EndFn on_end) {
  std::lock_guard<std::mutex> lock(mu_);
  on_chunk_ = std::move(on_chunk);
  on_end_ = std::move(on_end);
  DeliverLocked();
}

StatusOr<int> UpstreamCall::WaitHead() {
  std::unique_lock<std::mutex> lock(mu_);
  const auto limit =
      std::min(deadline_, Clock::now() + std::chrono::milliseconds(cfg_.connect_timeout_ms +
                                                                   cfg_.first_byte_timeout_ms));
  cv_.wait_until(lock, limit, [&] { return status_ != 0 || finished_; });
  if (status_ != 0) return status_;
  if (!error_.ok()) return error_;
  if (finished_)
    return Status::Unavailable("upstream " + cfg_.name +
                               " closed the connection without a response");
  cancelled_ = true;
  return Status::Unavailable("upstream " + cfg_.name +
                             " sent no response within the first-byte timeout (" +
                             std::to_string(cfg_.first_byte_timeout_ms) + " ms)");
}

StatusOr<std::string> UpstreamCall::ReadAll() {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_until(lock, deadline_, [&] { return finished_; })) {
    cancelled_ = true;
    return Status::Unavailable("upstream " + cfg_.name + " exceeded its total timeout");
  }
  if (!error_.ok()) return error_;
  std::string body;
  for (auto& c : chunks_) body += c;
  chunks_.clear();
  return body;
}

}  // namespace outpost::router
