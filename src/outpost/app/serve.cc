#include "outpost/app/serve.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "outpost/api/batch_api.h"
#include "outpost/api/conversation_store.h"
#include "outpost/api/http_server.h"
#include "outpost/api/response_store.h"
#include "outpost/app/serve_models.h"
#include "outpost/audit/audit_log.h"
#include "outpost/batch/batch_runner.h"
#include "outpost/batch/batch_store.h"
#include "outpost/engine/context.h"
#include "outpost/engine/model.h"
#include "outpost/models/model_runtime.h"
#include "outpost/models/serving_set.h"
#include "outpost/router/dispatcher_impl.h"
#include "outpost/router/router.h"
#include "outpost/router/uplink_transport.h"
#include "outpost/scheduler/capacity.h"
#include "outpost/scheduler/scheduler.h"
#include "outpost/telemetry/history.h"
#include "outpost/telemetry/hw_sensors.h"
#include "outpost/telemetry/process_stats.h"
#include "outpost/telemetry/stat_registry.h"
#include "outpost/telemetry/uplink.h"
#include "outpost/util/clock.h"
#include "outpost/util/cpus.h"
#include "outpost/util/heap.h"
#include "outpost/util/random.h"
#include "outpost/util/sd_notify.h"
#include "outpost/util/units.h"
#include "outpost/version.h"

namespace outpost::app {
namespace {

// The uplink's parts, alive from start to shutdown.
struct UplinkParts {
  std::unique_ptr<telemetry::Spool> spool;
  std::unique_ptr<router::HttpUplinkTransport> transport;
  std::unique_ptr<telemetry::Uplink> uplink;
};

// Opens the spool under the state directory and builds the uplink (not yet
// started). Errors name the directory or the file.
StatusOr<UplinkParts> MakeUplink(const ServeConfig& cfg, telemetry::StatRegistry* stats) {
  UplinkParts p;
  const std::string dir = StateDir(cfg);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return Status::InvalidArgument("state_dir " + dir + ": " + ec.message(), "state_dir");
  }
  auto spool = telemetry::Spool::Open(dir + "/uplink-spool.db", cfg.uplink_spool_size,
                                      telemetry::MergeSummaries);
  if (!spool.ok()) return spool.status();
  p.spool = std::move(spool).value();
  router::UplinkTransportOptions to;
  to.bearer_token = cfg.uplink_token;
  if (const char* t = std::getenv("OUTPOST_UPLINK_TOKEN"); t != nullptr && *t) to.bearer_token = t;
  to.tls_ca_file = cfg.uplink_tls_ca_file;
  to.timeout_ms = cfg.uplink_timeout_ms;
  to.connect_timeout_ms = std::min<int64_t>(cfg.uplink_timeout_ms, 5000);
  p.transport = std::make_unique<router::HttpUplinkTransport>(std::move(to));
  telemetry::UplinkOptions uo;
  uo.url = cfg.uplink_url;
  uo.format = cfg.uplink_format;
  uo.identity.box_id = BoxId(cfg);
  uo.identity.host_name = HostName();
  uo.identity.version = OUTPOST_VERSION;
  uo.interval_ms = cfg.uplink_interval_ms;
  uo.sample_ms = std::min<int64_t>(1000, cfg.uplink_interval_ms);
  uo.max_backoff_ms = cfg.uplink_max_backoff_ms;
  uo.min_backoff_ms = std::min<int64_t>(1000, cfg.uplink_max_backoff_ms);
  char boot_id[33];
  std::snprintf(boot_id, sizeof boot_id, "%016llx%016llx",
                static_cast<unsigned long long>(util::RealRandom().Next()),
                static_cast<unsigned long long>(util::RealRandom().Next()));
  p.uplink = std::make_unique<telemetry::Uplink>(std::move(uo), boot_id, stats, p.spool.get(),
                                                 p.transport.get(), &util::RealClock(),
                                                 &util::RealRandom());
  return p;
}

}  // namespace

