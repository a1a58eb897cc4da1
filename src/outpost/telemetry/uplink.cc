#include "outpost/telemetry/uplink.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <filesystem>

#include <spdlog/spdlog.h>

namespace outpost::telemetry {
namespace {

bool Retryable(const std::string& format, int status) {
  if (status == 0) return true;  // no answer: the link, not the record
  if (format == "webhook") return status == 408 || status == 429 || status >= 500;
  return status == 429 || status == 502 || status == 503 || status == 504;
}

// OTLP partial success: rejectedDataPoints / rejectedLogRecords (an int64,
// so a string in JSON) above zero.
int64_t Rejected(const std::string& body, std::string* message) {
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("partialSuccess")) return 0;
  const auto& p = j["partialSuccess"];
  if (!p.is_object()) return 0;
  int64_t n = 0;
  for (const char* key : {"rejectedDataPoints", "rejectedLogRecords"}) {
    if (!p.contains(key)) continue;
    const auto& v = p[key];
    if (v.is_number_integer()) n += v.get<int64_t>();
    if (v.is_string()) n += std::atoll(v.get<std::string>().c_str());
  }
  *message = p.value("errorMessage", std::string());
  return n;
}

}  // namespace

int64_t ParseRetryAfterMs(const std::string& value, int64_t now_unix_s) {
  if (value.empty()) return -1;
  if (std::all_of(value.begin(), value.end(), [](unsigned char c) { return std::isdigit(c); })) {
    if (value.size() > 9) return -1;
    return std::stoll(value) * 1000;
  }
  tm t{};
  const char* end = strptime(value.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &t);
  if (end == nullptr || *end != '\0') return -1;
  const int64_t at = static_cast<int64_t>(timegm(&t));
  return std::max<int64_t>(0, (at - now_unix_s) * 1000);
}

Uplink::Uplink(UplinkOptions options, std::string boot_id, StatRegistry* registry,
               telemetry::Spool* spool, UplinkTransport* transport, const util::Clock* clock,
               util::Random* random)
    : options_(std::move(options)),
      boot_id_(std::move(boot_id)),
      spool_(spool),
      transport_(transport),
      clock_(clock),
      random_(random),
      builder_(registry, clock) {
  auto gauge = [&](const char* name, const char* help) {
    return &registry->Register({name, help, StatType::kGauge, {}, {}}).GaugeWith({});
  };
  up_ = gauge("outpost_uplink_up",
              "1 while the last uplink attempt was answered 2xx, 0 after a failed one.");
  last_success_ = gauge("outpost_uplink_last_success_timestamp_seconds",
                        "Unix time of the last record the centre acknowledged.");
  acked_seq_ = gauge("outpost_uplink_acked_seq",
                     "The highest sequence number the centre acknowledged (kept across restarts).");
  sent_bytes_ = &registry
                     ->Register({"outpost_uplink_sent_bytes_total",
                                 "Bytes the centre acknowledged, as sent (gzip-compressed).",
                                 StatType::kCounter,
                                 {},
                                 {}})
                     .CounterWith({});
  partial_ = &registry
                  ->Register({"outpost_uplink_partial_success_total",
                              "Records the centre accepted in part (logged, never retried).",
                              StatType::kCounter,
                              {},
                              {}})
                  .CounterWith({});
  attempts_ = &registry->Register({"outpost_uplink_attempts_total",
                                   "Uplink POSTs by HTTP status (\"none\": no answer).",
                                   StatType::kCounter,
                                   {"code"},
                                   {}});
  sent_records_ = &registry->Register({"outpost_uplink_records_total",
                                       "Records the centre acknowledged, by kind.",
                                       StatType::kCounter,
                                       {"kind"},
                                       {}});
  // The spool's state, as of the last step of either thread.
  auto spool_stat = [&](const char* name, const char* help, StatType type,
                        std::function<double(const SpoolStats&)> get) {
    // The cell, not `this`: the registry may outlive the uplink.
    registry->Register({name, help, type, {}, {}})
        .ComputedWith({}, [cell = cell_, get = std::move(get)] {
          std::lock_guard<std::mutex> lock(cell->mu);
          return get(cell->stats);
        });
  };
  spool_stat("outpost_spool_records", "Records waiting in the uplink spool.", StatType::kGauge,
             [](const SpoolStats& s) { return static_cast<double>(s.records); });
  spool_stat("outpost_spool_bytes", "Bytes of records waiting in the uplink spool.",
             StatType::kGauge, [](const SpoolStats& s) { return static_cast<double>(s.bytes); });
  spool_stat("outpost_spool_capacity_bytes", "The uplink spool's bound (uplink_spool_size).",
             StatType::kGauge,
             [](const SpoolStats& s) { return static_cast<double>(s.max_bytes); });
  spool_stat("outpost_spool_dropped_total",
             "Records dropped from a full spool (each drop writes a gap record).",
             StatType::kCounter,
             [](const SpoolStats& s) { return static_cast<double>(s.dropped_records); });
  spool_stat("outpost_spool_gap_records_total", "Gap records written.", StatType::kCounter,
             [](const SpoolStats& s) { return static_cast<double>(s.gap_records); });
  spool_stat("outpost_spool_merged_total",
             "Summaries folded into later ones to make room (resolution lost, totals kept).",
             StatType::kCounter,
             [](const SpoolStats& s) { return static_cast<double>(s.merged_records); });
  spool_stat("outpost_spool_unrecorded_total",
             "Records that could not be written at all (disk full) since start.",
             StatType::kCounter,
             [](const SpoolStats& s) { return static_cast<double>(s.unrecorded); });
  RefreshSpoolStats();
  {
    std::lock_guard<std::mutex> lock(mu_);
    acked_seq_->Set(static_cast<double>(spool_stats_.acked_seq_max));
  }
}

