#include "outpost/router/proxy.h"

#include <httplib.h>

namespace outpost::router {

using Clock = std::chrono::steady_clock;

UpstreamCall::UpstreamCall(const UpstreamConfig& cfg, const std::string& path, std::string body)
    : cfg_(cfg), deadline_(Clock::now() + std::chrono::milliseconds(cfg.total_timeout_ms)) {
  thread_ = std::thread([this, path, b = std::move(body)]() mutable { Run(path, std::move(b)); });
}

UpstreamCall::~UpstreamCall() {
  cancelled_ = true;
  if (thread_.joinable()) thread_.join();
}

void UpstreamCall::Run(std::string path, std::string body) {
  httplib::Client cli(cfg_.base_url);
  cli.set_connection_timeout(std::chrono::milliseconds(cfg_.connect_timeout_ms));
  // Reads time out after the first-byte timeout of silence, at any point.
  cli.set_read_timeout(std::chrono::milliseconds(cfg_.first_byte_timeout_ms));
  cli.set_write_timeout(
      std::chrono::milliseconds(cfg_.connect_timeout_ms + cfg_.first_byte_timeout_ms));
  cli.set_keep_alive(false);
  cli.set_tcp_nodelay(true);  // head and body are separate writes: no Nagle stall
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
  cli.enable_server_certificate_verification(cfg_.tls_verify);
  if (!cfg_.tls_ca_file.empty()) cli.set_ca_cert_path(cfg_.tls_ca_file);
#endif
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = std::move(body);
  req.set_header("Content-Type", "application/json");
  req.set_header("Accept", "application/json, text/event-stream");
  if (!cfg_.api_key.empty()) req.set_header("Authorization", "Bearer " + cfg_.api_key);
  // Loop prevention: an Outpost that receives a forwarded request serves it
  // itself and never forwards it again (two peers would otherwise ping-pong).
  req.set_header(kForwardedHeader, "1");
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
    cv_.notify_all();
    return true;
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  const bool ok = cli.send(req, res, err);
  std::lock_guard<std::mutex> lock(mu_);
  if (!ok && !cancelled_) {
    const std::string what = Clock::now() > deadline_ ? "exceeded its total timeout"
                                                      : "failed: " + httplib::to_string(err);
    error_ = Status::Unavailable("upstream " + cfg_.name + " (" + cfg_.base_url + ") " + what);
  }
  finished_ = true;
  cv_.notify_all();
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

bool UpstreamCall::Next(std::string* chunk, std::chrono::milliseconds poll, bool* idle) {
  std::unique_lock<std::mutex> lock(mu_);
  *idle = false;
  if (!cv_.wait_for(lock, poll, [&] { return !chunks_.empty() || finished_; })) {
    if (Clock::now() > deadline_) {
      cancelled_ = true;
      error_ = Status::Unavailable("upstream " + cfg_.name + " exceeded its total timeout");
      return false;
    }
    *idle = true;
    return true;
  }
  if (!chunks_.empty()) {
    *chunk = std::move(chunks_.front());
    chunks_.pop_front();
    return true;
  }
  return false;  // finished and drained
}

Status UpstreamCall::error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

}  // namespace outpost::router
