#include "outpost/router/socket_pool.h"

#include <poll.h>
#include <unistd.h>

namespace outpost::router {

SocketPool::SocketPool(size_t max_idle_per_upstream, std::chrono::milliseconds max_idle,
                       const util::Clock* clock)
    : max_idle_per_upstream_(max_idle_per_upstream), max_idle_(max_idle), clock_(clock) {}

SocketPool::~SocketPool() {
  for (auto& [key, idle] : idle_) {
    for (const Idle& i : idle) ::close(i.fd);
  }
}

int SocketPool::TakeIdle(const std::string& key) {
  std::vector<int> stale;
  int fd = -1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& idle = idle_[key];
    const auto now = clock_->Now();
    while (!idle.empty()) {
      const Idle top = idle.back();
      idle.pop_back();
      if (now - top.since <= max_idle_ && IdleSocketAlive(top.fd)) {
        fd = top.fd;
        break;
      }
      stale.push_back(top.fd);
    }
  }
  for (int s : stale) ::close(s);
  return fd;
}

void SocketPool::PutIdle(const std::string& key, int fd) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& idle = idle_[key];
    if (idle.size() < max_idle_per_upstream_) {
      idle.push_back({fd, clock_->Now()});
      return;
    }
  }
  ::close(fd);
}

bool IdleSocketAlive(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 0;
}

}  // namespace outpost::router
