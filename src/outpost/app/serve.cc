#include "outpost/app/serve.h"

#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "outpost/api/http_server.h"
#include "outpost/engine/context.h"
#include "outpost/engine/model.h"
#include "outpost/models/model_runtime.h"
#include "outpost/models/serving_set.h"
#include "outpost/router/dispatcher_impl.h"
#include "outpost/router/router.h"
#include "outpost/scheduler/capacity.h"
#include "outpost/scheduler/scheduler.h"
#include "outpost/telemetry/stat_registry.h"
#include "outpost/util/units.h"
#include "outpost/version.h"

namespace outpost::app {

int RunServe(ServeConfig cfg) {
  if (cfg.model.empty()) cfg.model = DefaultModelPath();
  engine::InstallLlamaLogger(cfg.log_level == "debug" || cfg.log_level == "trace");

  // Signals are taken by sigwait on this thread; every other thread blocks them.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGHUP);  // reload the TLS certificate
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  telemetry::StatRegistry stats;
  // One memory budget for every model loaded; declared before the models.
  const uint64_t budget =
      cfg.memory_budget > 0 ? cfg.memory_budget : scheduler::DetectAvailableMemory();
  if (budget == 0) {
    spdlog::error("cannot detect available memory; set memory_budget");
    return 2;
  }
  models::MemoryLedger ledger(budget);
  models::ServingSet serving(&ledger);
  api::HttpOptions ho;
  ho.host = cfg.host;
  ho.port = cfg.port;
  ho.max_body_bytes = cfg.max_body_size;
  ho.n_http_threads = cfg.http_threads;
  ho.io_threads = cfg.http_io_threads;
  ho.max_header_bytes = cfg.max_header_size;
  ho.header_timeout_ms = cfg.header_timeout_ms;
  ho.body_timeout_ms = cfg.body_timeout_ms;
  ho.idle_timeout_ms = cfg.idle_timeout_ms;
  ho.write_timeout_ms = cfg.write_timeout_ms;
  ho.max_connections = static_cast<size_t>(cfg.max_connections);
  ho.max_connections_per_client = static_cast<size_t>(cfg.max_connections_per_client);
  std::unique_ptr<router::Router> router;
  if (!cfg.routing_file.empty()) {
    auto rc = router::LoadRoutingConfig(cfg.routing_file);
    if (!rc.ok()) {
      spdlog::error("routing: {}", rc.status().message());
      return 2;
    }
    router = std::make_unique<router::Router>(std::move(rc).value(), &stats);
    router->Start();
    spdlog::info("routing: {} upstream(s) from {}", router->config().upstreams.size(),
                 cfg.routing_file);
  }
  {
    std::vector<std::string> keys;
    if (!cfg.api_key.empty()) keys.push_back(cfg.api_key);
    if (const char* env = std::getenv("OUTPOST_API_KEY"); env != nullptr && *env) {
      keys.push_back(env);
    }
    if (!cfg.api_key_file.empty()) {
      auto from_file = api::ApiKeys::ReadFile(cfg.api_key_file);
      if (!from_file.ok()) {
        spdlog::error("{}", from_file.status().message());
        return 2;
      }
      keys.insert(keys.end(), from_file->begin(), from_file->end());
    }
    if (!keys.empty() && router) {
      for (const auto& [key, tenant] : router->config().tenants) keys.push_back(key);
    }
    ho.api_keys = api::ApiKeys(std::move(keys));
    ho.metrics_require_key = cfg.metrics_require_key;
    if (cfg.tls_cert_file.empty() != cfg.tls_key_file.empty()) {
      spdlog::error("HTTPS needs both tls_cert_file and tls_key_file; {} is missing",
                    cfg.tls_cert_file.empty() ? "tls_cert_file" : "tls_key_file");
      return 2;
    }
    ho.tls_cert_file = cfg.tls_cert_file;
    ho.tls_key_file = cfg.tls_key_file;
    if (ho.api_keys.required()) {
      spdlog::info("API keys: {} accepted; /health and /ready are open{}", ho.api_keys.size(),
                   cfg.metrics_require_key ? "" : ", and /metrics");
    }
  }
  router::DispatcherImpl dispatcher(&serving, router.get());
  api::HttpServer http(ho, &serving, &dispatcher, &stats, router.get());
  if (Status st = http.Bind(); !st.ok()) {
    spdlog::error("{}", st.message());
    return st.code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  // /health answers at once; /ready says "loading" until the model is in.
  std::thread http_thread([&] { http.Run(); });
  spdlog::info("outpost {} (llama.cpp {}) listening on {}://{}:{}", OUTPOST_VERSION,
               OUTPOST_LLAMA_VERSION, http.tls() ? "https" : "http", cfg.host, http.port());

  std::vector<std::shared_ptr<scheduler::Scheduler>> schedulers;
  std::string ids;
  for (size_t i = 0; i <= cfg.extra_models.size(); ++i) {
    const models::ModelRuntimeOptions mo = ModelRuntimeOptionsFrom(cfg, i);
    auto served = models::LoadModel(mo, &ledger, &stats);
    if (!served.ok()) {
      spdlog::error("cannot serve {}: {}", mo.path, served.status().message());
      for (auto& s : schedulers) s->Stop();
      http.Stop();
      http_thread.join();
      return 1;
    }
    schedulers.push_back((*served)->scheduler);
    ids += (ids.empty() ? "'" : ", '") + (*served)->id + "'";
    serving.Add(std::move(served).value());
  }
  spdlog::info("memory: {} of the budget {} reserved by {} model(s)",
               util::FormatBytes(ledger.reserved()), util::FormatBytes(ledger.budget()),
               schedulers.size());
  serving.SetReady(true);
  const char* scheme = http.tls() ? "https" : "http";
  spdlog::info("ready: model {} on {}://{}:{}/v1", ids, scheme, cfg.host, http.port());
  spdlog::info(
      "try: curl {}://{}:{}/v1/chat/completions -H 'Content-Type: application/json' "
      "-d '{{\"messages\":[{{\"role\":\"user\",\"content\":\"Say hello\"}}]}}'",
      scheme, cfg.host, http.port());

  int sig = 0;
  for (;;) {
    sigwait(&sigs, &sig);
    if (sig != SIGHUP) break;
    if (!http.tls()) {
      spdlog::info("SIGHUP: nothing to reload (no TLS)");
      continue;
    }
    const Status st = http.ReloadTls();
    if (st.ok()) {
      spdlog::info("SIGHUP: TLS certificate and key reloaded from {}", cfg.tls_cert_file);
    } else {
      spdlog::error("SIGHUP: {}; still serving the previous certificate", st.message());
    }
  }
  spdlog::info("signal {} received: shutting down", sig);
  serving.SetReady(false);
  for (auto& s : schedulers) s->Stop();
  http.Stop();
  http_thread.join();
  if (router) router->Stop();
  return 0;
}

}  // namespace outpost::app
