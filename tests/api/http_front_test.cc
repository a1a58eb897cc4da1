// HttpFront over real loopback sockets with handlers written here: limits,
// timeouts, shedding, back-pressure and hang-up detection, without a model.
#include "outpost/api/http_front.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "outpost/api/connection_table.h"

namespace outpost::api {
namespace {

using namespace std::chrono_literals;

int Connect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return fd;
}

void SendAll(int fd, const std::string& s) {
  ASSERT_EQ(::send(fd, s.data(), s.size(), MSG_NOSIGNAL), static_cast<ssize_t>(s.size()));
}

// Reads until `until` appears, the peer closes, or the timeout; returns what came.
std::string Read(int fd, std::chrono::milliseconds timeout, const std::string& until = "") {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (!until.empty() && out.find(until) != std::string::npos) break;
  }
  return out;
}

// True when the server has closed the connection within the timeout.
bool ClosedByPeer(int fd, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN)) return true;
  }
  return false;
}

const char kGet[] = "GET /x HTTP/1.1\r\nHost: t\r\n\r\n";

class Front {
 public:
  Front(HttpFrontOptions o, HttpFront::Handler h) : front_(Opts(std::move(o)), std::move(h)) {
    EXPECT_TRUE(front_.Bind().ok());
    thread_ = std::thread([this] { front_.Run(); });
  }
  ~Front() {
    front_.Stop();
    thread_.join();
  }
  int port() const { return front_.port(); }
  const HttpFrontCounters& counters() const { return front_.counters(); }

 private:
  static HttpFrontOptions Opts(HttpFrontOptions o) {
    o.port = 0;
    o.worker_threads = 8;
    return o;
  }
  HttpFront front_;
  std::thread thread_;
};

void Hello(const HttpRequest& req, HttpResponse& res) {
  res.set_content("hello " + req.path, "text/plain");
}

TEST(HttpFront, KeepAliveServesSeveralRequestsOnOneConnection) {
  Front f({}, Hello);
  const int fd = Connect(f.port());
  for (int i = 0; i < 3; ++i) {
    SendAll(fd, kGet);
    const std::string r = Read(fd, 2s, "hello /x");
    EXPECT_NE(r.find("HTTP/1.1 200 OK"), std::string::npos) << r;
    EXPECT_NE(r.find("Connection: keep-alive"), std::string::npos) << r;
  }
  ::close(fd);
  EXPECT_EQ(f.counters().accepted.load(), 1);
}

TEST(HttpFront, HeaderTimeoutClosesAStalledHead) {
  HttpFrontOptions o;
  o.header_timeout_ms = 200;
  Front f(o, Hello);
  const int fd = Connect(f.port());
  SendAll(fd, "GET /x HTTP/1.1\r\nHo");
  EXPECT_TRUE(ClosedByPeer(fd, 2s));
  EXPECT_EQ(f.counters().header_timeouts.load(), 1);
  ::close(fd);
}

TEST(HttpFront, IdleTimeoutClosesAQuietConnectionButNotBefore) {
  HttpFrontOptions o;
  o.idle_timeout_ms = 300;
  Front f(o, Hello);
  const int fd = Connect(f.port());
  EXPECT_FALSE(ClosedByPeer(fd, 150ms));
  EXPECT_TRUE(ClosedByPeer(fd, 2s));
  EXPECT_EQ(f.counters().idle_timeouts.load(), 1);
  ::close(fd);
}

