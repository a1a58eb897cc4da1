#include "outpost/router/http1_client.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "outpost/router/proxy.h"
#include "outpost/router/response_head.h"

namespace outpost::router {
namespace {

// Socket I/O deadlines are real time: they bound waits in recv() and connect().
using Clock = std::chrono::steady_clock;

// "http://host[:port][/...]" → host, port. False for anything else.
bool SplitHttpUrl(const std::string& url, std::string* host, std::string* port) {
  constexpr std::string_view kScheme = "http://";
  if (url.rfind(kScheme, 0) != 0) return false;
  std::string_view rest = std::string_view(url).substr(kScheme.size());
  rest = rest.substr(0, rest.find('/'));
  if (rest.empty()) return false;
  if (rest.front() == '[') {  // [v6]:port
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) return false;
    *host = std::string(rest.substr(1, close - 1));
    rest.remove_prefix(close + 1);
    *port = rest.size() > 1 && rest.front() == ':' ? std::string(rest.substr(1)) : "80";
    return true;
  }
  const size_t colon = rest.rfind(':');
  *host = std::string(rest.substr(0, colon));
  *port = colon == std::string_view::npos ? "80" : std::string(rest.substr(colon + 1));
  return !host->empty() && !port->empty();
}

void SetTimeout(int fd, int opt, std::chrono::milliseconds ms) {
  ms = std::max(ms, std::chrono::milliseconds(1));
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  ::setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof tv);
}

// Non-blocking connect bounded by `timeout`; returns a blocking socket with
// TCP_NODELAY, or -1 with *why set.
int Connect(const std::string& host, const std::string& port, std::chrono::milliseconds timeout,
            std::string* why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    *why = "cannot resolve " + host + ": " + ::gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  *why = "connection refused";
  for (addrinfo* ai = res; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0) continue;
    int rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      rc = ::poll(&p, 1, static_cast<int>(timeout.count()));
      if (rc == 0) {
        *why = "connect timed out after " + std::to_string(timeout.count()) + " ms";
        rc = -1;
      } else if (rc > 0) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) *why = std::strerror(err);
        rc = err == 0 ? 0 : -1;
      } else {
        *why = std::strerror(errno);
      }
    } else if (rc != 0) {
      *why = std::strerror(errno);
    }
    if (rc != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(res);
  if (fd < 0) return -1;
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  int yes = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
  return fd;
}

enum class Outcome { kOk, kStale, kFailed };

// One attempt on `fd`. kStale: the connection was already dead (nothing at
// all came back) and the request can be sent again elsewhere.
Outcome Attempt(int fd, const UpstreamConfig& cfg, const std::string& request,
                Clock::time_point deadline, UpstreamReply* reply, ResponseHead* head,
                std::string* why, bool* timeout_shrunk) {
  const auto fbt = std::chrono::milliseconds(cfg.first_byte_timeout_ms);
  auto remaining = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  };
  // SO_SNDTIMEO and SO_RCVTIMEO are the first-byte timeout from Connect() on;
  // only a total deadline closer than that changes the receive timeout (and
  // Http1Post restores it before the socket goes back to the pool).
  for (size_t sent = 0; sent < request.size();) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      *why = std::string("send failed: ") + std::strerror(errno);
      return sent == 0 && (errno == EPIPE || errno == ECONNRESET) ? Outcome::kStale
                                                                  : Outcome::kFailed;
    }
    sent += static_cast<size_t>(n);
  }
  std::string buf;
  char chunk[16384];
  bool got_any = false;
  ChunkedDecoder chunked;
  for (;;) {
    const auto left = remaining();
    if (left.count() <= 0) {
      *why = "exceeded its total timeout";
      return Outcome::kFailed;
    }
    if (left < fbt) {
      SetTimeout(fd, SO_RCVTIMEO, left);
      *timeout_shrunk = true;
    }
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        *why = remaining().count() <= 0 ? "exceeded its total timeout"
               : got_any                ? "went silent for the first-byte timeout (" +
                               std::to_string(cfg.first_byte_timeout_ms) + " ms)"
                         : "sent no response within the first-byte timeout (" +
                               std::to_string(cfg.first_byte_timeout_ms) + " ms)";
        return Outcome::kFailed;
      }
      *why = std::string("connection lost: ") + std::strerror(errno);
      return !got_any && errno == ECONNRESET ? Outcome::kStale : Outcome::kFailed;
    }
    if (n == 0) {  // EOF
      if (!got_any) {
        *why = "closed the connection without a response";
        return Outcome::kStale;
      }
      if (head->status != 0 && head->content_length < 0 && !head->chunked) {
        head->keep_alive = false;  // body delimited by the close
        return Outcome::kOk;
      }
      *why = head->status == 0 ? "closed the connection inside the response head"
                               : "broke off the response body";
      return Outcome::kFailed;
    }
    got_any = true;
    if (head->status == 0) {
      buf.append(chunk, static_cast<size_t>(n));
      size_t end;
      for (;;) {
        end = buf.find("\r\n\r\n");
        if (end == std::string::npos) break;
        if (Status st = ParseResponseHead(std::string_view(buf).substr(0, end + 2), head);
            !st.ok()) {
          *why = "sent a malformed response: " + st.message();
          return Outcome::kFailed;
        }
        if (head->status >= 200) break;
        buf.erase(0, end + 4);  // an interim 1xx response: the real one follows
        *head = ResponseHead();
      }
      if (end == std::string::npos) {
        if (buf.size() > 64 * 1024) {
          *why = "sent a response head over 64 KiB";
          return Outcome::kFailed;
        }
        continue;
      }
      reply->status = head->status;
      reply->content_type = head->content_type;
      const std::string_view first = std::string_view(buf).substr(end + 4);
      if (head->chunked) {
        if (Status st = chunked.Feed(first, &reply->body); !st.ok()) {
          *why = "sent a malformed chunked body: " + st.message();
          return Outcome::kFailed;
        }
      } else {
        reply->body.assign(first);
      }
    } else if (head->chunked) {
      if (Status st = chunked.Feed(std::string_view(chunk, static_cast<size_t>(n)), &reply->body);
          !st.ok()) {
        *why = "sent a malformed chunked body: " + st.message();
        return Outcome::kFailed;
      }
    } else {
      reply->body.append(chunk, static_cast<size_t>(n));
    }
    if (head->chunked && chunked.done()) return Outcome::kOk;
    if (!head->chunked && head->content_length >= 0 &&
        static_cast<int64_t>(reply->body.size()) >= head->content_length) {
      if (static_cast<int64_t>(reply->body.size()) > head->content_length) {
        reply->body.resize(static_cast<size_t>(head->content_length));
        head->keep_alive = false;  // bytes past the body: do not reuse
      }
      return Outcome::kOk;
    }
    if (head->status == 204 || head->status == 304) return Outcome::kOk;  // no body
  }
}

}  // namespace

