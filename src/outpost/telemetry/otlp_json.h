// OTLP/HTTP JSON and webhook bodies for spooled uplink records.
//
// A summary becomes an ExportMetricsServiceRequest (POST /v1/metrics), an
// event or a gap record an ExportLogsServiceRequest (POST /v1/logs), in the
// OTLP JSON encoding: lowerCamelCase keys, enums as integers (temporality 2 =
// cumulative), 64-bit integers as decimal strings. Counters become monotonic
// cumulative sums, the GenAI histograms cumulative explicit-bucket
// histograms under their OpenTelemetry names (gen_ai.server.*, unit s),
// gauges four points each (attribute outpost.window.stat = last|min|max|mean),
// and the window's latencies summaries with p50/p95/p99.
//
// Every body carries the record's idempotency key as resource attributes
// (outpost.box.id, outpost.boot.id, outpost.record.seq, and
// outpost.record.first_seq for a merged summary); the uplink also sends it as
// the Idempotency-Key header.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "outpost/telemetry/spool.h"

namespace outpost::telemetry {

struct UplinkIdentity {
  std::string box_id;
  std::string host_name;
  std::string version;
};

// How the record is being sent: `present` = the newest record sent ahead of
// a backlog; `backlog` = records pending at the time.
struct SendContext {
  bool present = false;
  int64_t backlog = 0;
};

// "/v1/metrics" for summaries, "/v1/logs" for events and gaps.
const char* OtlpPath(const SpoolRecord& r);
std::string OtlpBody(const SpoolRecord& r, const UplinkIdentity& id, const SendContext& ctx);

// The webhook alternative: one JSON object per record,
// {"box_id", "boot_id", "seq", "first_seq", "kind", "time_ms", "present",
//  "backlog", "record": {...}} — a summary's record gains "quantiles".
std::string WebhookBody(const SpoolRecord& r, const UplinkIdentity& id, const SendContext& ctx);

// "<box id>:<seq>": the Idempotency-Key header's value.
std::string IdempotencyKey(const SpoolRecord& r, const UplinkIdentity& id);

}  // namespace outpost::telemetry