Uplink::~Uplink() {
  Stop();
}

void Uplink::Start() {
  AddEvent({"outpost.started",
            "INFO",
            clock_->UnixMillis(),
            {{"version", options_.identity.version}, {"boot_id", boot_id_}}});
  SampleOnce();
  collector_ = std::thread([this] {
    const auto interval = std::chrono::milliseconds(options_.interval_ms);
    auto next_close = clock_->Now() + interval;
    std::unique_lock<std::mutex> lock(run_mu_);
    while (!run_cv_.wait_for(lock, std::chrono::milliseconds(options_.sample_ms),
                             [this] { return stop_; })) {
      lock.unlock();
      const int64_t before = SpoolNextSeq();
      if (clock_->Now() >= next_close) {
        CloseWindow();
        next_close += interval;
        if (clock_->Now() >= next_close) next_close = clock_->Now() + interval;
      } else {
        SampleOnce();
      }
      const bool appended = SpoolNextSeq() != before;  // both steps refresh the stats
      lock.lock();
      if (appended) {
        wake_ = true;
        run_cv_.notify_all();  // the sender sends it now, not at its next poll
      }
    }
  });
  sender_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(run_mu_);
    while (!stop_) {
      lock.unlock();
      const SendResult r = SendOne();
      lock.lock();
      int64_t wait = 0;
      if (r == SendResult::kIdle) wait = 200;
      if (r == SendResult::kRetryLater) wait = backoff_ms_.load();
      if (r == SendResult::kIdle) {
        run_cv_.wait_for(lock, std::chrono::milliseconds(wait), [this] { return stop_ || wake_; });
      } else if (wait > 0) {
        run_cv_.wait_for(lock, std::chrono::milliseconds(wait), [this] { return stop_; });
      }
      wake_ = false;
    }
  });
}

void Uplink::Stop() {
  {
    std::lock_guard<std::mutex> lock(run_mu_);
    if (stop_) return;
    stop_ = true;
  }
  run_cv_.notify_all();
  const bool was_running = collector_.joinable();
  if (collector_.joinable()) collector_.join();
  if (sender_.joinable()) sender_.join();
  if (was_running) CloseWindow();
}

