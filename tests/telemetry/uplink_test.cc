#include "outpost/telemetry/uplink.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <deque>
#include <filesystem>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "mocks/seeded_random.h"
#include "mocks/sim_clock.h"

namespace outpost::telemetry {
namespace {

// Answers from a script; remembers every request.
class ScriptedTransport final : public UplinkTransport {
 public:
  struct Sent {
    std::string url, body, key;
  };
  std::deque<Response> script;  // empty: 200
  std::vector<Sent> sent;
  Response Post(const std::string& url, const std::string& body,
                const std::vector<std::pair<std::string, std::string>>& headers) override {
    std::string key;
    for (const auto& [k, v] : headers)
      if (k == "Idempotency-Key") key = v;
    sent.push_back({url, body, key});
    if (script.empty()) return {200, "{}", "", ""};
    Response r = script.front();
    script.pop_front();
    return r;
  }
};

class UplinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static int n = 0;
    dir_ = std::filesystem::temp_directory_path() /
           ("outpost_uplink_" + std::to_string(getpid()) + "_" + std::to_string(n++));
    std::filesystem::create_directories(dir_);
    spool_ = std::move(Spool::Open((dir_ / "s.db").string(), 1 << 20, MergeSummaries)).value();
    tokens_ =
        &reg_.Register({"outpost_completion_tokens_total", "", StatType::kCounter, {"model"}, {}})
             .CounterWith({"m"});
    queue_ = &reg_.Register({"outpost_queue_depth", "", StatType::kGauge, {"model"}, {}})
                  .GaugeWith({"m"});
    durations_ =
        &reg_.Register({"gen_ai_server_request_duration_seconds",
                        "",
                        StatType::kHistogram,
                        {"gen_ai_operation_name", "openai_response_service_tier", "error_type"},
                        {0.5, 1, 2}});
    duration_ = &durations_->HistogramWith({"chat", "default", ""});
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::unique_ptr<Uplink> Make(const std::string& format = "otlp") {
    UplinkOptions o;
    o.url = "http://centre:4318";
    o.format = format;
    o.identity = {"box-7", "host", "0.1.0"};
    o.max_backoff_ms = 60000;
    return std::make_unique<Uplink>(o, "boot-1", &reg_, spool_.get(), &transport_, &clock_,
                                    &random_);
  }
  std::filesystem::path dir_;
  StatRegistry reg_;
  outpost::testing::SimClock clock_;
  outpost::testing::SeededRandom random_{7};
  ScriptedTransport transport_;
  std::unique_ptr<Spool> spool_;
  Counter* tokens_;
  Gauge* queue_;
  Family* durations_;
  Histogram* duration_;
};

std::string Attr(const nlohmann::json& resource, const std::string& key) {
  for (const auto& a : resource["attributes"]) {
    if (a["key"] == key) {
      const auto& v = a["value"];
      if (v.contains("stringValue")) return v["stringValue"];
      if (v.contains("intValue")) return v["intValue"];
      if (v.contains("boolValue")) return v["boolValue"].get<bool>() ? "true" : "false";
    }
  }
  return "<absent>";
}

TEST_F(UplinkTest, ASummaryGoesAsOtlpMetricsWithItsKeyAndLeavesTheSpool) {
  auto up = Make();
  queue_->Set(3);
  up->SampleOnce();
  queue_->Set(9);  // the peak
  up->SampleOnce();
  queue_->Set(1);
  tokens_->Add(50);
  duration_->Observe(0.7);
  clock_.Advance(std::chrono::seconds(60));
  up->CloseWindow();
  ASSERT_EQ(up->SendOne(), Uplink::SendResult::kDelivered);
  ASSERT_EQ(transport_.sent.size(), 1u);
  const auto& s = transport_.sent[0];
  EXPECT_EQ(s.url, "http://centre:4318/v1/metrics");
  EXPECT_EQ(s.key, "box-7:1");
  const auto body = nlohmann::json::parse(s.body);
  const auto& rm = body["resourceMetrics"][0];
  EXPECT_EQ(Attr(rm["resource"], "outpost.box.id"), "box-7");
  EXPECT_EQ(Attr(rm["resource"], "outpost.boot.id"), "boot-1");
  EXPECT_EQ(Attr(rm["resource"], "outpost.record.seq"), "1");
  std::map<std::string, nlohmann::json> metrics;
  for (const auto& m : rm["scopeMetrics"][0]["metrics"]) metrics[m["name"]] = m;
  // Cumulative monotonic sum; the histogram under its OpenTelemetry name,
  // with per-bucket counts as strings.
  ASSERT_TRUE(metrics.count("outpost_completion_tokens_total"));
  EXPECT_EQ(metrics["outpost_completion_tokens_total"]["sum"]["aggregationTemporality"], 2);
  EXPECT_EQ(metrics["outpost_completion_tokens_total"]["sum"]["dataPoints"][0]["asDouble"], 50);
  ASSERT_TRUE(metrics.count("gen_ai.server.request.duration"));
  const auto& hp = metrics["gen_ai.server.request.duration"]["histogram"]["dataPoints"][0];
  EXPECT_EQ(hp["bucketCounts"], nlohmann::json({"0", "1", "0", "0"}));
  EXPECT_EQ(hp["count"], "1");
  EXPECT_EQ(Attr(hp, "gen_ai.operation.name"), "chat");
  // A success carries no error.type (OpenTelemetry sets it only on errors),
  // not an empty one.
  for (const auto& a : hp["attributes"]) EXPECT_NE(a["key"], "error.type") << hp.dump();
  // The queue's peak over the window, not only its last value.
  double peak = -1, last = -1;
  for (const auto& p : metrics["outpost_queue_depth"]["gauge"]["dataPoints"]) {
    if (Attr(p, "outpost.window.stat") == "max") peak = p["asDouble"];
    if (Attr(p, "outpost.window.stat") == "last") last = p["asDouble"];
  }
  EXPECT_EQ(peak, 9);
  EXPECT_EQ(last, 1);
  EXPECT_EQ(metrics["outpost.window.requests"]["gauge"]["dataPoints"][0]["asDouble"], 1);
  const auto& q = metrics["outpost.window.request_duration"]["summary"]["dataPoints"][0];
  EXPECT_EQ(q["count"], "1");
  EXPECT_GT(q["quantileValues"][0]["value"].get<double>(), 0.5);
  EXPECT_EQ(spool_->Stats().records, 0);
  EXPECT_EQ(spool_->Stats().acked_seq_max, 1);
  EXPECT_EQ(up->SendOne(), Uplink::SendResult::kIdle);
}

TEST_F(UplinkTest, TheWindowsLatenciesAreUsersNotABatchsLines) {
  auto up = Make();
  duration_->Observe(0.7);
  // A batch line that waited its turn in the lowest class.
  durations_->HistogramWith({"chat", "batch", ""}).Observe(1.8);
  durations_->HistogramWith({"chat", "batch", ""}).Observe(1.9);
  clock_.Advance(std::chrono::seconds(60));
  up->CloseWindow();
  ASSERT_EQ(up->SendOne(), Uplink::SendResult::kDelivered);
  const auto body = nlohmann::json::parse(transport_.sent.at(0).body);
  std::map<std::string, nlohmann::json> metrics;
  for (const auto& m : body["resourceMetrics"][0]["scopeMetrics"][0]["metrics"]) {
    metrics[m["name"]] = m;
  }
  // Every request counts as one; the latency quantiles are the user's alone.
  EXPECT_EQ(metrics["outpost.window.requests"]["gauge"]["dataPoints"][0]["asDouble"], 3);
  const auto& q = metrics["outpost.window.request_duration"]["summary"]["dataPoints"][0];
  EXPECT_EQ(q["count"], "1");
  for (const auto& v : q["quantileValues"]) EXPECT_LE(v["value"].get<double>(), 1.0) << q.dump();
  // The standard histogram keeps both, told apart by the service tier.
  std::set<std::string> tiers;
  for (const auto& p : metrics["gen_ai.server.request.duration"]["histogram"]["dataPoints"]) {
    tiers.insert(Attr(p, "openai.response.service_tier"));
  }
  EXPECT_EQ(tiers, (std::set<std::string>{"batch", "default"}));
}

struct RetryCase {
  std::string format;
  int status;
  bool retried;
};

TEST_F(UplinkTest, OnlyTheStatusesTheProtocolAllowsAreRetried) {
  const std::vector<RetryCase> cases = {
      {"otlp", 0, true},       {"otlp", 429, true},    {"otlp", 502, true},
      {"otlp", 503, true},     {"otlp", 504, true},    {"otlp", 400, false},
      {"otlp", 401, false},    {"otlp", 403, false},   {"otlp", 404, false},
      {"otlp", 413, false},    {"otlp", 500, false},   {"webhook", 500, true},
      {"webhook", 408, true},  {"webhook", 429, true}, {"webhook", 400, false},
      {"webhook", 422, false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.format + " " + std::to_string(c.status));
    while (auto r = spool_->Take(false)) ASSERT_TRUE(spool_->Ack(r->seq).ok());
    auto up = Make(c.format);
    up->CloseWindow();
    const int64_t seq = spool_->Stats().newest_seq;
    transport_.script = {{c.status, "", "", c.status == 0 ? "connection refused" : ""}};
    const auto r = up->SendOne();
    if (c.retried) {
      EXPECT_EQ(r, Uplink::SendResult::kRetryLater);
      EXPECT_GT(up->next_attempt_ms(), 0);
      auto again = spool_->Take(false);
      ASSERT_TRUE(again);
      EXPECT_EQ(again->seq, seq) << "the record stays, unchanged";
      spool_->Release(again->seq);
    } else {
      EXPECT_EQ(r, Uplink::SendResult::kRefused);
      auto gap = spool_->Take(false);
      ASSERT_TRUE(gap);
      EXPECT_EQ(gap->kind, "gap");
      EXPECT_NE(gap->body.find("HTTP " + std::to_string(c.status)), std::string::npos);
      spool_->Release(gap->seq);
    }
  }
}

TEST_F(UplinkTest, RetryAfterIsHonouredAndBackoffIsCapped) {
  auto up = Make();
  up->CloseWindow();
  transport_.script = {{503, "", "7", ""}};
  EXPECT_EQ(up->SendOne(), Uplink::SendResult::kRetryLater);
  EXPECT_EQ(up->next_attempt_ms(), 7000);
  // Without Retry-After: exponential with jitter, never past max_backoff.
  for (int i = 0; i < 30; ++i) {
    transport_.script = {{0, "", "", "timeout"}};
    EXPECT_EQ(up->SendOne(), Uplink::SendResult::kRetryLater);
    EXPECT_LE(up->next_attempt_ms(), 60000);
  }
  EXPECT_EQ(ParseRetryAfterMs("120", 0), 120000);
  EXPECT_EQ(ParseRetryAfterMs("Wed, 21 Oct 2015 07:28:00 GMT", 1445412480 - 30), 30000);
  EXPECT_EQ(ParseRetryAfterMs("soon", 0), -1);
  EXPECT_EQ(ParseRetryAfterMs("", 0), -1);
}

TEST_F(UplinkTest, APartialSuccessIsDeliveredAndNeverRetried) {
  auto up = Make();
  up->CloseWindow();
  transport_.script = {
      {200, R"({"partialSuccess":{"rejectedDataPoints":"3","errorMessage":"bad"}})", "", ""}};
  EXPECT_EQ(up->SendOne(), Uplink::SendResult::kDelivered);
  EXPECT_EQ(spool_->Stats().records, 0);
  EXPECT_EQ(transport_.sent.size(), 1u);
}

TEST_F(UplinkTest, AfterAnOutageTheNewestGoesFirstThenTheBacklogOldestFirst) {
  auto up = Make();
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(std::chrono::seconds(60));
    up->CloseWindow();
  }
  transport_.script = {{0, "", "", "refused"}};
  EXPECT_EQ(up->SendOne(), Uplink::SendResult::kRetryLater);
  std::vector<std::string> keys;
  while (up->SendOne() == Uplink::SendResult::kDelivered)
    keys.push_back(transport_.sent.back().key);
  EXPECT_EQ(keys,
            (std::vector<std::string>{"box-7:5", "box-7:1", "box-7:2", "box-7:3", "box-7:4"}));
  // The link events wait for the collector's next step.
  up->SampleOnce();
  std::vector<std::string> events;
  while (auto r = spool_->Take(false)) {
    events.push_back(nlohmann::json::parse(r->body)["name"]);
    ASSERT_TRUE(spool_->Ack(r->seq).ok());
  }
  EXPECT_EQ(events, (std::vector<std::string>{"outpost.link.lost", "outpost.link.restored"}));
}