TEST(HttpFront, LimitsAnswerWithTheirStatusAndClose) {
  HttpFrontOptions o;
  o.max_header_bytes = 1024;
  o.max_body_bytes = 10;
  Front f(o, Hello);
  struct Case {
    std::string wire;
    std::string status;
  } cases[] = {
      {"GET /x HTTP/1.1\r\nX-A: " + std::string(4000, 'a') + "\r\n\r\n", "431"},
      {"POST /x HTTP/1.1\r\nContent-Length: 11\r\n\r\n01234567890", "413"},
      {"NOT HTTP AT ALL\r\n\r\n", "400"},
      {"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nq\r\n", "400"},
  };
  for (const auto& c : cases) {
    const int fd = Connect(f.port());
    SendAll(fd, c.wire);
    const std::string r = Read(fd, 2s);
    EXPECT_EQ(r.rfind("HTTP/1.1 " + c.status, 0), 0u) << r;
    EXPECT_NE(r.find("Connection: close"), std::string::npos) << r;
    ::close(fd);
  }
  EXPECT_EQ(f.counters().bad_requests.load(), 4);
}

TEST(HttpFront, PerClientLimitShedsTheOldestIdleConnection) {
  HttpFrontOptions o;
  o.max_connections_per_client = 3;
  Front f(o, Hello);
  int fds[3];
  for (int& fd : fds) {
    fd = Connect(f.port());
    std::this_thread::sleep_for(20ms);
  }
  const int fourth = Connect(f.port());
  SendAll(fourth, kGet);
  EXPECT_NE(Read(fourth, 2s, "hello").find("200 OK"), std::string::npos);
  EXPECT_TRUE(ClosedByPeer(fds[0], 1s));
  EXPECT_FALSE(ClosedByPeer(fds[1], 100ms));
  EXPECT_EQ(f.counters().shed.load(), 1);
  for (int fd : fds) ::close(fd);
  ::close(fourth);
}

TEST(HttpFront, BusyConnectionsAreNeverShedAndANewOneIsRefused) {
  HttpFrontOptions o;
  o.max_connections_per_client = 2;
  std::atomic<bool> release{false};
  Front f(o, [&](const HttpRequest&, HttpResponse& res) {
    while (!release) std::this_thread::sleep_for(5ms);
    res.set_content("done", "text/plain");
  });
  const int a = Connect(f.port()), b = Connect(f.port());
  SendAll(a, kGet);
  SendAll(b, kGet);
  std::this_thread::sleep_for(100ms);  // both requests running
  const int c = Connect(f.port());
  const std::string r = Read(c, 2s);
  EXPECT_EQ(r.rfind("HTTP/1.1 503", 0), 0u) << r;
  EXPECT_NE(r.find("Retry-After: 1"), std::string::npos) << r;
  release = true;
  EXPECT_NE(Read(a, 2s, "done").find("200 OK"), std::string::npos);
  EXPECT_NE(Read(b, 2s, "done").find("200 OK"), std::string::npos);
  EXPECT_EQ(f.counters().refused.load(), 1);
  ::close(a);
  ::close(b);
  ::close(c);
}

TEST(HttpFront, AClientThatHangsUpIsSeenWhileItsRequestRuns) {
  std::atomic<bool> saw_gone{false};
  Front f({}, [&](const HttpRequest& req, HttpResponse& res) {
    const auto deadline = std::chrono::steady_clock::now() + 3s;
    while (!req.client_gone() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(5ms);
    }
    saw_gone = req.client_gone();
    res.set_content("late", "text/plain");
  });
  const int fd = Connect(f.port());
  SendAll(fd, kGet);
  std::this_thread::sleep_for(100ms);
  const auto t0 = std::chrono::steady_clock::now();
  ::close(fd);
  while (!saw_gone && std::chrono::steady_clock::now() - t0 < 3s) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_TRUE(saw_gone);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 500ms);
}

TEST(HttpFront, StreamsAreChunkedAndEnded) {
  Front f({}, [](const HttpRequest&, HttpResponse& res) {
    auto n = std::make_shared<int>(0);
    res.set_stream(
        "text/event-stream",
        [n](ChunkWriter& out) {
          out.Write("data: " + std::to_string((*n)++) + "\n\n");
          return *n < 3;
        },
        nullptr);
  });
  const int fd = Connect(f.port());
  SendAll(fd, kGet);
  const std::string r = Read(fd, 2s, "0\r\n\r\n");
  EXPECT_NE(r.find("Transfer-Encoding: chunked"), std::string::npos) << r;
  EXPECT_NE(r.find("9\r\ndata: 2\n\n\r\n0\r\n\r\n"), std::string::npos) << r;
  ::close(fd);
}

