// ServeConfig — every setting of `outpost serve`, from a YAML file (--config)
// with command-line flags overriding it. docs/configuration.md lists them all.
//
// Both sources go through ApplySetting(), so a key is validated the same way
// whether it came from YAML or a flag; errors name the key and the problem.
// Value type; built once at start and then read-only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "outpost/models/model_runtime.h"
#include "outpost/util/status.h"

namespace outpost::app {

// A further model served beside the first (`models:` list, repeated --model).
struct ExtraModel {
  std::string path;
  std::string id;  // "" = the file name without .gguf
  std::string chat_template_file;
};

// A prompt prefix computed as each model loads (`pinned_prompts:` list;
// scheduler/pinned_prompt.h): a system message or the start of a raw prompt.
struct PinnedPromptConfig {
  std::string system;  // the text (system_file is read at load)
  std::string prompt;
  std::string tenant;  // "" = requests without a tenant key
  std::string model;   // the served model id it is for; "" = every model
  std::string scope;   // the tenant's cache scope; set by `serve` from the routing file
};

struct ServeConfig {
  std::string model;               // GGUF path; default: the bootstrap's default model
  std::string model_id;            // id clients use; default: file name without .gguf
  std::string chat_template_file;  // jinja file overriding the GGUF's chat template
  // A thinking model's reasoning: "auto" splits it off the answer
  // (reasoning_content), "none" leaves it in the content; requests may say.
  std::string reasoning_format = "auto";
  std::string host = "127.0.0.1";
  int port = 8080;
  int threads = 0;                // 0 = usable CPUs (util/cpus.h)
  int threads_batch = 0;          // prompt (batched) work; 0 = threads
  int ctx_size = 4096;            // tokens per session (prompt + answer)
  int parallel = 0;               // 0 = auto (as many sessions as fit, up to parallel_auto_max)
  int parallel_auto_max = 16;     // cap for parallel: auto
  uint64_t memory_budget = 0;     // bytes; 0 = detect available memory
  double headroom = 0.20;         // fraction added on top of the planned peak
  std::string kv_type = "f16";    // f16 | q8_0 | q4_0
  int batch_size = 512;           // max tokens per decode step
  int prefill_chunk = 256;        // max prompt tokens per step while others decode
  bool prefix_cache = true;       // reuse cached prompt prefixes across sessions
  int queue_length = 16;          // requests that may wait for a session; 0 = none
  int64_t queue_wait_ms = 30000;  // max wait in the queue before 503
  int64_t priority_aging_ms = 5000;
  // The Batch API (/v1/files, /v1/batches; <state_dir>/batches.db): lines
  // run at once in the background; 0 turns the API off.
  int batch_parallel = 4;
  // Stored Responses API answers (<state_dir>/responses.db): how long each
  // is kept for previous_response_id and GET; 0 = none are stored.
  int64_t responses_retention_ms = 30LL * 24 * 3600 * 1000;
  // Batch work beside users (scheduler::SchedulerOptions): while a request
  // above the batch class ran within batch_yield_ms, a step carries at most
  // batch_busy_tokens batch tokens; 0 ms = off.
  int64_t batch_yield_ms = 5000;
  int batch_busy_tokens = 1;
  // Draftless n-gram speculation (scheduler.h): guesses per sequence and
  // step (0 = off), and the decoding sequences past which none are made.
  int speculative_draft = 0;
  int speculative_max_batch = 4;
  int64_t step_budget_ms = 0;  // 0 = off (scheduler::SchedulerOptions)
  uint64_t max_body_size = 4ull << 20;
  int http_threads = 64;
  int http_io_threads = 2;
  uint64_t max_header_size = 16ull << 10;
  int64_t header_timeout_ms = 10000;
  int64_t body_timeout_ms = 60000;
  int64_t idle_timeout_ms = 600000;
  int64_t write_timeout_ms = 60000;
  int64_t drain_timeout_ms = 30000;    // SIGTERM: let requests in flight finish this long
  int64_t history_interval_ms = 5000;  // the dashboard's last hour: one point per interval
  // Every interval, the C heap's free pages go back to the kernel when the
  // allocator holds at least 1 MiB of them (util/heap.h); 0 = never.
  int64_t heap_release_interval_ms = 30000;
  int32_t heap_arenas = 2;  // malloc arenas at most; 0 = glibc's default (8 per core)
  int max_connections = 8192;
  int max_connections_per_client = 1024;
  int gpu_layers = 0;        // layers to offload when built with a GPU backend; -1 = all
  std::string routing_file;  // YAML with upstreams, tenants and routing policy ("" = all local)
  std::string log_level = "info";  // trace | debug | info | warn | error
  // API keys: when any is set, every API path but /health and /ready needs
  // "Authorization: Bearer KEY" (the routing file's tenant keys then count too).
  std::string api_key;               // also $OUTPOST_API_KEY
  std::string api_key_file;          // one key per line
  bool metrics_require_key = false;  // /metrics behind the key as well
  bool embeddings = false;
  // HTTPS: both or neither; SIGHUP reloads them (certificate renewal).
  std::string tls_cert_file;
  std::string tls_key_file;  // also serve /v1/embeddings (a second context per model)
  // Sampling defaults for requests that leave a knob unset (only the set ones
  // apply; the rest come from the GGUF, else llama.cpp's defaults).
  engine::SamplingParams sampling;
  // The uplink (docs/telemetry.md): summaries and events to the centre.
  std::string uplink_url;              // "" = off; OTLP base URL or the webhook's URL
  std::string uplink_format = "otlp";  // otlp | webhook
  std::string uplink_token;            // bearer token; also $OUTPOST_UPLINK_TOKEN
  std::string uplink_tls_ca_file;
  int64_t uplink_interval_ms = 60000;
  int64_t uplink_timeout_ms = 30000;
  int64_t uplink_max_backoff_ms = 300000;
  uint64_t uplink_spool_size = 64ull << 20;
  // Where state lives (the uplink spool): default $STATE_DIRECTORY (systemd),
  // else ${XDG_STATE_HOME:-~/.local/state}/outpost.
  std::string state_dir;
  std::string box_id;  // this box's name at the centre; default: the host name
  // The tamper-evident audit log (docs/telemetry.md): "" = off.
  std::string audit_dir;
  int audit_checkpoint_every = 1000;             // records between signed checkpoints
  int64_t audit_checkpoint_interval_ms = 60000;  // or this long after the last record
  // The model store and its lifecycle (docs/lifecycle.md).
  std::string model_store;                // "" = <state_dir>/models
  std::string admin_key_file;             // the /admin/ key (also $OUTPOST_ADMIN_KEY); "" = off
  bool model_hot_standby = true;          // keep the replaced version loaded for rollback
  std::string signature_policy = "warn";  // off|warn|enforce, or PREFIX=POLICY,…,*=POLICY
  std::string trusted_keys;               // comma-separated PEM public key files
  std::string pull_window;                // HH:MM-HH:MM: /admin/ pulls move bytes only then
  // The fleet's desired state (docs/lifecycle.md, "A fleet").
  std::string fleet_url;  // "" = off; https://, http://, oci:// or a path
  int64_t fleet_interval_ms = 60000;
  std::string fleet_site;        // this box's site, for the document's selectors
  std::string fleet_labels;      // KEY=VALUE,…
  std::string fleet_report_url;  // where the observed state is POSTed ("" = nowhere)
  std::string fleet_token;       // bearer token for both (also $OUTPOST_FLEET_TOKEN)
  std::string fleet_tls_ca_file;
  std::string fleet_trusted_keys;  // keys that may sign the document ("" = trusted_keys)
  // Models served beside `model`, each with its own scheduler, all planned
  // against the one memory budget; the first model is the default.
  std::vector<ExtraModel> extra_models;
  // Prompt prefixes every model computes as it loads, saved under
  // <state_dir>/pinned so that the next start reads them back; that
  // directory is kept under pinned_cache_size (least recently used first).
  std::vector<PinnedPromptConfig> pinned_prompts;
  uint64_t pinned_cache_size = 1ull << 30;
};

// All keys accepted in YAML (snake_case) and as flags (--kebab-case).
const std::vector<std::string>& ConfigKeys();

// Each key's help text with its default, in the order `outpost serve --help`
// shows them (config_docs.cc); a test checks that they and the setters cover
// the same keys.
struct ConfigKeyDoc {
  const char* key;
  const char* help;
};
const std::vector<ConfigKeyDoc>& ConfigKeyDocs();

// Sets one key from its text form. Errors name the key and the allowed values.
Status ApplySetting(ServeConfig* cfg, const std::string& key, const std::string& value);

// Reads a YAML mapping of keys to scalars, plus `models:`, a list of
// {path, id, chat_template_file} mappings (the first becomes `model`, the
// rest extra_models). Errors: NotFound (no file), InvalidArgument (syntax
// error with line, unknown key, bad value).
Status LoadConfigFile(const std::string& path, ServeConfig* cfg);

// The model runtime's options from the serve settings: the first model
// (index 0) or extra_models[index - 1].
models::ModelRuntimeOptions ModelRuntimeOptionsFrom(const ServeConfig& cfg, size_t index = 0);

// Sets the served models from repeated --model flags: "PATH" or "ID=PATH".
// The first replaces `model` (and `model_id` when given); the rest replace
// extra_models. Errors: InvalidArgument naming the flag value.
Status ApplyModelFlags(ServeConfig* cfg, const std::vector<std::string>& values);

// The state directory: cfg.state_dir, else $STATE_DIRECTORY, else
// ${XDG_STATE_HOME:-$HOME/.local/state}/outpost.
std::string StateDir(const ServeConfig& cfg);
// The machine's host name ("outpost" when it has none).
std::string HostName();
// This box's name at the centre: box_id, else the host name.
std::string BoxId(const ServeConfig& cfg);

// Default model path: $OUTPOST_MODEL, else the bootstrap's cached default model.
std::string DefaultModelPath();

}  // namespace outpost::app