void Uplink::AddEvent(UplinkEvent e) {
  if (e.time_ms == 0) e.time_ms = clock_->UnixMillis();
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back(std::move(e));
}

void Uplink::Append(const std::string& kind, const std::string& body, int64_t time_ms) {
  auto seq = spool_->Append(kind, boot_id_, time_ms, body);
  if (!seq.ok()) spdlog::warn("uplink: {}", seq.status().message());
}

void Uplink::SpoolEvents() {
  std::vector<UplinkEvent> events = builder_.TakeEvents();
  {
    std::lock_guard<std::mutex> lock(mu_);
    events.insert(events.end(), events_.begin(), events_.end());
    events_.clear();
  }
  std::stable_sort(events.begin(), events.end(), [](const UplinkEvent& a, const UplinkEvent& b) {
    return a.time_ms < b.time_ms;
  });
  for (const auto& e : events) Append("event", e.ToJson().dump(), e.time_ms);
}

void Uplink::CheckDisk() {
  struct statvfs fs {};
  const std::string dir = std::filesystem::path(spool_->path()).parent_path().string();
  if (statvfs(dir.empty() ? "." : dir.c_str(), &fs) != 0 || fs.f_blocks == 0) return;
  const double free_ratio = static_cast<double>(fs.f_bavail) / static_cast<double>(fs.f_blocks);
  if (!disk_low_ && free_ratio < options_.disk_free_min_ratio) {
    disk_low_ = true;
    AddEvent({"outpost.disk.nearly_full",
              "WARN",
              clock_->UnixMillis(),
              {{"path", dir},
               {"free_bytes", std::to_string(static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize)},
               {"free_ratio", std::to_string(free_ratio)}}});
  } else if (disk_low_ && free_ratio > 2 * options_.disk_free_min_ratio) {
    disk_low_ = false;
  }
}

int64_t Uplink::SpoolNextSeq() {
  std::lock_guard<std::mutex> lock(mu_);
  return spool_stats_.next_seq;
}

void Uplink::RefreshSpoolStats() {
  SpoolStats s = spool_->Stats();
  {
    std::lock_guard<std::mutex> lock(cell_->mu);
    cell_->stats = s;
  }
  std::lock_guard<std::mutex> lock(mu_);
  spool_stats_ = s;
}

void Uplink::SampleOnce() {
  builder_.Sample();
  CheckDisk();
  SpoolEvents();
  RefreshSpoolStats();
}

void Uplink::CloseWindow() {
  nlohmann::json s = builder_.Close();
  const int64_t end = s.value("end_ms", clock_->UnixMillis());
  SpoolEvents();
  Append("summary", s.dump(), end);
  RefreshSpoolStats();
}

void Uplink::LinkDown(const std::string& why) {
  up_->Set(0);
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_error_ = why;
  }
  if (link_down_) return;
  link_down_ = true;
  down_since_ms_ = clock_->UnixMillis();
  spdlog::warn("uplink: {} — spooling until the centre answers", why);
  AddEvent({"outpost.link.lost", "WARN", down_since_ms_, {{"error", why}}});
}

