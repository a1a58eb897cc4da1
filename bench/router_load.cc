// router_load — the two native halves of the router overhead benchmark
// (bench/router_overhead.py drives them):
//
//   router_load central --port P
//       an instant "central": answers every POST with a canned chat
//       completion and every GET with a model list, on keep-alive connections.
//   router_load load --url U --model M [--requests N] [--concurrency C]
//       C client threads, each on its own keep-alive connection, send N chat
//       requests in all and print {"p50_ms","p99_ms","n","errors"} as JSON.
//
// Both are native so that the numbers measure the proxy in between, not a
// Python interpreter competing for the same two cores.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

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

int Load(const std::string& url, const std::string& model, int requests, int concurrency) {
  const std::string body =
      R"({"model":")" + model + R"(","messages":[{"role":"user","content":"hi"}],"max_tokens":1})";
  std::atomic<int> next{0};
  std::atomic<int> errors{0};
  std::vector<std::vector<double>> lat(concurrency);
  std::vector<std::thread> threads;
  for (int t = 0; t < concurrency; ++t) {
    threads.emplace_back([&, t] {
      httplib::Client cli(url);
      cli.set_keep_alive(true);
      cli.set_tcp_nodelay(true);
      cli.set_read_timeout(std::chrono::seconds(30));
      const httplib::Headers headers = {{"Authorization", "Bearer sk-x"}};
      for (int i = 0; i < 5; ++i)
        cli.Post("/v1/chat/completions", headers, body, "application/json");
      while (next.fetch_add(1) < requests) {
        const auto t0 = std::chrono::steady_clock::now();
        auto r = cli.Post("/v1/chat/completions", headers, body, "application/json");
        const auto t1 = std::chrono::steady_clock::now();
        if (!r || r->status != 200) {
          if (errors.fetch_add(1) < 3) {
            std::fprintf(stderr, "router_load: %s\n",
                         r ? (std::to_string(r->status) + " " + r->body).c_str()
                           : httplib::to_string(r.error()).c_str());
          }
          continue;
        }
        lat[t].push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      }
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
