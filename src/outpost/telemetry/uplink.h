// Uplink — summaries and events to the centre, through outages, each record
// applied there exactly once.
//
// Two threads. The collector samples the registry every second (peaks,
// events), closes a summary every `interval` and appends it, and every event,
// to the Spool. The sender takes one record at a time and POSTs it:
// - OTLP/HTTP JSON (format "otlp"): summaries to {url}/v1/metrics, events
//   and gaps to {url}/v1/logs; or one JSON object per record to {url}
//   (format "webhook").
// - Every POST carries Idempotency-Key: <box id>:<seq>, and the same key as
//   resource attributes, so a receiver applies a replay once.
// - OTLP's rules: 2xx = delivered (a partial success is logged and never
//   retried); 429, 502, 503, 504 and no answer at all are retried, after
//   Retry-After (seconds or an HTTP date) when given, else after an
//   exponential backoff with full jitter capped at `max_backoff`; any other
//   status is a refusal: the record leaves the spool and a gap record says so.
//   The webhook retries 408, 429 and 5xx the same way.
// - The record is deleted from the spool only after the centre answered 2xx,
//   so a crash between the two resends it (the receiver drops the replay).
// - After an outage (more than one record pending) the newest record goes
//   first, so the centre sees the present at once; then the backlog, oldest
//   first. A summary made during the backfill again jumps the queue.
// - Link lost / restored and disk nearly full are events of their own.
//
// Thread-safety: Start/Stop from one thread; AddEvent and StatusJson from
// any; CloseWindow/SendOne are the threads' steps, public for tests (call
// them only while the threads are not started).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "outpost/telemetry/otlp_json.h"
#include "outpost/telemetry/spool.h"
#include "outpost/telemetry/stat_registry.h"
#include "outpost/telemetry/summary.h"
#include "outpost/util/clock.h"
#include "outpost/util/random.h"
#include "outpost/util/thread_annotations.h"

namespace outpost::telemetry {

// How the uplink POSTs (router/uplink_transport.h: cpp-httplib with TLS and a
// bearer token). Implementations bound each call by their own timeout.
class UplinkTransport {
 public:
  struct Response {
    int status = 0;           // 0: no answer (connect failed, timeout, reset)
    std::string body;         // the response body
    std::string retry_after;  // the Retry-After header, if any
    std::string error;        // with status 0: what went wrong
    uint64_t wire_bytes = 0;  // the request body as sent (compressed); 0: the body's size
  };
  virtual ~UplinkTransport() = default;
  virtual Response Post(const std::string& url, const std::string& body,
                        const std::vector<std::pair<std::string, std::string>>& headers) = 0;
};

struct UplinkOptions {
  std::string url;              // OTLP base ("http://collector:4318") or the webhook's URL
  std::string format = "otlp";  // otlp | webhook
  UplinkIdentity identity;
  int64_t interval_ms = 60000;  // one summary per interval
  int64_t sample_ms = 1000;     // gauge peaks and events
  int64_t min_backoff_ms = 1000;
  int64_t max_backoff_ms = 300000;
  double disk_free_min_ratio = 0.05;  // below: the "disk nearly full" event
};

// Retry-After as milliseconds from now (delta seconds or an HTTP date); -1
// when absent or unreadable.
int64_t ParseRetryAfterMs(const std::string& value, int64_t now_unix_s);

class Uplink {
 public:
  // Everything must outlive the uplink. `boot_id` names this process's run.
  Uplink(UplinkOptions options, std::string boot_id, StatRegistry* registry, Spool* spool,
         UplinkTransport* transport, const util::Clock* clock, util::Random* random);
  ~Uplink();  // Stop()s

  void Start();
  // Closes the current window into the spool, then stops both threads (the
  // spool keeps what was not sent).
  void Stop();

  // An event from elsewhere in the process (model swaps, later).
  void AddEvent(UplinkEvent e);

  // The collector's step at a window's end: a summary and the pending events
  // into the spool.
  void CloseWindow();
  // The collector's step between windows: sample, spool the events.
  void SampleOnce();

  enum class SendResult { kIdle, kDelivered, kRetryLater, kRefused };
  // The sender's step: one record, one attempt. After kRetryLater,
  // next_attempt_ms() says how long to wait.
  SendResult SendOne();
  int64_t next_attempt_ms() const { return backoff_ms_.load(); }

  // {"configured", "url", "format", "up", "last_success_unix", "spool": {...},
  //  "acked_seq", "last_error"} for the dashboard.
  nlohmann::json StatusJson();

 private:
  void Append(const std::string& kind, const std::string& body, int64_t time_ms);
  void SpoolEvents();
  void CheckDisk();
  void RefreshSpoolStats();
  int64_t SpoolNextSeq();  // as of the last refresh
  void LinkDown(const std::string& why);

  const UplinkOptions options_;
  const std::string boot_id_;
  telemetry::Spool* const spool_;
  UplinkTransport* const transport_;
  const util::Clock* const clock_;
  util::Random* const random_;
  SummaryBuilder builder_;

  // Stats (registered on construction).
  Gauge* up_;
  Gauge* last_success_;
  Gauge* acked_seq_;
  Counter* sent_bytes_;
  Family* attempts_;
  Family* sent_records_;
  Counter* partial_;

  // The spool's state as of the last step, shared with the registry's
  // computed series (which may outlive the uplink).
  struct SpoolCell {
    std::mutex mu;
    SpoolStats stats;
  };
  const std::shared_ptr<SpoolCell> cell_ = std::make_shared<SpoolCell>();

  std::mutex mu_;
  std::vector<UplinkEvent> events_ OUTPOST_GUARDED_BY(mu_);
  SpoolStats spool_stats_ OUTPOST_GUARDED_BY(mu_);
  std::string last_error_ OUTPOST_GUARDED_BY(mu_);
  int64_t last_success_unix_ OUTPOST_GUARDED_BY(mu_) = 0;

  // Sender state (the sender thread only).
  int64_t last_present_seq_ = 0;
  int failures_ = 0;
  bool link_down_ = false;
  int64_t down_since_ms_ = 0;
  bool disk_low_ = false;
  std::atomic<int64_t> backoff_ms_{0};

  std::mutex run_mu_;
  std::condition_variable run_cv_;
  bool stop_ = false;
  bool wake_ = false;  // the collector appended: an idle sender sends at once
  std::thread collector_, sender_;
};

}  // namespace outpost::telemetry
