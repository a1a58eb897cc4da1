#include "outpost/api/http_sink.h"

namespace outpost::api {

HttpSink::HttpSink(std::function<bool()> client_gone) : client_gone_(std::move(client_gone)) {}

void HttpSink::OnRoute(const router::RouteReport& route) {
  std::lock_guard<std::mutex> lock(mu_);
  route_ = route;
}

void HttpSink::OnHeader(const std::string& name, const std::string& value) {
  std::lock_guard<std::mutex> lock(mu_);
  headers_[name] = value;
}

void HttpSink::OnLocalStart(const router::LocalAnswerMeta& meta) {
  std::lock_guard<std::mutex> lock(mu_);
  meta_ = meta;
}

void HttpSink::Append(std::string data, bool end) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_ += data;
    ended_ = ended_ || end;
  }
  cv_.notify_all();
}

void HttpSink::OnText(int choice, std::string text) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (state_ == State::kWaiting) state_ = State::kLocal;
    started_ = true;
    if (pending_pieces_.empty() || pending_pieces_.back().choice != choice) {
      pending_pieces_.push_back(Piece{choice, {}, {}});
    }
    pending_pieces_.back().text += text;
  }
  cv_.notify_all();
}

void HttpSink::OnLogprobs(int choice, std::vector<scheduler::TokenInfo> tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  // The text these tokens produced follows at once (OnText for the same choice).
  if (pending_pieces_.empty() || pending_pieces_.back().choice != choice) {
    pending_pieces_.push_back(Piece{choice, {}, {}});
  }
  for (auto& t : tokens) pending_pieces_.back().logprobs.push_back(std::move(t));
}

void HttpSink::OnDone(scheduler::GenerationResult result) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    // A request that failed before any output gets a real error status, not a
    // 200 with the error inside.
    const bool failed_early = !started_ && result.finish == scheduler::FinishReason::kError;
    if (state_ == State::kWaiting) {
      state_ = failed_early ? State::kError : State::kLocal;
      if (failed_early) error_ = result.error;
    }
    result_ = std::move(result);
  }
  Append({}, true);
}

void HttpSink::OnRelayHead(int http_status, const std::string& content_type) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    relay_status_ = http_status;
    relay_content_type_ = content_type;
    state_ = State::kRelay;
  }
  cv_.notify_all();
}

void HttpSink::OnRelayBody(std::string chunk) {
  Append(std::move(chunk), false);
}

void HttpSink::OnRelayEnd(Status error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    relay_error_ = std::move(error);
  }
  Append({}, true);
}

void HttpSink::OnError(Status error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    state_ = State::kError;
    error_ = std::move(error);
  }
  Append({}, true);
}

bool HttpSink::Cancelled() {
  if (cancelled_.load(std::memory_order_relaxed)) return true;
  if (!client_gone_()) return false;
  cancelled_.store(true, std::memory_order_relaxed);
  return true;
}

HttpSink::Answer HttpSink::WaitStart() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return state_ != State::kWaiting; });
  switch (state_) {
    case State::kRelay:
      return Answer::kRelay;
    case State::kLocal:
      return Answer::kLocal;
    default:
      return Answer::kError;
  }
}

std::vector<HttpSink::Piece> HttpSink::TakePieces(bool* ended) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !pending_pieces_.empty() || ended_; });
  std::vector<Piece> out = std::move(pending_pieces_);
  pending_pieces_.clear();
  *ended = ended_;
  return out;
}

std::string HttpSink::Take(bool* ended) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !pending_.empty() || ended_; });
  std::string out = std::move(pending_);
  pending_.clear();
  *ended = ended_;
  return out;
}

void HttpSink::Cancel() {
  cancelled_.store(true, std::memory_order_relaxed);
}

}  // namespace outpost::api