Uplink::SendResult Uplink::SendOne() {
  RefreshSpoolStats();
  SpoolStats stats;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats = spool_stats_;
  }
  if (stats.records == 0) return SendResult::kIdle;
  // The present first: the newest record jumps a backlog once.
  const bool present = stats.records > 1 && stats.newest_seq > last_present_seq_;
  auto rec = spool_->Take(present);
  if (!rec) return SendResult::kIdle;
  const SendContext ctx{present, stats.records};
  const bool otlp = options_.format != "webhook";
  const std::string url = otlp ? options_.url + OtlpPath(*rec) : options_.url;
  const std::string body =
      otlp ? OtlpBody(*rec, options_.identity, ctx) : WebhookBody(*rec, options_.identity, ctx);
  const auto resp =
      transport_->Post(url, body, {{"Idempotency-Key", IdempotencyKey(*rec, options_.identity)}});
  attempts_->CounterWith({resp.status == 0 ? "none" : std::to_string(resp.status)}).Add();

  if (resp.status >= 200 && resp.status < 300) {
    if (Status st = spool_->Ack(rec->seq); !st.ok()) {
      spdlog::warn("uplink: acknowledging seq {}: {}", rec->seq, st.message());
    }
    std::string message;
    if (otlp) {
      if (const int64_t n = Rejected(resp.body, &message); n > 0) {
        partial_->Add();
        spdlog::warn("uplink: the centre rejected {} item(s) of seq {} (not retried): {}", n,
                     rec->seq, message);
      }
    }
    sent_bytes_->Add(resp.wire_bytes > 0 ? resp.wire_bytes : body.size());
    sent_records_->CounterWith({rec->kind}).Add();
    if (present) last_present_seq_ = rec->seq;
    failures_ = 0;
    backoff_ms_ = 0;
    up_->Set(1);
    const int64_t now_ms = clock_->UnixMillis();
    last_success_->Set(static_cast<double>(now_ms) / 1000.0);
    RefreshSpoolStats();
    {
      std::lock_guard<std::mutex> lock(mu_);
      last_success_unix_ = now_ms / 1000;
      last_error_.clear();
      acked_seq_->Set(static_cast<double>(spool_stats_.acked_seq_max));
    }
    if (link_down_) {
      link_down_ = false;
      spdlog::info("uplink: the centre answers again after {} s; {} record(s) to send",
                   (now_ms - down_since_ms_) / 1000, stats.records - 1);
      AddEvent({"outpost.link.restored",
                "INFO",
                now_ms,
                {{"outage_s", std::to_string((now_ms - down_since_ms_) / 1000)},
                 {"backlog", std::to_string(stats.records - 1)}}});
    }
    return SendResult::kDelivered;
  }
  if (Retryable(options_.format, resp.status)) {
    spool_->Release(rec->seq);
    ++failures_;
    LinkDown(resp.status == 0 ? resp.error : "HTTP " + std::to_string(resp.status));
    int64_t wait = ParseRetryAfterMs(resp.retry_after, clock_->UnixSeconds());
    if (wait < 0) {
      // Full jitter: uniform in [0, min(max, min * 2^failures)).
      const int shift = std::min(failures_, 20);
      const int64_t cap =
          std::min<int64_t>(options_.max_backoff_ms, options_.min_backoff_ms << shift);
      wait =
          options_.min_backoff_ms / 2 +
          static_cast<int64_t>(random_->Next() % static_cast<uint64_t>(std::max<int64_t>(1, cap)));
      wait = std::min(wait, options_.max_backoff_ms);
    } else {
      wait = std::min<int64_t>(wait, 3'600'000);  // a Retry-After past an hour is not believed
    }
    backoff_ms_ = wait;
    return SendResult::kRetryLater;
  }
  // Refused for good: never retried; a gap record tells the centre.
  const std::string why = "refused: HTTP " + std::to_string(resp.status);
  spdlog::error("uplink: the centre refused seq {} ({}): {}", rec->seq, why,
                resp.body.substr(0, 200));
  if (Status st = spool_->Reject(rec->seq, why, boot_id_, clock_->UnixMillis()); !st.ok()) {
    spdlog::warn("uplink: {}", st.message());
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_error_ = why;
  }
  backoff_ms_ = 0;
  return SendResult::kRefused;
}

nlohmann::json Uplink::StatusJson() {
  std::lock_guard<std::mutex> lock(mu_);
  return {{"configured", true},
          {"url", options_.url},
          {"format", options_.format},
          {"up", up_->value() > 0},
          {"last_success_unix", last_success_unix_},
          {"last_error", last_error_},
          {"acked_seq", spool_stats_.acked_seq_max},
          {"spool",
           {{"records", spool_stats_.records},
            {"bytes", spool_stats_.bytes},
            {"max_bytes", spool_stats_.max_bytes},
            {"dropped", spool_stats_.dropped_records},
            {"gaps", spool_stats_.gap_records}}}};
}

}  // namespace outpost::telemetry
