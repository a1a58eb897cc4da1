// router_load — the two native halves of the router overhead benchmark
// (bench/router_overhead.py drives them):
//
//   router_load central --port P
//       an instant "central": answers every POST with a canned chat
//       completion and every GET with a model list, on keep-alive connections.
//   router_load load --url U --model M [--requests N] [--concurrency C]
//       C client threads, each on its own keep-alive connection, send N chat
//       requests in all and print {"p50_ms","p99_ms","n","errors"} as JSON.
//       wrk-style: each request is one send() of a prebuilt request, the
//       response is read to its end with the router's own head and chunked
//       parsers; no Accept-Encoding, so nobody compresses.
//
// Both are native and lean so that the numbers measure the proxy in between,
// not a load generator or interpreter competing for the same two cores.
#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "outpost/router/response_head.h"

namespace {

constexpr const char* kAnswer =
    R"({"id":"chatcmpl-x","object":"chat.completion","created":0,"model":"central-model",)"
    R"("choices":[{"index":0,"message":{"role":"assistant","content":"ok"},)"
    R"("finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}})";

const char* Arg(int argc, char** argv, const char* name, const char* def) {
  for (int i = 2; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  }
  return def;
}

int Central(int port) {
  httplib::Server srv;
  srv.new_task_queue = [] { return new httplib::ThreadPool(64); };
  srv.set_tcp_nodelay(true);
  srv.set_keep_alive_max_count(100000);
  srv.Get(".*", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"ok","object":"list","data":[{"id":"central-model"}]})",
                    "application/json");
  });
  srv.Post(".*", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(kAnswer, "application/json");
  });
  if (!srv.listen("127.0.0.1", port)) {
    std::fprintf(stderr, "router_load central: cannot listen on port %d\n", port);
    return 1;
  }
  return 0;
}

// Connects to http://host:port with TCP_NODELAY; -1 on failure.
int Dial(const std::string& url) {
  const std::string hp = url.substr(url.find("://") + 3);
  const std::string host = hp.substr(0, hp.rfind(':'));
  const std::string port = hp.substr(hp.rfind(':') + 1);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0) return -1;
  int fd = ::socket(res->ai_family, res->ai_socktype, res->ai_protocol);
  if (fd >= 0 && ::connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(res);
  if (fd >= 0) {
    int yes = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
  }
  return fd;
}

// One request on a kept-alive socket, wrk-style: the whole request in one
// send, the response read to its end (Content-Length or chunked). Returns the
// status, or 0 when the connection failed (*fd is then closed and reset).
int Exchange(int* fd, const std::string& request, std::string* body) {
  if (::send(*fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    ::close(*fd);
    *fd = -1;
    return 0;
  }
  std::string buf;
  char chunk[16384];
  outpost::router::ResponseHead head;
  outpost::router::ChunkedDecoder chunked;
  body->clear();
  for (;;) {
    const ssize_t n = ::recv(*fd, chunk, sizeof chunk, 0);
    if (n <= 0) {
      ::close(*fd);
      *fd = -1;
      return 0;
    }
    if (head.status == 0) {
      buf.append(chunk, static_cast<size_t>(n));
      const size_t end = buf.find("\r\n\r\n");
      if (end == std::string::npos) continue;
      if (!outpost::router::ParseResponseHead(std::string_view(buf).substr(0, end + 2), &head)
               .ok()) {
        return 0;
      }
      const std::string_view rest = std::string_view(buf).substr(end + 4);
      if (head.chunked) {
        (void)chunked.Feed(rest, body);
      } else {
        body->assign(rest);
      }
    } else if (head.chunked) {
      (void)chunked.Feed(std::string_view(chunk, static_cast<size_t>(n)), body);
    } else {
      body->append(chunk, static_cast<size_t>(n));
    }
    if (head.chunked ? chunked.done() : static_cast<int64_t>(body->size()) >= head.content_length) {
      if (!head.keep_alive) {
        ::close(*fd);
        *fd = -1;
      }
      return head.status;
    }
  }
}

int Load(const std::string& url, const std::string& model, int requests, int concurrency) {
  const std::string body =
      R"({"model":")" + model + R"(","messages":[{"role":"user","content":"hi"}],"max_tokens":1})";
  const std::string host = url.substr(url.find("://") + 3);
  const std::string request = "POST /v1/chat/completions HTTP/1.1\r\nHost: " + host +
                              "\r\nContent-Type: application/json\r\n"
                              "Authorization: Bearer sk-x\r\nContent-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n" + body;
  std::atomic<int> next{0};
  std::atomic<int> errors{0};
  std::vector<std::vector<double>> lat(concurrency);
  std::vector<std::thread> threads;
  for (int t = 0; t < concurrency; ++t) {
    threads.emplace_back([&, t] {
      int fd = Dial(url);
      std::string reply;
      auto one = [&]() -> int {
        if (fd < 0) fd = Dial(url);
        return fd < 0 ? 0 : Exchange(&fd, request, &reply);
      };
      for (int i = 0; i < 5; ++i) one();
      while (next.fetch_add(1) < requests) {
        const auto t0 = std::chrono::steady_clock::now();
        const int status = one();
        const auto t1 = std::chrono::steady_clock::now();
        if (status != 200) {
          if (errors.fetch_add(1) < 3) {
            std::fprintf(stderr, "router_load: status %d %s\n", status,
                         reply.substr(0, 300).c_str());
          }
          continue;
        }
        lat[t].push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      }
      if (fd >= 0) ::close(fd);
    });
  }
  for (auto& th : threads) th.join();
  std::vector<double> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  if (all.empty()) {
    std::printf("{\"n\":0,\"errors\":%d}\n", errors.load());
    return 1;
  }
  auto pct = [&](double p) {
    const size_t i = std::min(all.size() - 1, static_cast<size_t>(p * (all.size() - 1) + 0.5));
    return all[i];
  };
  std::printf("{\"n\":%zu,\"errors\":%d,\"p50_ms\":%.4f,\"p99_ms\":%.4f}\n", all.size(),
              errors.load(), pct(0.50), pct(0.99));
  return errors.load() == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "central") return Central(std::atoi(Arg(argc, argv, "--port", "0")));
  if (mode == "load") {
    return Load(Arg(argc, argv, "--url", "http://127.0.0.1:8080"),
                Arg(argc, argv, "--model", "large"),
                std::atoi(Arg(argc, argv, "--requests", "400")),
                std::atoi(Arg(argc, argv, "--concurrency", "8")));
  }
  std::fprintf(stderr,
               "usage: router_load central --port P\n"
               "       router_load load --url U --model M [--requests N] [--concurrency C]\n");
  return 2;
}