TEST_F(UplinkTest, EventsAndGapsGoAsOtlpLogs) {
  auto up = Make();
  up->AddEvent({"outpost.hw.throttled", "WARN", 0, {{"hw_id", "cpu0"}}});
  up->SampleOnce();
  ASSERT_EQ(up->SendOne(), Uplink::SendResult::kDelivered);
  const auto& s = transport_.sent.back();
  EXPECT_EQ(s.url, "http://centre:4318/v1/logs");
  const auto lr = nlohmann::json::parse(s.body)["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0];
  EXPECT_EQ(lr["eventName"], "outpost.hw.throttled");
  EXPECT_EQ(lr["severityNumber"], 13);
  EXPECT_EQ(Attr(lr, "hw_id"), "cpu0");
}

TEST_F(UplinkTest, TheWebhookGetsOneObjectPerRecordWithQuantiles) {
  auto up = Make("webhook");
  duration_->Observe(1.5);
  up->CloseWindow();
  ASSERT_EQ(up->SendOne(), Uplink::SendResult::kDelivered);
  const auto& s = transport_.sent.back();
  EXPECT_EQ(s.url, "http://centre:4318");
  const auto b = nlohmann::json::parse(s.body);
  EXPECT_EQ(b["box_id"], "box-7");
  EXPECT_EQ(b["seq"], 1);
  EXPECT_EQ(b["kind"], "summary");
  EXPECT_GT(b["record"]["quantiles"]["duration_p50_s"].get<double>(), 1.0);
}

TEST_F(UplinkTest, AFailureRateSpikeIsAnEventOnce) {
  auto up = Make();
  auto& failed = durations_->HistogramWith({"chat", "default", "timeout"});
  for (int w = 0; w < 2; ++w) {
    for (int i = 0; i < 5; ++i) failed.Observe(0.1);
    duration_->Observe(0.1);
    up->CloseWindow();
  }
  int spikes = 0;
  while (auto r = spool_->Take(false)) {
    if (r->kind == "event" && r->body.find("outpost.failure_rate.spike") != std::string::npos)
      ++spikes;
    ASSERT_TRUE(spool_->Ack(r->seq).ok());
  }
  EXPECT_EQ(spikes, 1);
}

}  // namespace
}  // namespace outpost::telemetry
