// HttpFront — the event-driven HTTP/1.1 server under the API: sockets,
// parsing, keep-alive, TLS, limits. Knows nothing of OpenAI or models.
//
// Threads: `io_threads` Asio event loops hold every connection — idle,
// half-sent, streaming — without a thread each; the parser is Boost.Beast's.
// A complete request goes to a pool of `worker_threads`, which run the
// handler (it may block: waiting on the scheduler, a relay) and, for a
// stream, its chunk provider. Workers never touch a socket: they hand bytes
// to the connection's I/O strand and wait only when more than
// `max_buffered_bytes` are unsent (back-pressure), up to `write_timeout_ms`.
//
// Limits (each with a config knob, see docs/operations.md): a whole request
// head within `header_timeout_ms` of its first byte (slowloris); a request
// body within `body_timeout_ms`; an idle keep-alive connection closed after
// `idle_timeout_ms`; heads over `max_header_bytes` get 431, bodies over
// `max_body_bytes` 413; connections in total and per client address are
// bounded by a ConnectionTable, which sheds idle connections before busy
// ones. A client that closes its side is noticed while its request runs
// (HttpRequest::client_gone), so the work behind it stops.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "outpost/api/http_message.h"
#include "outpost/util/status.h"

namespace outpost::api {

struct HttpFrontOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port
  int io_threads = 2;
  int worker_threads = 64;  // requests handled at once (streams included)
  size_t max_body_bytes = 4 << 20;
  size_t max_header_bytes = 16 << 10;
  int64_t header_timeout_ms = 10'000;
  int64_t body_timeout_ms = 60'000;
  int64_t idle_timeout_ms = 600'000;
  int64_t write_timeout_ms = 60'000;  // a client that takes nothing for this long is cut off
  size_t max_connections = 8192;
  size_t max_connections_per_client = 1024;
  size_t max_buffered_bytes = 256 << 10;  // per connection, unsent
  // Fills the body of an error the front answers itself (400, 413, 431, 500,
  // 503); by default plain text.
  std::function<void(int status, const std::string& message, HttpResponse& res)> error_body =
      [](int, const std::string& message, HttpResponse& res) {
        res.set_content(message + "\n", "text/plain");
      };
  // HTTPS when both are set (PEM files).
  std::string tls_cert_file;
  std::string tls_key_file;
};

// Counters the front keeps; read any time.
struct HttpFrontCounters {
  std::atomic<int64_t> accepted{0};
  std::atomic<int64_t> open{0};
  std::atomic<int64_t> shed{0};     // idle connections closed to make room
  std::atomic<int64_t> refused{0};  // new connections refused: every one busy
  std::atomic<int64_t> header_timeouts{0};
  std::atomic<int64_t> body_timeouts{0};
  std::atomic<int64_t> idle_timeouts{0};
  std::atomic<int64_t> write_timeouts{0};
  std::atomic<int64_t> bad_requests{0};    // unparseable, too large
  std::atomic<int64_t> no_descriptors{0};  // accepts that met EMFILE/ENFILE
};

class HttpFront {
 public:
  using Handler = std::function<void(const HttpRequest&, HttpResponse&)>;
  // `handler` runs on a worker thread for every complete request; it must
  // not throw (the front answers 500 if it does).
  HttpFront(HttpFrontOptions options, Handler handler);
  ~HttpFront();
  HttpFront(const HttpFront&) = delete;
  HttpFront& operator=(const HttpFront&) = delete;

  // Binds and listens. Errors: Unavailable naming host:port; InvalidArgument
  // naming tls_cert_file or tls_key_file.
  Status Bind();
  // HTTPS: loads the pair again for connections accepted from now on; on
  // error the old pair stays.
  Status ReloadTls();
  // Serves until Stop(). REQUIRES: Bind() succeeded.
  void Run();
  // Stops accepting, closes every connection, lets Run() return. Any thread.
  void Stop();
  // Drain: closes the listening socket (new connections are refused, so a
  // balancer moves on) and keeps serving the connections already open.
  void StopAccepting();
  // Requests handed to a worker and not finished yet (streams included).
  int64_t InFlight() const;
  // True when an event loop runs a posted task within `timeout_ms` (the
  // systemd watchdog's liveness check). Any thread but an I/O thread.
  bool Responsive(int64_t timeout_ms);

  int port() const;
  const HttpFrontCounters& counters() const;

  struct Impl;  // opaque: http_front.cc (its connections reach it)

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace outpost::api
