// HttpFront's listener: bind, accept and admit connections (ConnectionTable),
// TLS contexts, the event loops and the worker pool, stop. Each connection's
// own state machine is in http_connection.cc.
#include "outpost/api/http_front.h"

#include <future>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <spdlog/spdlog.h>
#include <boost/beast/core.hpp>

#include "outpost/api/http_front_impl.h"

namespace outpost::api {

using front::Head;
using front::NowMs;
namespace net = front::net;
namespace ssl = front::ssl;
namespace beast = boost::beast;
using tcp = front::tcp;

namespace {

constexpr int kListenBacklog = 1024;

}  // namespace

StatusOr<std::shared_ptr<ssl::context>> HttpFront::Impl::LoadTls() const {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                   ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  beast::error_code ec;
  ctx->use_certificate_chain_file(options.tls_cert_file, ec);
  if (ec) {
    return Status::InvalidArgument(
        "tls_cert_file '" + options.tls_cert_file + "' is not a readable PEM certificate",
        "tls_cert_file");
  }
  ctx->use_private_key_file(options.tls_key_file, ssl::context::pem, ec);
  if (ec || SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
    return Status::InvalidArgument("tls_key_file '" + options.tls_key_file +
                                       "' is not a readable PEM private key for that certificate",
                                   "tls_key_file");
  }
  return ctx;
}

// Waiting connections closed at most per EMFILE retry, so that a flood
// cannot hold the I/O thread.
constexpr int kMaxShedPerRetry = 256;

void HttpFront::Impl::Accept() {
  acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
    if (stopping.load() || !acceptor.is_open()) return;
    if (!ec) {
      OnAccept(std::move(socket));
    } else if (ec == net::error::no_descriptors) {
      // Out of file descriptors: shed every waiting connection with the
      // reserve descriptor (as libuv does), then accept again in 50 ms — on
      // a timer, never by sleeping on the I/O thread that serves every open
      // connection. One shed per retry would leave a backlog of waiting
      // clients hanging 50 ms each in turn (seconds, measured under load).
      const int64_t n = counters.no_descriptors.fetch_add(1) + 1;
      if ((n & (n - 1)) == 0) {
        spdlog::warn(
            "accept: out of file descriptors ({} connections open, {} time(s) so far); "
            "new connections are closed until some end",
            counters.open.load(), n);
      }
      // Another thread may have taken the slot the last time: get it back.
      if (reserve_fd < 0) reserve_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (reserve_fd >= 0) {
        ::close(reserve_fd);
        for (int i = 0; i < kMaxShedPerRetry; ++i) {  // the acceptor is non-blocking
          const int fd = ::accept4(acceptor.native_handle(), nullptr, nullptr, SOCK_CLOEXEC);
          if (fd < 0) break;
          ::close(fd);
        }
        reserve_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      }
      accept_retry.expires_after(std::chrono::milliseconds(50));
      accept_retry.async_wait([this](beast::error_code wait_ec) {
        if (!wait_ec && !stopping.load() && acceptor.is_open()) Accept();
      });
      return;
    }
    Accept();
  });
}

void HttpFront::Impl::OnAccept(tcp::socket socket) {
  beast::error_code ec;
  const auto remote = socket.remote_endpoint(ec);
  if (ec) return;
  // Small writes (SSE chunks, heads) go out at once, not after Nagle's wait.
  socket.set_option(tcp::no_delay(true), ec);
  const std::string client = remote.address().to_string();
  counters.accepted.fetch_add(1);
  const uint64_t id = next_id.fetch_add(1);
  const ConnectionTable::Admission a = table.Admit(id, client, NowMs());
  if (a.shed != 0) {
    counters.shed.fetch_add(1);
    std::shared_ptr<front::ConnectionBase> victim;
    {
      std::lock_guard<std::mutex> lock(conns_mu);
      if (auto it = conns.find(a.shed); it != conns.end()) victim = it->second.lock();
    }
    if (victim) victim->PostClose();
  }
  std::shared_ptr<ssl::context> ctx;
  {
    std::lock_guard<std::mutex> lock(tls_mu);
    ctx = tls;
  }
  if (!a.admitted) {
    // Logged at powers of two: a flood must not flood the log too.
    const int64_t n = counters.refused.fetch_add(1) + 1;
    if ((n & (n - 1)) == 0) {
      spdlog::warn(
          "refused a connection from {}: {} reached and every connection is busy ({} "
          "refused so far)",
          client, a.limit, n);
    }
    if (!ctx) {
      // Small enough for the socket's buffer: one non-blocking send.
      HttpResponse res;
      res.status = 503;
      options.error_body(503, "too many connections (" + std::string(a.limit) + "); retry later",
                         res);
      res.set_header("Retry-After", "1");
      const std::string busy = Head(503, res, false, false, res.body.size()) + res.body;
      ::send(socket.native_handle(), busy.data(), busy.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    }
    socket.close(ec);
    return;
  }
  auto conn = front::NewConnection(this, id, client, std::move(socket), std::move(ctx));
  {
    std::lock_guard<std::mutex> lock(conns_mu);
    conns[id] = conn;
    counters.open.fetch_add(1);
  }
  conn->PostStart();
}

HttpFront::HttpFront(HttpFrontOptions options, Handler handler)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler))) {}

