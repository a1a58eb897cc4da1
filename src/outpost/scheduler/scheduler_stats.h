// The scheduler's stats, declared once (telemetry/stats.h), one series per
// served model (base label "model").
#pragma once

#include "outpost/telemetry/stats.h"

// clang-format off
#define OUTPOST_SCHEDULER_STATS(COUNTER, GAUGE, HISTOGRAM, COUNTER_VEC)                          \
  COUNTER(prompt_tokens, "outpost_prompt_tokens_total", "Prompt tokens processed.")              \
  COUNTER(prompt_tokens_cached, "outpost_prompt_tokens_cached_total",                            \
          "Prompt tokens whose KV was reused from the prefix cache instead of computed.")        \
  COUNTER(completion_tokens, "outpost_completion_tokens_total", "Completion tokens generated.")  \
  COUNTER(spec_drafted, "outpost_speculative_draft_tokens_total",                               \
          "Tokens guessed by n-gram speculation and verified in a step.")                        \
  COUNTER(spec_accepted, "outpost_speculative_accepted_tokens_total",                           \
          "Guessed tokens the model confirmed (each saved a step for its sequence).")            \
  COUNTER(batch_steps_interrupted, "outpost_batch_steps_interrupted_total",                     \
          "Engine steps of batch-class work cut short for an arriving request of a higher "     \
          "class (the work is redone).")                                                         \
  COUNTER(sequences_moved, "outpost_sequences_moved_total",                                    \
          "Running requests moved to another session slot to close a hole between running "     \
          "ones (each run of consecutive slots is a pass of its own over the weights).")         \
  COUNTER(rejected, "outpost_rejected_total",                                                    \
          "Requests rejected with 503 because queue or wait limits were exceeded.")              \
  COUNTER_VEC(rejected_by_reason, "outpost_requests_rejected_total",                             \
              "Requests turned away, by reason (queue_full, queue_timeout, displaced, "          \
              "preempted, shutting_down).",                                                      \
              "reason")                                                                          \
  COUNTER_VEC(finished, "outpost_requests_finished_total",                                       \
              "Requests that ran, by how they ended (stop, length, cancelled, error, "           \
              "preempted).",                                                                     \
              "finish_reason")                                                                   \
  HISTOGRAM(time_to_first_token, "outpost_time_to_first_token_seconds",                          \
            "Time from request arrival to its first generated token (batch lines excluded).",    \
            ::outpost::telemetry::LatencyBounds())                                                \
  HISTOGRAM(inter_token_latency, "outpost_inter_token_latency_seconds",                          \
            "Time between consecutive generated tokens of one request (batch lines excluded).",  \
            ::outpost::telemetry::TokenGapBounds())                                               \
  HISTOGRAM(queue_time, "outpost_request_queue_time_seconds",                                   \
            "Time from arrival until a session takes a request (0 when one is free; batch "      \
            "lines excluded).",                                                                  \
            ::outpost::telemetry::LatencyBounds())                                                \
  HISTOGRAM(request_duration, "outpost_request_duration_seconds",                                \
            "Time from request arrival to its last token (batch lines excluded).",               \
            ::outpost::telemetry::LatencyBounds())                                                \
  GAUGE(queue_depth, "outpost_queue_depth", "Requests waiting for a session.")                   \
  GAUGE(active_sequences, "outpost_active_sequences", "Sequences being prefilled or decoded.")   \
  GAUGE(max_sessions, "outpost_max_sessions", "Concurrent sessions admitted (parallel).")        \
  GAUGE(kv_bytes_used, "outpost_kv_bytes_used",                                                  \
        "KV cache bytes holding tokens (live sequences and the prefix cache).")                  \
  GAUGE(prefix_cache_tokens, "outpost_prefix_cache_tokens",                                      \
        "Tokens of KV idle sessions keep for reuse (reclaimable at once).")                      \
  GAUGE(kv_bytes_limit, "outpost_kv_bytes_limit", "KV cache bytes allocated for all sessions.")  \
  GAUGE(kv_usage_ratio, "outpost_kv_usage_ratio",                                                \
        "KV cache holding tokens as a share of what is allocated (0 to 1).")                     \
  GAUGE(decode_tokens_per_second, "outpost_decode_tokens_per_second",                            \
        "Aggregate decode rate over the last seconds of work.")                                  \
  GAUGE(prefill_tokens_per_second, "outpost_prefill_tokens_per_second",                          \
        "Aggregate prompt-processing rate over the last seconds of work.")                       \
  GAUGE(prefill_chunk_tokens, "outpost_prefill_chunk_tokens",                                    \
        "Prompt tokens a step may take while others decode (sized by step_budget when set).")
// clang-format on

namespace outpost::scheduler {

OUTPOST_DEFINE_STATS(SchedulerStats, OUTPOST_SCHEDULER_STATS);

}  // namespace outpost::scheduler
