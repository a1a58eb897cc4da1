// One HTTP connection of the front, for plain TCP and TLS (Connection<Stream>):
// read a request head (Beast's parser), then its body, hand it to a worker,
// watch for a hang-up while it runs, write what the worker queues, then wait
// for the next request. Timeouts per phase on one timer.
//
// The socket, timer and parser live on the connection's strand. Workers reach
// it only through Send() (bytes to write), Finish() (the response is
// complete) and the back-pressure wait, all under the connection's mutex.
#include <sys/socket.h>

#include <cerrno>

#include <spdlog/spdlog.h>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <optional>

#include "outpost/api/http_front_impl.h"

namespace outpost::api::front {

namespace beast = boost::beast;
namespace http = boost::beast::http;
using Clock = std::chrono::steady_clock;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch())
      .count();
}

// The response head, serialised here (the body framing is ours too: a
// Content-Length body, or chunks).
std::string Head(int status, const HttpResponse& res, bool keep_alive, bool chunked,
                 size_t content_length) {
  std::string h = "HTTP/1.1 " + std::to_string(status) + " ";
  h += std::string(http::obsolete_reason(static_cast<http::status>(status)));
  h += "\r\n";
  if (!res.content_type.empty()) h += "Content-Type: " + res.content_type + "\r\n";
  for (const auto& [name, value] : res.headers) h += name + ": " + value + "\r\n";
  if (res.streamed()) {
    if (chunked) h += "Transfer-Encoding: chunked\r\n";
  } else {
    h += "Content-Length: " + std::to_string(content_length) + "\r\n";
  }
  h += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  h += "\r\n";
  return h;
}

std::string Chunk(const std::string& data) {
  char size[32];
  const int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  std::string out;
  out.reserve(static_cast<size_t>(n) + data.size() + 2);
  out.append(size, static_cast<size_t>(n));
  out += data;
  out += "\r\n";
  return out;
}

namespace {

tcp::socket& Lowest(tcp::socket& s) {
  return s;
}
tcp::socket& Lowest(ssl::stream<tcp::socket>& s) {
  return s.next_layer();
}

template <class Stream>
class Connection final : public ConnectionBase {
 public:
  Connection(HttpFront::Impl* front, uint64_t id, std::string client, Stream stream,
             std::shared_ptr<ssl::context> tls = nullptr)
      : tls_(std::move(tls)),
        front_(front),
        opt_(front->options),
        id_(id),
        client_(std::move(client)),
        stream_(std::move(stream)),
        timer_(Lowest(stream_).get_executor()) {
    if constexpr (std::is_same_v<Stream, tcp::socket>) direct_fd_ = stream_.native_handle();
  }

  void Start() {
    if constexpr (std::is_same_v<Stream, ssl::stream<tcp::socket>>) {
      Arm(opt_.header_timeout_ms, &HttpFrontCounters::header_timeouts);
      auto self = Self();
      stream_.async_handshake(ssl::stream_base::server, [self](beast::error_code ec) {
        if (ec) return self->Close();
        self->WaitRequest();
      });
    } else {
      WaitRequest();
    }
  }

  void PostStart() override {
    auto self = Self();
    net::post(Lowest(stream_).get_executor(), [self] { self->Start(); });
  }

  void PostClose() override {
    auto self = Self();
    net::post(Lowest(stream_).get_executor(), [self] { self->Close(); });
  }

 private:
  enum class Phase { kIdle, kHead, kBody, kActive };

  std::shared_ptr<Connection> Self() {
    return std::static_pointer_cast<Connection>(shared_from_this());
  }

  // --- Timer (strand) ---
  void Arm(int64_t ms, std::atomic<int64_t> HttpFrontCounters::*counter) {
    const uint64_t gen = ++timer_gen_;
    timer_.expires_after(std::chrono::milliseconds(ms));
    auto self = Self();
    timer_.async_wait([self, gen, counter](beast::error_code ec) {
      if (ec || gen != self->timer_gen_ || self->closed_) return;
      (self->front_->counters.*counter).fetch_add(1);
      self->Close();
    });
  }
  void Disarm() {
    ++timer_gen_;
    timer_.cancel();
  }