bool IsPlainHttp(const std::string& base_url) {
  return base_url.rfind("http://", 0) == 0;
}

Status Http1Post(const UpstreamConfig& cfg, SocketPool* pool, const std::string& path,
                 const std::string& body, UpstreamReply* reply) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(cfg.total_timeout_ms);
  const std::string who = "upstream " + cfg.name + " (" + cfg.base_url + ") ";
  std::string host, port;
  if (!SplitHttpUrl(cfg.base_url, &host, &port)) {
    return Status::InvalidArgument(who + "has no http://host:port URL");
  }
  std::string request;
  request.reserve(256 + body.size());
  request += "POST " + cfg.path_prefix + path + " HTTP/1.1\r\nHost: " + host +
             (port == "80" ? "" : ":" + port) +
             "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream"
             "\r\nAccept-Encoding: identity\r\nUser-Agent: outpost\r\n";
  if (!cfg.api_key.empty()) request += "Authorization: Bearer " + cfg.api_key + "\r\n";
  request += std::string(kForwardedHeader) +
             ": 1\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  request += body;

  const std::string key = cfg.name;  // sockets carry this upstream's timeouts
  *reply = UpstreamReply();
  std::string why;
  for (int attempt = 0; attempt < 2; ++attempt) {
    int fd = attempt == 0 ? pool->TakeIdle(key) : -1;
    const bool reused = fd >= 0;
    if (fd < 0) {
      fd = Connect(host, port, std::chrono::milliseconds(cfg.connect_timeout_ms), &why);
      if (fd < 0) return Status::Unavailable(who + "failed: " + why);
      pool->CountOpened();
      SetTimeout(fd, SO_SNDTIMEO, std::chrono::milliseconds(cfg.first_byte_timeout_ms));
      SetTimeout(fd, SO_RCVTIMEO, std::chrono::milliseconds(cfg.first_byte_timeout_ms));
    }
    ResponseHead head;
    bool shrunk = false;
    const Outcome o = Attempt(fd, cfg, request, deadline, reply, &head, &why, &shrunk);
    if (o == Outcome::kOk) {
      if (head.keep_alive) {
        if (shrunk)
          SetTimeout(fd, SO_RCVTIMEO, std::chrono::milliseconds(cfg.first_byte_timeout_ms));
        pool->PutIdle(key, fd);
      } else {
        ::close(fd);
      }
      return Status::Ok();
    }
    ::close(fd);
    if (o == Outcome::kStale && reused) {
      *reply = UpstreamReply();
      continue;  // the pooled connection was dead: once more on a new one
    }
    break;
  }
  return Status::Unavailable(who + why);
}

}  // namespace outpost::router
