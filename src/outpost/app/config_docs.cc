// ConfigKeyDocs — one line of help for each config key, with its default:
// what `outpost serve --help` prints and its flags are made from (main.cc).
// Kept apart from the parsing in config.cc (this file is prose, that one
// logic); a test checks that both cover the same keys.
#include "outpost/app/config.h"

namespace outpost::app {

const std::vector<ConfigKeyDoc>& ConfigKeyDocs() {
  static const auto* docs = new std::vector<ConfigKeyDoc>{
      {"model",
       "GGUF model file, or ID=PATH; repeat to serve several models, the first being the default; "
       "or NAME / NAME:VERSION from the model store (docs/lifecycle.md) "
       "(default: $OUTPOST_MODEL or the bootstrap's SmolLM2 135M Instruct)"},
      {"model_id", "model id clients send (default: the file name without .gguf)"},
      {"chat_template_file", "jinja chat template to use instead of the model's own"},
      {"host", "address to listen on (default 127.0.0.1)"},
      {"port", "TCP port (default 8080; 0 picks a free port)"},
      {"threads",
       "CPU threads for inference (default 0 = the CPUs this process may use: its affinity mask "
       "and cgroup CPU quota)"},
      {"threads_batch",
       "CPU threads for prompt (batched) work; outpost bench --tune suggests it (default 0 = "
       "threads)"},
      {"ctx_size", "context tokens per session, prompt + answer (default 4096)"},
      {"parallel", "concurrent sessions: auto or N; N that does not fit is refused (default auto)"},
      {"parallel_auto_max", "upper bound for parallel=auto (default 16)"},
      {"memory_budget",
       "memory the plan may use: auto or a size like 8GiB (default auto = available memory, capped "
       "by the cgroup memory limit: MemoryMax=, --memory)"},
      {"headroom", "safety margin on top of the planned peak, 0.2 or 20% (default 20%)"},
      {"kv_type", "KV cache element type: f16, q8_0, q4_0 (default f16)"},
      {"reasoning_format",
       "a thinking model's reasoning: auto (split off as reasoning_content) or none (left in the "
       "content); default auto"},
      {"batch_size", "max tokens per decode step (default 512)"},
      {"prefill_chunk", "max prompt tokens per step while others decode (default 256)"},
      {"step_budget",
       "target time of one step while others stream, e.g. 60ms: the prefill chunk is sized "
       "from measured step costs to stay under it; 0 = off (default 0)"},
      {"prefix_cache",
       "true: reuse the KV of prompt prefixes other sessions computed (default true)"},
      {"queue_length", "requests that may wait for a session; more get 503 (default 16)"},
      {"queue_wait", "max time in the queue before 503, e.g. 30s (default 30s)"},
      {"priority_aging",
       "a queued request of a lower service tier counts as arriving this much later per tier; 0 = "
       "strict tier order (default 5s)"},
      {"speculative_draft",
       "n-gram speculation: tokens guessed from a sequence's own text and verified in one step; "
       "pays where answers copy their input; 0 = off (default 0)"},
      {"speculative_max_batch",
       "no speculation while more sequences than this decode at once (default 4)"},
      {"batch_parallel",
       "batch lines (/v1/batches) run at once, at the lowest priority; 0 = Batch API off "
       "(default 4)"},
      {"responses_retention",
       "how long a Responses API answer stays stored for previous_response_id and GET "
       "/v1/responses/{id}, and an unused conversation (/v1/conversations) is kept, e.g. 30d, "
       "12h; 0 = none are stored (default 30d)"},
      {"batch_yield",
       "while a request above the batch class ran within this, batch work is rationed to "
       "batch_busy_tokens per step, e.g. 5s; 0 = never (default 5s)"},
      {"batch_busy_tokens",
       "batch-class tokens per engine step while users are active (default 1)"},
      {"max_body_size", "largest accepted request body, e.g. 4MiB (default 4MiB)"},
      {"http_threads",
       "HTTP worker threads = requests handled at once; idle connections need none (default 64)"},
      {"http_io_threads", "event-loop threads holding the HTTP connections (default 2)"},
      {"max_header_size", "largest accepted request head; larger gets 431 (default 16KiB)"},
      {"header_timeout",
       "a request head must arrive within this of its first byte, e.g. 10s (default 10s)"},
      {"body_timeout", "a request body must arrive within this (default 60s)"},
      {"idle_timeout", "an idle keep-alive connection is closed after this (default 600s)"},
      {"write_timeout",
       "a client that takes no response bytes for this long is cut off and its session freed "
       "(default 60s)"},
      {"history_interval",
       "the dashboard (GET /) keeps one point per interval for the last hour (default 5s)"},
      {"heap_arenas",
       "malloc arenas at most: fewer keep freed memory where every thread reuses it; 0 = "
       "glibc's default of 8 per core; the MALLOC_ARENA_MAX environment variable wins (default "
       "2)"},
      {"heap_release_interval",
       "every interval, give the C heap's free pages back to the kernel when it holds 1MiB or "
       "more of them, so resident memory is memory in use; 0 = never (default 30s)"},
      {"drain_timeout",
       "on SIGTERM, stop accepting and let requests in flight (streams too) finish for up to "
       "this long, e.g. 30s (default 30s)"},
      {"max_connections",
       "open connections in total; past it idle ones are closed first (default 8192)"},
      {"max_connections_per_client",
       "open connections per client address; past it that client's idle ones are closed first "
       "(default 1024)"},
      {"gpu_layers", "layers to offload when built with a GPU backend, -1 = all (default 0)"},
      {"routing_file",
       "YAML with upstreams (peer, central), tenants and routing policy (docs/routing.md)"},
      {"log_level", "trace, debug, info, warn, error (default info)"},
      {"api_key",
       "API key clients must send as 'Authorization: Bearer KEY' (also $OUTPOST_API_KEY; prefer "
       "api_key_file, since flags show in ps); default: none, the API is open"},
      {"api_key_file", "file with API keys, one per line ('#' comments)"},
      {"metrics_require_key", "true: /metrics needs a key too (default false)"},
      {"embeddings",
       "true: also serve POST /v1/embeddings (mean-pooled, normalised), with a second context of "
       "ctx_size tokens per model held in the memory budget (default false)"},
      {"tls_cert_file",
       "PEM certificate (chain) to serve HTTPS with; needs tls_key_file; SIGHUP reloads both"},
      {"tls_key_file", "PEM private key for tls_cert_file"},
      {"uplink_url",
       "send summaries and events to the centre: an OTLP/HTTP base URL (posts to /v1/metrics and "
       "/v1/logs) or, with uplink_format webhook, the URL to post to (default: off)"},
      {"uplink_format", "otlp or webhook (default otlp)"},
      {"uplink_token",
       "bearer token for the uplink (also $OUTPOST_UPLINK_TOKEN; prefer the variable)"},
      {"uplink_tls_ca_file", "CA file to check the centre's certificate (default: system CAs)"},
      {"uplink_interval", "one summary per interval (default 60s)"},
      {"uplink_timeout", "one uplink POST may take this long (default 30s)"},
      {"uplink_max_backoff", "longest wait between retries while the centre is away (default 5m)"},
      {"uplink_spool_size",
       "bound on records waiting for the centre; summaries merge past 80%, the oldest records "
       "give way to a gap record past 100% (default 64MiB)"},
      {"pinned_cache_size",
       "bound on <state_dir>/pinned, the saved pinned_prompts: each start removes the least "
       "recently used files of other models or settings past it (default 1GiB)"},
      {"state_dir",
       "directory for the uplink spool, the Batch API's store, the stored responses and "
       "conversations, and the saved pinned prompts (default $STATE_DIRECTORY, else "
       "~/.local/state/outpost)"},
      {"box_id", "this box's name at the centre (default: the host name)"},
      {"audit_dir",
       "write the tamper-evident audit log (one hash-chained JSON line per request, no content) "
       "into this directory; 'state' = <state_dir>/audit (default: off)"},
      {"audit_checkpoint_every", "records between signed checkpoints (default 1000)"},
      {"audit_checkpoint_interval",
       "a signed checkpoint this long after the last record at the latest (default 60s)"},
      {"model_store",
       "the model store (outpost model ...); 'model' may then be NAME (its active version) or "
       "NAME:VERSION (default <state_dir>/models)"},
      {"admin_key_file",
       "file holding the key for /admin/ (also $OUTPOST_ADMIN_KEY); default: none, /admin/ is "
       "off"},
      {"model_hot_standby",
       "keep the version a new one replaced loaded, so a rollback is instant (default true)"},
      {"signature_policy",
       "what a missing or bad model signature does on pull/import through /admin/: off, warn "
       "(logged) or enforce (refused); per source as PREFIX=POLICY,…,*=POLICY (default warn)"},
      {"trusted_keys",
       "comma-separated PEM public keys (Ed25519, ECDSA) whose model signatures are trusted"},
      {"pull_window",
       "daily window, local time (e.g. 22:00-06:00), in which model pulls through /admin/ move "
       "bytes; outside it they wait, and pause when it closes (default: always)"},
      {"fleet_url",
       "poll this signed desired-state document (https://, http://, oci:// or a path) and "
       "converge the stored models to it: pull, canary or activate (docs/lifecycle.md; default: "
       "off)"},
      {"fleet_interval", "how often the desired state is polled (default 60s)"},
      {"fleet_site", "this box's site, matched against the document's 'sites' (default: box_id)"},
      {"fleet_labels", "this box's labels as KEY=VALUE,…, matched against the document's 'labels'"},
      {"fleet_report_url", "POST the observed state (generation, phase, versions) here"},
      {"fleet_token",
       "bearer token for fleet_url and fleet_report_url (also $OUTPOST_FLEET_TOKEN; prefer the "
       "variable)"},
      {"fleet_tls_ca_file", "CA file for fleet_url and fleet_report_url (default: system CAs)"},
      {"fleet_trusted_keys",
       "comma-separated PEM public keys that may sign the desired state (default: trusted_keys)"},
      {"temperature",
       "default sampling temperature for requests without one; 0 = greedy (default: the GGUF's "
       "general.sampling.temp, else 0.8)"},
      {"top_k", "default top-k; 0 = off (default: the GGUF's, else 40)"},
      {"top_p", "default top-p; 1 = off (default: the GGUF's, else 0.95)"},
      {"min_p", "default min-p; 0 = off (default: the GGUF's, else 0.05)"},
      {"repeat_penalty", "default repetition penalty; 1 = off (default: the GGUF's, else 1)"},
      {"reasoning_budget",
       "a thinking model's thinking tokens per answer, at most; then the block is closed for it "
       "(default -1 = no limit)"},
  };
  return *docs;
}

}  // namespace outpost::app