  // --- Reading (strand) ---
  // Between requests: wait for the next one's first byte, at most
  // idle_timeout_ms. A read already pending (the watch while the last request
  // ran) serves as this wait.
  void WaitRequest() {
    // A client that hung up during the last answer gets no idle wait.
    if (gone_) return Close();
    phase_ = Phase::kIdle;
    front_->table.SetPhase(id_, ConnectionTable::Phase::kIdle, NowMs());
    Arm(opt_.idle_timeout_ms, &HttpFrontCounters::idle_timeouts);
    // One read at a time: a pending read's handler goes on to the head.
    if (read_pending_) return;
    if (buf_.size() > 0) return ReadHead();
    ReadSome();
  }

  void ReadSome() {
    read_pending_ = true;
    auto self = Self();
    stream_.async_read_some(buf_.prepare(4096), [self](beast::error_code ec, size_t n) {
      self->read_pending_ = false;
      if (ec) {
        if (self->phase_ == Phase::kActive) {
          self->MarkGone();  // the answer's writes will fail; closed after it
        } else {
          self->Close();
        }
        return;
      }
      self->buf_.commit(n);
      if (self->phase_ == Phase::kIdle) self->ReadHead();
      // kActive: keep the bytes (a pipelined request) and stop watching.
    });
  }

  void ReadHead() {
    phase_ = Phase::kHead;
    Arm(opt_.header_timeout_ms, &HttpFrontCounters::header_timeouts);
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(opt_.max_header_bytes));
    parser_->body_limit(opt_.max_body_bytes);
    auto self = Self();
    http::async_read_header(stream_, buf_, *parser_, [self](beast::error_code ec, size_t) {
      if (ec) return self->ReadFailed(ec);
      auto& req = self->parser_->get();
      const auto expect = req[http::field::expect];
      if (!self->parser_->is_done() && beast::iequals(expect, "100-continue")) {
        static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        self->Arm(self->opt_.body_timeout_ms, &HttpFrontCounters::body_timeouts);
        net::async_write(self->stream_, net::buffer(kContinue),
                         [self](beast::error_code wec, size_t) {
                           if (wec) return self->Close();
                           self->ReadBody();
                         });
        return;
      }
      self->ReadBody();
    });
  }

  void ReadBody() {
    if (parser_->is_done()) return Dispatch();
    phase_ = Phase::kBody;
    Arm(opt_.body_timeout_ms, &HttpFrontCounters::body_timeouts);
    auto self = Self();
    http::async_read(stream_, buf_, *parser_, [self](beast::error_code ec, size_t) {
      if (ec) return self->ReadFailed(ec);
      self->Dispatch();
    });
  }

