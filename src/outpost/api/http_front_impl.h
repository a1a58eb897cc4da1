// The inside of HttpFront, shared by its two files: http_front.cc (the
// listener: bind, accept, admission, TLS contexts, run, stop) and
// http_connection.cc (one connection's state machine). Not for other modules.
#pragma once

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "outpost/api/connection_table.h"
#include "outpost/api/http_front.h"

namespace outpost::api::front {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = net::ip::tcp;

// Milliseconds on the steady clock (the connection table's time).
int64_t NowMs();

// A response head, serialised here (the body framing is the front's too: a
// Content-Length body, or chunks).
std::string Head(int status, const HttpResponse& res, bool keep_alive, bool chunked,
                 size_t content_length);

// One chunk of a chunked body.
std::string Chunk(const std::string& data);

// A fixed pool of threads running posted tasks in order.
class WorkerPool {
 public:
  void Start(int n) {
    for (int i = 0; i < n; ++i) threads_.emplace_back([this] { Loop(); });
  }
  void Post(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      tasks_.push_back(std::move(task));
    }
    cv_.notify_one();
  }
  void Shutdown() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void Loop() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return done_ || !tasks_.empty(); });
        if (tasks_.empty()) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool done_ = false;
  std::vector<std::thread> threads_;
};

// One client connection (http_connection.cc); the front holds it weakly.
class ConnectionBase : public std::enable_shared_from_this<ConnectionBase> {
 public:
  virtual ~ConnectionBase() = default;
  // Posts the start (TLS handshake, then the first request) to the
  // connection's strand.
  virtual void PostStart() = 0;
  // Posts a close to the connection's strand (any thread).
  virtual void PostClose() = 0;
};

// A connection for an accepted socket: plain when `tls` is null.
std::shared_ptr<ConnectionBase> NewConnection(HttpFront::Impl* front, uint64_t id,
                                              std::string client, tcp::socket socket,
                                              std::shared_ptr<ssl::context> tls);

}  // namespace outpost::api::front

namespace outpost::api {

struct HttpFront::Impl {
  using tcp = front::tcp;
  Impl(HttpFrontOptions o, Handler h)
      : options(std::move(o)),
        handler(std::move(h)),
        ioc(std::max(1, options.io_threads)),
        accept_strand(front::net::make_strand(ioc)),
        acceptor(accept_strand),
        accept_retry(accept_strand),
        table({options.max_connections, options.max_connections_per_client}) {}

  StatusOr<std::shared_ptr<front::ssl::context>> LoadTls() const;
  void Accept();
  void OnAccept(tcp::socket socket);
  void Forget(uint64_t id) {
    table.Remove(id);
    std::lock_guard<std::mutex> lock(conns_mu);
    if (conns.erase(id) > 0) counters.open.fetch_sub(1);
  }

  const HttpFrontOptions options;
  const Handler handler;
  front::net::io_context ioc;
  // The acceptor and its retry timer live on one strand: their handlers, and
  // StopAccepting()/Stop() closing them, never run at once on two I/O
  // threads (an acceptor is not thread-safe; UBSan caught a close racing a
  // re-armed accept at shutdown).
  front::net::strand<front::net::io_context::executor_type> accept_strand;
  tcp::acceptor acceptor;
  // Out of file descriptors: accepting resumes on this timer, so the I/O
  // thread keeps serving the open connections meanwhile.
  front::net::steady_timer accept_retry;
  // One descriptor held in reserve (/dev/null): given back when accept()
  // meets EMFILE to take the waiting connection and close it at once — the
  // client sees the connection end instead of hanging in the backlog.
  int reserve_fd = -1;
  ConnectionTable table;
  HttpFrontCounters counters;
  front::WorkerPool workers;
  std::atomic<int64_t> in_flight{0};  // requests posted to workers, not finished
  std::atomic<bool> stopping{false};
  std::atomic<uint64_t> next_id{1};
  int port = 0;

  std::mutex tls_mu;
  std::shared_ptr<front::ssl::context> tls;  // null: plain HTTP

  std::mutex conns_mu;
  std::map<uint64_t, std::weak_ptr<front::ConnectionBase>> conns;
};

}  // namespace outpost::api
