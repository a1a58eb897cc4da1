#include "outpost/router/cluster.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace outpost::router {

Cluster::Cluster(std::vector<UpstreamConfig> upstreams, const util::Clock* clock, ProbeFn probe)
    : clock_(clock), probe_(std::move(probe)) {
  for (auto& u : upstreams) {
    Host h;
    h.cfg = std::move(u);
    hosts_.push_back(std::move(h));
  }
}

Cluster::~Cluster() {
  Stop();
}

void Cluster::Start() {
  if (hosts_.empty()) return;
  for (size_t i = 0; i < hosts_.size(); ++i) threads_.emplace_back([this, i] { Loop(i); });
}

void Cluster::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

std::vector<UpstreamView> Cluster::View() const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = clock_->Now();
  std::vector<UpstreamView> out;
  for (size_t i = 0; i < hosts_.size(); ++i) {
    const Host& h = hosts_[i];
    UpstreamView v;
    v.id = static_cast<UpstreamId>(i);
    v.name = h.cfg.name;
    v.kind = h.cfg.kind;
    v.models = h.cfg.models;
    uint32_t health = h.health;
    if ((health & kOutlierEjected) && now >= h.ejected_until) health &= ~kOutlierEjected;
    v.available = health == 0 && h.active < h.cfg.max_requests;
    out.push_back(std::move(v));
  }
  return out;
}

bool Cluster::TryAcquire(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& h : hosts_) {
    if (h.cfg.name != name) continue;
    if (h.active >= h.cfg.max_requests) return false;
    ++h.active;
    return true;
  }
  return false;
}

void Cluster::Release(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& h : hosts_) {
    if (h.cfg.name == name && h.active > 0) --h.active;
  }
}

void Cluster::ReportSuccess(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& h : hosts_) {
    if (h.cfg.name == name) h.request_failures = 0;
  }
}

void Cluster::ReportFailure(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& h : hosts_) {
    if (h.cfg.name != name) continue;
    if (++h.request_failures < h.cfg.outlier.consecutive_failures) return;
    h.request_failures = 0;
    ++h.ejections;
    const int64_t ms =
        std::min<int64_t>(h.cfg.outlier.max_ejection_ms,
                          h.cfg.outlier.base_ejection_ms << std::min(h.ejections - 1, 20));
    h.ejected_until = clock_->Now() + std::chrono::milliseconds(ms);
    h.health |= kOutlierEjected;
    spdlog::warn("upstream {} ejected for {} ms after {} consecutive failures (ejection #{})", name,
                 ms, h.cfg.outlier.consecutive_failures, h.ejections);
  }
}

Cluster::TimePoint Cluster::CheckHost(size_t i) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto now = clock_->Now();
  if (stopping_ || hosts_[i].next_check > now) return hosts_[i].next_check;
  const UpstreamConfig cfg = hosts_[i].cfg;
  lock.unlock();
  const bool ok = probe_(cfg);
  lock.lock();
  Host& h = hosts_[i];
  const bool was_healthy = !(h.health & kFailedActiveHealthCheck);
  if (ok) {
    h.hc_fail = 0;
    if (++h.hc_ok >= h.cfg.health.healthy_threshold) h.health &= ~kFailedActiveHealthCheck;
  } else {
    h.hc_ok = 0;
    if (++h.hc_fail >= h.cfg.health.unhealthy_threshold) h.health |= kFailedActiveHealthCheck;
  }
  const bool healthy = !(h.health & kFailedActiveHealthCheck);
  if (healthy != was_healthy) {
    spdlog::info("upstream {} ({}) is now {}", h.cfg.name, h.cfg.base_url,
                 healthy ? "healthy" : "UNHEALTHY");
  }
  h.next_check = clock_->Now() + std::chrono::milliseconds(h.cfg.health.interval_ms);
  return h.next_check;
}

Cluster::TimePoint Cluster::RunDueChecks() {
  TimePoint next = TimePoint::max();
  for (size_t i = 0; i < hosts_.size(); ++i) next = std::min(next, CheckHost(i));
  return next;
}

void Cluster::Loop(size_t i) {
  for (;;) {
    const TimePoint next = CheckHost(i);
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_until(lock, next, [&] { return stopping_; })) return;
  }
}

std::vector<Cluster::HostStatus> Cluster::Status() const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = clock_->Now();
  std::vector<HostStatus> out;
  for (const auto& h : hosts_) {
    HostStatus st;
    st.name = h.cfg.name;
    st.kind = h.cfg.kind;
    st.url = h.cfg.base_url + h.cfg.path_prefix;
    if (h.health & kFailedActiveHealthCheck)
      st.health_flags.push_back("failed_active_health_check");
    if ((h.health & kOutlierEjected) && now < h.ejected_until)
      st.health_flags.push_back("outlier_ejected");
    st.active_requests = h.active;
    st.max_requests = h.cfg.max_requests;
    st.ejections = h.ejections;
    out.push_back(std::move(st));
  }
  return out;
}

}  // namespace outpost::router