TEST(HttpFront, AReaderThatStallsIsCutOffAndHoldsBoundedMemory) {
  HttpFrontOptions o;
  o.write_timeout_ms = 300;
  o.max_buffered_bytes = 64 << 10;
  std::atomic<int64_t> produced{0};
  std::atomic<int> ended{-1};
  Front f(o, [&](const HttpRequest&, HttpResponse& res) {
    res.set_stream(
        "application/octet-stream",
        [&](ChunkWriter& out) {
          if (!out.Write(std::string(16 << 10, 'x'))) return false;
          produced += 16 << 10;
          return produced < (1LL << 30);  // 1 GiB unless cut off
        },
        [&](bool complete) { ended = complete ? 1 : 0; });
  });
  const int fd = Connect(f.port());
  const int small = 4096;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  SendAll(fd, kGet);  // and never read
  const auto t0 = std::chrono::steady_clock::now();
  while (ended < 0 && std::chrono::steady_clock::now() - t0 < 10s) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(ended.load(), 0);  // cut off, not complete
  EXPECT_EQ(f.counters().write_timeouts.load(), 1);
  // What the producer got out: the kernel's socket buffers plus the front's
  // limit, not the gigabyte.
  EXPECT_LT(produced.load(), 32LL << 20) << produced.load();
  ::close(fd);
}

TEST(ConnectionTable, ShedsIdleBeforeActiveAndOldestFirst) {
  ConnectionTable t({/*max_total=*/4, /*max_per_client=*/2});
  EXPECT_TRUE(t.Admit(1, "a", 0).admitted);
  EXPECT_TRUE(t.Admit(2, "a", 10).admitted);
  t.SetPhase(1, ConnectionTable::Phase::kActive, 20);
  // Client a is at its limit: 2 is idle, 1 is busy → 2 goes.
  auto x = t.Admit(3, "a", 30);
  EXPECT_TRUE(x.admitted);
  EXPECT_EQ(x.shed, 2u);
  EXPECT_STREQ(x.limit, "max_connections_per_client");
  // Both of a's are busy now → refused.
  t.SetPhase(3, ConnectionTable::Phase::kActive, 40);
  auto y = t.Admit(4, "a", 50);
  EXPECT_FALSE(y.admitted);
  EXPECT_EQ(y.shed, 0u);
  // Other clients fill the total; the oldest idle anywhere goes.
  EXPECT_TRUE(t.Admit(5, "b", 60).admitted);
  EXPECT_TRUE(t.Admit(6, "c", 70).admitted);
  auto z = t.Admit(7, "d", 80);
  EXPECT_TRUE(z.admitted);
  EXPECT_EQ(z.shed, 5u);
  EXPECT_STREQ(z.limit, "max_connections");
  EXPECT_EQ(t.size(), 4u);
  EXPECT_EQ(t.active(), 2u);
  // A shed connection's own Remove() later changes nothing.
  t.Remove(5);
  EXPECT_EQ(t.size(), 4u);
  t.Remove(1);
  EXPECT_EQ(t.from("a"), 1u);
}

TEST(ConnectionTable, AConnectionReturningToIdleIsShedLast) {
  ConnectionTable t({/*max_total=*/2, /*max_per_client=*/10});
  EXPECT_TRUE(t.Admit(1, "a", 0).admitted);
  EXPECT_TRUE(t.Admit(2, "a", 10).admitted);
  t.SetPhase(1, ConnectionTable::Phase::kActive, 20);
  t.SetPhase(1, ConnectionTable::Phase::kIdle, 30);  // served one, quiet since 30
  EXPECT_EQ(t.Admit(3, "a", 40).shed, 2u);
}

}  // namespace
}  // namespace outpost::api