int RunServe(ServeConfig cfg) {
  if (cfg.model.empty()) cfg.model = DefaultModelPath();
  // Before any thread starts, so that none has made its own arena yet.
  const int arenas = util::LimitHeapArenas(cfg.heap_arenas);
  engine::InstallLlamaLogger(cfg.log_level == "debug" || cfg.log_level == "trace");
  const util::CpuBudget& cpus = util::UsableCpus();
  const int32_t threads = cfg.threads > 0 ? cfg.threads : cpus.usable;
  spdlog::info("cpu: {}; threads {}, threads_batch {}", cpus.Describe(), threads,
               cfg.threads_batch > 0 ? cfg.threads_batch : threads);
  spdlog::info("heap: {}; free pages given back {}",
               arenas > 0 ? "at most " + std::to_string(arenas) + " malloc arenas"
                          : std::string("glibc's default malloc arenas"),
               cfg.heap_release_interval_ms > 0
                   ? "every " + std::to_string(cfg.heap_release_interval_ms) + " ms"
                   : "never (heap_release_interval 0)");
  for (const std::string& w : engine::CpuThreadWarnings(cfg.threads, cfg.threads_batch)) {
    spdlog::warn("cpu: {}", w);
  }

  // Signals are taken by sigwait on this thread; every other thread blocks them.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGHUP);  // reload the TLS certificate
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  telemetry::StatRegistry stats;
  // Hardware sensors as metrics, read at each scrape (OUTPOST_SYSFS_ROOT: a
  // fake sysfs tree for tests).
  const char* sysfs_env = std::getenv("OUTPOST_SYSFS_ROOT");
  const std::string sysfs_root = sysfs_env != nullptr && *sysfs_env ? sysfs_env : "/sys";
  // NVML only on the real tree, unless a test names a library to load.
  std::string nvml = sysfs_root == "/sys" ? telemetry::HwSensors::kNvmlLibrary : "";
  if (const char* lib = std::getenv("OUTPOST_NVML_LIBRARY"); lib != nullptr) nvml = lib;
  const auto hw = telemetry::HwSensors::Discover(sysfs_root, nvml);
  hw->RegisterMetrics(&stats);
  telemetry::RegisterProcessMetrics(&stats);
  {
    std::string found;
    for (const auto& src : hw->sources())
      found += (found.empty() ? "" : ", ") + src.name + (src.up ? " up" : " absent");
    spdlog::info("sensors: {} reading(s) under {} ({})", hw->sensors().size(), sysfs_root, found);
  }
  // One memory budget for every model loaded; declared before the models.
  std::string budget_source = "memory_budget";
  const uint64_t budget =
      cfg.memory_budget > 0 ? cfg.memory_budget : scheduler::DetectAvailableMemory(&budget_source);
  if (budget == 0) {
    spdlog::error("cannot detect available memory; set memory_budget");
    return 2;
  }
  spdlog::info("memory: budget {} ({})", util::FormatBytes(budget), budget_source);
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
  // Pinned prompts share the cache scope of their tenant's requests.
  for (size_t i = 0; i < cfg.pinned_prompts.size(); ++i) {
    PinnedPromptConfig& p = cfg.pinned_prompts[i];
    if (router == nullptr) {
      if (!p.tenant.empty()) {
        spdlog::error(
            "pinned_prompts[{}].tenant '{}': tenants come from a routing file, and none "
            "is set (routing_file)",
            i, p.tenant);
        return 2;
      }
      continue;
    }
    auto scope = router->TenantCacheScope(p.tenant);
    if (!scope) {
      spdlog::error("pinned_prompts[{}].tenant '{}': no tenant of that name in {}", i, p.tenant,
                    cfg.routing_file);
      return 2;
    }
    p.scope = *scope;
  }
  // A pinned prompt for a model that is not served stops the start before
  // any model loads.
  const std::vector<std::string> ids_to_serve = ModelIdsToServe(cfg);
  for (size_t i = 0; i < cfg.pinned_prompts.size(); ++i) {
    const std::string& model = cfg.pinned_prompts[i].model;
    if (model.empty() ||
        std::find(ids_to_serve.begin(), ids_to_serve.end(), model) != ids_to_serve.end()) {
      continue;
    }
    std::string serving;
    for (const std::string& id : ids_to_serve) {
      serving += (serving.empty() ? "'" : ", '") + id + "'";
    }
    spdlog::error("pinned_prompts[{}].model '{}': no served model has that id (serving {})", i,
                  model, serving);
    return 2;
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
  telemetry::History history(&stats, cfg.history_interval_ms, &util::RealClock());
  http.SetHistory(&history);
  util::HeapReleaser heap_releaser(cfg.heap_release_interval_ms, /*min_free_bytes=*/1 << 20);
  stats
      .Register({"outpost_heap_released_bytes_total",
                 "Resident memory the C heap gave back to the kernel (heap_release_interval).",
                 telemetry::StatType::kCounter,
                 {},
                 {}})
      .ComputedWith(
          {}, [&heap_releaser] { return static_cast<double>(heap_releaser.released_bytes()); });
  // The Batch API: its store now (so /v1/files answers while the model
  // loads; set before the server runs), its runner once the model is ready.
  std::unique_ptr<batch::BatchStore> batch_store;
  std::unique_ptr<batch::BatchRunner> batch_runner;
  std::unique_ptr<api::BatchApi> batch_api;
  if (cfg.batch_parallel > 0) {
    const std::string path = StateDir(cfg) + "/batches.db";
    std::error_code ec;
    std::filesystem::create_directories(StateDir(cfg), ec);
    auto opened = batch::BatchStore::Open(path);
    if (opened.ok()) batch_store = std::move(opened).value();
    // The API is off, not the server: a second outpost on one state_dir
    // still serves everything else.
    if (!opened.ok())
      spdlog::warn("batch: {}; /v1/files and /v1/batches are off", opened.status().message());
  }
  // One number computed at each scrape.
  auto gauge = [&stats](const char* name, const char* help, std::function<double()> fn) {
    stats.Register({name, help, telemetry::StatType::kGauge, {}, {}})
        .ComputedWith({}, std::move(fn));
  };
  if (batch_store) {
    batch::RunnerOptions ro;
    ro.parallel = cfg.batch_parallel;
    batch_runner =
        std::make_unique<batch::BatchRunner>(batch_store.get(), api::LineExecutor(&http), ro);
    batch_api = std::make_unique<api::BatchApi>(batch_store.get(), batch_runner.get());
    http.SetBatchApi(batch_api.get());
    const batch::BatchRunner* runner = batch_runner.get();
    gauge("outpost_batch_lines_running",
          "Batch API lines running now (queued in the scheduler or generating).",
          [runner] { return static_cast<double>(runner->Running()); });
    auto& lines = stats.Register({"outpost_batch_lines_total",
                                  "Batch API lines by outcome: ok (answered 200), error (answered "
                                  "with an error; in the error file), refused (over capacity or "
                                  "preempted; run again).",
                                  telemetry::StatType::kCounter,
                                  {"outcome"},
                                  {}});
    lines.ComputedWith({"ok"}, [runner] { return static_cast<double>(runner->counts().ok); });
    lines.ComputedWith({"error"},
                       [runner] { return static_cast<double>(runner->counts().failed); });
    lines.ComputedWith({"refused"},
                       [runner] { return static_cast<double>(runner->counts().refused); });
    spdlog::info("batch: {}/batches.db ({} line(s) at once)", StateDir(cfg), cfg.batch_parallel);
  }

  // Stored Responses API answers (store, previous_response_id).
  std::unique_ptr<api::ResponseStore> response_store;
  if (cfg.responses_retention_ms > 0) {
    std::error_code ec;
    std::filesystem::create_directories(StateDir(cfg), ec);
    auto opened = api::ResponseStore::Open(StateDir(cfg) + "/responses.db");
    if (opened.ok()) {
      response_store = std::move(opened).value();
      http.SetResponseStore(response_store.get(),
                            std::max<int64_t>(1, cfg.responses_retention_ms / 1000));
      const api::ResponseStore* rs = response_store.get();
      gauge("outpost_responses_stored",
            "Responses API answers held for previous_response_id and GET /v1/responses/{id} "
            "(expired ones until the next store).",
            [rs] { return static_cast<double>(rs->Count()); });
      const api::HttpServer* server = &http;
      gauge("outpost_background_responses_running",
            "Responses API background responses queued or running (each on a thread of its "
            "own).",
            [server] { return static_cast<double>(server->BackgroundRunning()); });
      spdlog::info("responses: {}/responses.db (each kept {} s)", StateDir(cfg),
                   cfg.responses_retention_ms / 1000);
    } else {
      spdlog::warn("responses: {}; answers are not stored (store: false)",
                   opened.status().message());
    }
  }
  // Conversations (/v1/conversations, a Responses request's `conversation`),
  // each kept while it is used, until idle for the same retention.
  std::unique_ptr<api::ConversationStore> conversation_store;
  if (cfg.responses_retention_ms > 0) {
    auto opened =
        api::ConversationStore::Open(StateDir(cfg) + "/conversations.db",
                                     std::max<int64_t>(1, cfg.responses_retention_ms / 1000));
    if (opened.ok()) {
      conversation_store = std::move(opened).value();
      http.SetConversationStore(conversation_store.get());
      const api::ConversationStore* cs = conversation_store.get();
      gauge("outpost_conversations_stored",
            "Conversations API conversations held (idle past the retention ones until the next "
            "create).",
            [cs] { return static_cast<double>(cs->Count()); });
      spdlog::info("conversations: {}/conversations.db (each kept {} s after its last use)",
                   StateDir(cfg), cfg.responses_retention_ms / 1000);
    } else {
      spdlog::warn("conversations: {}; the Conversations API is off", opened.status().message());
    }
  }

  if (Status st = http.Bind(); !st.ok()) {
    spdlog::error("{}", st.message());
    return st.code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  // /health answers at once; /ready says "loading" until the model is in.
  std::thread http_thread([&] { http.Run(); });
  spdlog::info("outpost {} (llama.cpp {}) listening on {}://{}:{}", OUTPOST_VERSION,
               OUTPOST_LLAMA_VERSION, http.tls() ? "https" : "http", cfg.host, http.port());

  UplinkParts uplink;
  if (!cfg.uplink_url.empty()) {
    auto made = MakeUplink(cfg, &stats);
    if (!made.ok()) {
      spdlog::error("uplink: {}", made.status().message());
      http.Stop();
      http_thread.join();
      return 2;
    }
    uplink = std::move(made).value();
    http.SetUplink(uplink.uplink.get());
    const auto ss = uplink.spool->Stats();
    spdlog::info("uplink: {} ({}) every {} ms; spool {} holds {} record(s), next seq {}",
                 cfg.uplink_url, cfg.uplink_format, cfg.uplink_interval_ms, uplink.spool->path(),
                 ss.records, ss.next_seq);
  }
  if (router) {
    for (const auto& [key, tenant] : router->config().tenants) {
      if (!tenant.telemetry_content) continue;
      if (uplink.uplink) {
        spdlog::warn(
            "tenant '{}': prompts and answers go up the uplink as GenAI content events "
            "(telemetry_content: true; never for restricted data)",
            tenant.name);
      } else {
        spdlog::warn(
            "tenant '{}' has telemetry_content: true, but no uplink_url is set: "
            "no content leaves",
            tenant.name);
      }
    }
  }

  std::unique_ptr<audit::AuditLog> audit_log;
  if (!cfg.audit_dir.empty()) {
    audit::AuditOptions ao;
    ao.dir = cfg.audit_dir == "state" ? StateDir(cfg) + "/audit" : cfg.audit_dir;
    ao.box_id = BoxId(cfg);
    ao.checkpoint_every = cfg.audit_checkpoint_every;
    ao.checkpoint_interval_ms = cfg.audit_checkpoint_interval_ms;
    auto opened = audit::AuditLog::Open(ao, &util::RealClock());
    if (!opened.ok()) {
      spdlog::error("audit: {}", opened.status().message());
      http.Stop();
      http_thread.join();
      return 2;
    }
    audit_log = std::move(opened).value();
    if (uplink.uplink) {
      // Checkpoints go up with the summaries: the centre is the witness.
      audit_log->SetCheckpointListener([u = uplink.uplink.get()](const audit::Checkpoint& c) {
        u->AddEvent({"outpost.audit.checkpoint",
                     "INFO",
                     c.time_ms,
                     {{"count", std::to_string(c.count)},
                      {"head", c.head},
                      {"box", c.box},
                      {"key_id", c.key_id},
                      {"sig", c.sig}}});
      });
    }
    auto* log = audit_log.get();
    stats
        .Register({"outpost_audit_records_total",
                   "Records in the audit log (its head seq).",
                   telemetry::StatType::kCounter,
                   {},
                   {}})
        .ComputedWith({}, [log] { return static_cast<double>(log->head_seq()); });
    stats
        .Register({"outpost_audit_write_errors_total",
                   "Audit records that could not be written.",
                   telemetry::StatType::kCounter,
                   {},
                   {}})
        .ComputedWith({}, [log] { return static_cast<double>(log->write_errors()); });
    http.SetAudit(log);
    spdlog::info("audit: {} (head seq {}, key {})", ao.dir, log->head_seq(),
                 log->public_pem().empty() ? "?" : "ed25519");
  }

  auto opened_models = ServedModels::Open(cfg, &serving, &ledger, &stats, audit_log.get());
  if (!opened_models.ok()) {
    spdlog::error("{}", opened_models.status().message());
    http.Stop();
    http_thread.join();
    return 2;
  }
  ServedModels& models = **opened_models;
  if (models.admin() != nullptr) http.SetAdmin(models.admin());
  if (Status st = models.Load(); !st.ok()) {
    spdlog::error("cannot serve {}", st.message());
    models.Stop();
    http.Stop();
    http_thread.join();
    return 1;
  }
  const std::string& ids = models.ids();
  spdlog::info("memory: {} of the budget {} reserved by {} model(s)",
               util::FormatBytes(ledger.reserved()), util::FormatBytes(ledger.budget()),
               models.count());
  // Background responses a stop or a crash cut run again, and take their
  // conversations' holds, before the first client's turn can: until
  // SetReady, a client is answered "loading".
  http.ResumeBackground();
  serving.SetReady(true);
  history.Start();
  heap_releaser.Start();
  if (batch_runner) batch_runner->Start();
  if (uplink.uplink) uplink.uplink->Start();
  if (audit_log) {
    audit_log->Append("admin",
                      {{"action", "serve.start"}, {"version", OUTPOST_VERSION}, {"models", ids}});
  }
  const char* scheme = http.tls() ? "https" : "http";
  spdlog::info("ready: model {} on {}://{}:{}/v1", ids, scheme, cfg.host, http.port());
  spdlog::info(
      "try: curl {}://{}:{}/v1/chat/completions -H 'Content-Type: application/json' "
      "-d '{{\"messages\":[{{\"role\":\"user\",\"content\":\"Say hello\"}}],"
      "\"max_tokens\":64}}'",
      scheme, cfg.host, http.port());
  util::SdNotify("READY=1\nSTATUS=serving " + ids + " on port " + std::to_string(http.port()));

  // systemd's watchdog (WatchdogSec=): ping at half the interval while the
  // HTTP event loop answers and no engine loop is stuck in one step.
  std::atomic<bool> watchdog_stop{false};
  std::thread watchdog;
  if (const int64_t usec = util::SdWatchdogUsec(); usec > 0) {
    const int64_t interval_ms = std::max<int64_t>(usec / 2000, 10);
    spdlog::info("systemd watchdog: pinging every {} ms while healthy", interval_ms);
    watchdog = std::thread([&, interval_ms, usec] {
      while (!watchdog_stop.load()) {
        bool healthy = http.Responsive(interval_ms);
        for (const auto& s : models.Schedulers()) healthy = healthy && s->Responsive(usec / 1000);
        if (healthy) {
          util::SdNotify("WATCHDOG=1");
        } else {
          spdlog::warn("watchdog: not healthy (HTTP event loop or an engine step stuck); no ping");
        }
        for (int64_t t = 0; t < interval_ms && !watchdog_stop.load(); t += 10)
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    });
  }

  int sig = 0;
  for (;;) {
    sigwait(&sigs, &sig);
    if (sig != SIGHUP) break;
    if (!http.tls()) {
      spdlog::info("SIGHUP: nothing to reload (no TLS)");
      continue;
    }
    util::SdNotify("RELOADING=1");
    const Status st = http.ReloadTls();
    if (st.ok()) {
      spdlog::info("SIGHUP: TLS certificate and key reloaded from {}", cfg.tls_cert_file);
    } else {
      spdlog::error("SIGHUP: {}; still serving the previous certificate", st.message());
    }
    util::SdNotify("READY=1");
  }

  // Drain: refuse new connections and requests, let those in flight (streams
  // and background responses the model has begun too) finish for up to
  // drain_timeout; a second signal cuts it short.
  util::SdNotify("STOPPING=1\nSTATUS=draining");
  serving.SetReady(false);
  // Batch lines still running are cut; they run again after the restart.
  if (batch_runner) batch_runner->Stop();
  http.StopAccepting();
  for (auto& s : models.Schedulers()) s->BeginDrain();
  const auto drain_start = std::chrono::steady_clock::now();
  const auto drain_end = drain_start + std::chrono::milliseconds(cfg.drain_timeout_ms);
  auto in_flight = [&http] {
    return http.InFlight() + static_cast<int64_t>(http.BackgroundStarted());
  };
  spdlog::info(
      "signal {} received: draining {} request(s) in flight, {} background response(s) (up to "
      "{} ms)",
      sig, http.InFlight(), http.BackgroundStarted(), cfg.drain_timeout_ms);
  for (;;) {
    if (in_flight() == 0) {
      spdlog::info("drained in {} ms", std::chrono::duration_cast<std::chrono::milliseconds>(
                                           std::chrono::steady_clock::now() - drain_start)
                                           .count());
      break;
    }
    if (std::chrono::steady_clock::now() >= drain_end) {
      spdlog::warn("drain_timeout: cutting {} request(s) still in flight", in_flight());
      break;
    }
    const timespec poll{0, 50 * 1000 * 1000};
    const int again = sigtimedwait(&sigs, nullptr, &poll);
    if (again == SIGINT || again == SIGTERM) {
      spdlog::warn("signal {} again: cutting {} request(s) still in flight", again, in_flight());
      break;
    }
  }
  spdlog::info("shutting down");
  watchdog_stop = true;
  if (watchdog.joinable()) watchdog.join();
  history.Stop();
  heap_releaser.Stop();
  if (audit_log) {
    audit_log->Append("admin", {{"action", "serve.stop"}, {"signal", sig}});
    audit_log->CheckpointNow();  // the listener queues it for the uplink
  }
  if (uplink.uplink) uplink.uplink->Stop();  // the last window goes into the spool
  // Background responses still going (or not yet begun) are cut before the
  // models stop under them: each is queued again, to run at the next start.
  http.StopBackground();
  models.Stop();
  // Stopping the schedulers ended every cut stream with an error event ("the
  // server is shutting down"); the HTTP workers write it. Let them, briefly,
  // before the connections close, or a client sees a silent cut.
  const auto flush_end = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (http.InFlight() > 0 && std::chrono::steady_clock::now() < flush_end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  http.Stop();
  http_thread.join();
  if (router) router->Stop();
  return 0;
}

}  // namespace outpost::app