HttpFront::~HttpFront() {
  Stop();
  if (impl_->reserve_fd >= 0) ::close(impl_->reserve_fd);
}

Status HttpFront::ReloadTls() {
  if (impl_->options.tls_cert_file.empty()) return Status::Ok();
  auto ctx = impl_->LoadTls();
  if (!ctx.ok()) return ctx.status();
  std::lock_guard<std::mutex> lock(impl_->tls_mu);
  impl_->tls = std::move(ctx).value();
  return Status::Ok();
}

Status HttpFront::Bind() {
  const HttpFrontOptions& o = impl_->options;
  if (!o.tls_cert_file.empty() || !o.tls_key_file.empty()) {
    if (Status st = ReloadTls(); !st.ok()) return st;
  }
  // Idle connections cost a descriptor each: take all the process may have.
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < o.max_connections + 256) {
    spdlog::warn(
        "the descriptor limit ({}) is below max_connections ({}) + 256: raise LimitNOFILE / "
        "ulimit -n, or lower max_connections",
        rl.rlim_cur, o.max_connections);
  }
  const std::string where = o.host + ":" + std::to_string(o.port);
  beast::error_code ec;
  const auto address = net::ip::make_address(o.host == "localhost" ? "127.0.0.1" : o.host, ec);
  if (ec) return Status::Unavailable("cannot listen on " + where + " (not an IP address)");
  const tcp::endpoint endpoint(address, static_cast<unsigned short>(o.port));
  auto& a = impl_->acceptor;
  a.open(endpoint.protocol(), ec);
  if (!ec) a.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(endpoint, ec);
  if (!ec) a.listen(kListenBacklog, ec);
  if (ec) {
    return Status::Unavailable("cannot listen on " + where +
                               " (address in use or not available: " + ec.message() + ")");
  }
  a.native_non_blocking(true, ec);  // the EMFILE shedding's accept4 must not block
  impl_->port = a.local_endpoint().port();
  if (impl_->reserve_fd < 0) impl_->reserve_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  return Status::Ok();
}

void HttpFront::Run() {
  impl_->workers.Start(std::max(1, impl_->options.worker_threads));
  net::post(impl_->accept_strand, [impl = impl_.get()] { impl->Accept(); });
  std::vector<std::thread> io;
  for (int i = 1; i < impl_->options.io_threads; ++i) {
    io.emplace_back([this] { impl_->ioc.run(); });
  }
  impl_->ioc.run();
  for (auto& t : io) t.join();
  impl_->workers.Shutdown();
}

void HttpFront::StopAccepting() {
  net::post(impl_->accept_strand, [impl = impl_.get()] {
    beast::error_code ignored;
    impl->accept_retry.cancel();
    impl->acceptor.close(ignored);
  });
}

int64_t HttpFront::InFlight() const {
  return impl_->in_flight.load();
}

bool HttpFront::Responsive(int64_t timeout_ms) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> ran = done->get_future();
  net::post(impl_->ioc, [done] { done->set_value(); });
  return ran.wait_for(std::chrono::milliseconds(timeout_ms)) == std::future_status::ready;
}

void HttpFront::Stop() {
  if (impl_->stopping.exchange(true)) return;
  net::post(impl_->accept_strand, [impl = impl_.get()] {
    beast::error_code ignored;
    impl->accept_retry.cancel();
    impl->acceptor.close(ignored);
    std::vector<std::shared_ptr<front::ConnectionBase>> all;
    {
      std::lock_guard<std::mutex> lock(impl->conns_mu);
      for (auto& [id, weak] : impl->conns) {
        if (auto c = weak.lock()) all.push_back(std::move(c));
      }
    }
    for (auto& c : all) c->PostClose();
  });
}

int HttpFront::port() const {
  return impl_->port;
}
const HttpFrontCounters& HttpFront::counters() const {
  return impl_->counters;
}

}  // namespace outpost::api