  void ReadFailed(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == net::error::eof ||
        ec == net::error::operation_aborted || ec == net::error::connection_reset ||
        ec.category() == net::error::get_ssl_category() || closed_) {
      return Close();
    }
    front_->counters.bad_requests.fetch_add(1);
    if (ec == http::error::header_limit) {
      return Reject(431, "the request head is larger than the limit (max_header_size, " +
                             std::to_string(opt_.max_header_bytes) + " bytes)");
    }
    if (ec == http::error::body_limit) {
      return Reject(413, "the request body is larger than the limit (max_body_size, " +
                             std::to_string(opt_.max_body_bytes) + " bytes)");
    }
    Reject(400, "malformed HTTP request: " + ec.message());
  }

  // An error the front answers itself, then closes.
  void Reject(int status, const std::string& message) {
    phase_ = Phase::kActive;
    Disarm();
    HttpResponse res;
    res.status = status;
    opt_.error_body(status, message, res);
    Send(Head(status, res, false, false, res.body.size()) + res.body);
    Finish(false);
  }

  // --- Handing the request to a worker (strand) ---
  void Dispatch() {
    phase_ = Phase::kActive;
    Disarm();
    front_->table.SetPhase(id_, ConnectionTable::Phase::kActive, NowMs());
    http::request<http::string_body> msg = parser_->release();
    parser_.reset();
    auto req = std::make_shared<HttpRequest>();
    req->method = std::string(msg.method_string());
    const std::string target(msg.target());
    const size_t q = target.find('?');
    req->path = PercentDecode(target.substr(0, q));
    if (q != std::string::npos) req->query = target.substr(q + 1);
    for (const auto& f : msg) {
      req->headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
    }
    req->body = std::move(msg.body());
    req->remote_addr = client_;
    std::weak_ptr<Connection> weak = Self();
    req->client_gone = [weak] {
      auto c = weak.lock();
      return !c || c->gone_.load(std::memory_order_relaxed);
    };
    const bool keep_alive = msg.keep_alive();
    const bool http11 = msg.version() >= 11;
    // Watch the socket while the request runs: a client that hangs up is
    // seen at once. Unless bytes of a next request already wait.
    if (!read_pending_ && buf_.size() == 0) ReadSome();
    auto self = Self();
    front_->in_flight.fetch_add(1);
    front_->workers.Post([self, req, keep_alive, http11] {
      self->Serve(*req, keep_alive, http11);
      self->front_->in_flight.fetch_sub(1);
    });
  }

  // --- Worker side ---
  class Writer final : public ChunkWriter {
   public:
    Writer(Connection* c, bool chunked) : c_(c), chunked_(chunked) {}
    bool Write(const std::string& data) override {
      if (failed_) return false;
      if (data.empty()) return true;
      if (!c_->SendAndWait(chunked_ ? Chunk(data) : data)) failed_ = true;
      return !failed_;
    }
    bool failed() const { return failed_; }

   private:
    Connection* const c_;
    const bool chunked_;
    bool failed_ = false;
  };

  void Serve(const HttpRequest& req, bool keep_alive, bool http11) {
    try {
      ServeOrThrow(req, keep_alive, http11);
    } catch (const std::exception& e) {
      // Only a stream's provider gets here (the handler is caught below):
      // the head is out, so end the connection.
      spdlog::error("BUG: exception while streaming {} {}: {}", req.method, req.path, e.what());
      MarkGone();
      Finish(false);
    }
  }

  void ServeOrThrow(const HttpRequest& req, bool keep_alive, bool http11) {
    HttpResponse res;
    try {
      front_->handler(req, res);
    } catch (const std::exception& e) {
      spdlog::error("BUG: exception while serving {} {}: {}", req.method, req.path, e.what());
      res = HttpResponse();
      res.status = 500;
      opt_.error_body(500, std::string("internal error: ") + e.what(), res);
    }
    keep_alive = keep_alive && !front_->stopping.load();
    if (!res.streamed()) {
      // HEAD: the head alone (with the length the body would have).
      const bool head_only = req.method == "HEAD";
      Send(Head(res.status, res, keep_alive, false, res.body.size()) +
           (head_only ? std::string() : res.body));
      return Finish(keep_alive);
    }
    // An HTTP/1.0 client gets the stream unframed, ended by the close.
    const bool chunked = http11;
    keep_alive = keep_alive && chunked;
    SendAndWait(Head(res.status, res, keep_alive, chunked, 0));
    Writer out(this, chunked);
    while (!out.failed() && res.provider(out)) {
    }
    const bool complete = !out.failed() && !gone_.load();
    if (complete && chunked) Send("0\r\n\r\n");
    if (res.on_end) res.on_end(complete);
    Finish(keep_alive && complete);
  }

  // Writes bytes, or queues them for the strand to write (any thread). On
  // plain TCP with nothing queued, the caller sends them itself without
  // blocking: a relayed answer or a stream's chunk leaves without waking an
  // I/O thread (measured: the hand-off added ~0.1 ms per response). Only the
  // rest, if the socket buffer is full, waits for the strand.
  void Send(std::string bytes) {
    bool start = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (gone_) return;
      if (direct_fd_ >= 0 && !writing_) {
        // Under mu_ and with gone_ false the descriptor is still this
        // connection's: Close() marks it gone (under mu_) before closing.
        const ssize_t n =
            ::send(direct_fd_, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n == static_cast<ssize_t>(bytes.size())) return;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
          gone_ = true;
          cv_.notify_all();
          return;
        }
        if (n > 0) bytes.erase(0, static_cast<size_t>(n));
      }
      outbox_ += bytes;
      buffered_ += bytes.size();
      start = !writing_;
      writing_ = true;
    }
    if (start) {
      auto self = Self();
      net::post(Lowest(stream_).get_executor(), [self] { self->Flush(); });
    }
  }

  // Send(), then wait while more than max_buffered_bytes are unsent. False
  // once the client is gone (the write timeout closes a stalled one).
  bool SendAndWait(std::string bytes) {
    Send(std::move(bytes));
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return gone_ || buffered_ <= opt_.max_buffered_bytes; });
    return !gone_;
  }

  // The response is complete (worker): close or read the next request once
  // everything queued is written.
  void Finish(bool keep_alive) {
    auto self = Self();
    net::post(Lowest(stream_).get_executor(), [self, keep_alive] {
      std::lock_guard<std::mutex> lock(self->mu_);
      self->finished_ = true;
      self->keep_alive_ = keep_alive;
      if (!self->writing_) self->AfterResponse();
    });
  }

  // --- Writing (strand) ---
  void Flush() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closed_) {
        writing_ = false;
        return;
      }
      if (gone_ || outbox_.empty()) {
        writing_ = false;
        if (finished_) AfterResponse();
        return;
      }
      inflight_ = std::move(outbox_);
      outbox_.clear();
    }
    Arm(opt_.write_timeout_ms, &HttpFrontCounters::write_timeouts);
    auto self = Self();
    net::async_write(stream_, net::buffer(inflight_), [self](beast::error_code ec, size_t) {
      if (ec) {
        self->MarkGone();
        return self->Close();
      }
      {
        std::lock_guard<std::mutex> lock(self->mu_);
        self->buffered_ -= self->inflight_.size();
      }
      self->inflight_.clear();
      self->Disarm();
      self->cv_.notify_all();
      self->Flush();
    });
  }

  // REQUIRES: mu_ held, on the strand, nothing left to write.
  void AfterResponse() {
    finished_ = false;
    if (!keep_alive_ || gone_ || front_->stopping.load()) {
      beast::error_code ignored;
      Lowest(stream_).shutdown(tcp::socket::shutdown_send, ignored);
      auto self = Self();
      net::post(Lowest(stream_).get_executor(), [self] { self->Close(); });
      return;
    }
    auto self = Self();
    net::post(Lowest(stream_).get_executor(), [self] { self->WaitRequest(); });
  }

  void MarkGone() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      gone_ = true;
    }
    cv_.notify_all();
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    MarkGone();
    Disarm();
    beast::error_code ignored;
    Lowest(stream_).close(ignored);
    front_->Forget(id_);
  }

  const std::shared_ptr<ssl::context> tls_;  // outlives stream_ (declared first)
  HttpFront::Impl* const front_;
  const HttpFrontOptions& opt_;
  const uint64_t id_;
  const std::string client_;
  Stream stream_;
  net::steady_timer timer_;

  // Strand only.
  uint64_t timer_gen_ = 0;
  Phase phase_ = Phase::kIdle;
  bool read_pending_ = false;
  std::atomic<bool> closed_{false};
  beast::flat_buffer buf_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string inflight_;

  // Shared with the worker.
  std::mutex mu_;
  std::condition_variable cv_;
  std::string outbox_;
  size_t buffered_ = 0;  // outbox_ + inflight_
  bool writing_ = false;
  bool finished_ = false;
  bool keep_alive_ = false;
  std::atomic<bool> gone_{false};
  // Plain TCP: the socket workers may send on directly (see Send()); -1 for TLS.
  int direct_fd_ = -1;
};

}  // namespace

std::shared_ptr<ConnectionBase> NewConnection(HttpFront::Impl* front, uint64_t id,
                                              std::string client, tcp::socket socket,
                                              std::shared_ptr<ssl::context> tls) {
  if (tls) {
    ssl::stream<tcp::socket> stream(std::move(socket), *tls);
    return std::make_shared<Connection<ssl::stream<tcp::socket>>>(front, id, std::move(client),
                                                                  std::move(stream), tls);
  }
  return std::make_shared<Connection<tcp::socket>>(front, id, std::move(client), std::move(socket));
}

}  // namespace outpost::api::front
