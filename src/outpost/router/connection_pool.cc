#include "outpost/router/connection_pool.h"

#include <httplib.h>

#include "outpost/router/socket_pool.h"

namespace outpost::router {
namespace {

bool StillOpen(const httplib::Client& cli) {
  return cli.is_socket_open() && IdleSocketAlive(cli.socket());
}

std::unique_ptr<httplib::Client> NewClient(const UpstreamConfig& cfg) {
  auto cli = std::make_unique<httplib::Client>(cfg.base_url);
  cli->set_connection_timeout(std::chrono::milliseconds(cfg.connect_timeout_ms));
  // Reads time out after the first-byte timeout of silence, at any point.
  cli->set_read_timeout(std::chrono::milliseconds(cfg.first_byte_timeout_ms));
  cli->set_write_timeout(
      std::chrono::milliseconds(cfg.connect_timeout_ms + cfg.first_byte_timeout_ms));
  cli->set_keep_alive(true);
  cli->set_tcp_nodelay(true);  // head and body are separate writes: no Nagle stall
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
  cli->enable_server_certificate_verification(cfg.tls_verify);
  if (!cfg.tls_ca_file.empty()) cli->set_ca_cert_path(cfg.tls_ca_file);
#endif
  return cli;
}

}  // namespace

ConnectionPool::ConnectionPool(size_t max_idle_per_upstream, std::chrono::milliseconds max_idle,
                               const util::Clock* clock)
    : max_idle_per_upstream_(max_idle_per_upstream), max_idle_(max_idle), clock_(clock) {}

ConnectionPool::~ConnectionPool() = default;

ConnectionPool::Lease ConnectionPool::Acquire(const UpstreamConfig& cfg, bool fresh) {
  std::vector<std::unique_ptr<httplib::Client>> stale;  // closed outside the lock
  Lease lease;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& idle = idle_[cfg.name];
    const auto now = clock_->Now();
    while (!fresh && !idle.empty()) {
      Idle top = std::move(idle.back());
      idle.pop_back();
      if (now - top.since <= max_idle_ && StillOpen(*top.client)) {
        lease.client = std::move(top.client);
        lease.reused = true;
        break;
      }
      stale.push_back(std::move(top.client));
    }
    if (!lease.client) ++opened_;
  }
  if (!lease.client) lease.client = NewClient(cfg);
  return lease;
}

void ConnectionPool::Release(const std::string& upstream, std::unique_ptr<httplib::Client> client) {
  if (!client || !client->is_socket_open()) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto& idle = idle_[upstream];
  if (idle.size() >= max_idle_per_upstream_) return;  // dropped: closes the socket
  idle.push_back({std::move(client), clock_->Now()});
}

uint64_t ConnectionPool::connections_opened() const {
  std::lock_guard<std::mutex> lock(mu_);
  return opened_;
}

}  // namespace outpost::router
