#include "outpost/app/config.h"

#include "mocks/temp_file.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace outpost::app {
namespace {

std::string WriteTemp(const std::string& text) {
  return outpost::testing::TempFile(text);
}

TEST(Config, YamlSetsEveryKindOfValue) {
  ServeConfig c;
  const auto path = WriteTemp(
      "model: /m.gguf\nport: 9000\nparallel: 4\nmemory_budget: 2GiB\nheadroom: 25%\n"
      "kv_type: q8_0\nqueue_wait: 5s\npriority_aging: 250ms\nmax_body_size: 1MiB\nctx_size: "
      "2048\nbatch_yield: 750ms\nbatch_busy_tokens: 3\nresponses_retention: 12h\n"
      "heap_arenas: 0\nheap_release_interval: 0\n");
  ASSERT_TRUE(LoadConfigFile(path, &c).ok());
  EXPECT_EQ(c.model, "/m.gguf");
  EXPECT_EQ(c.port, 9000);
  EXPECT_EQ(c.parallel, 4);
  EXPECT_EQ(c.memory_budget, 2ull << 30);
  EXPECT_DOUBLE_EQ(c.headroom, 0.25);
  EXPECT_EQ(c.kv_type, "q8_0");
  EXPECT_EQ(c.queue_wait_ms, 5000);
  EXPECT_EQ(c.priority_aging_ms, 250);
  EXPECT_EQ(c.max_body_size, 1u << 20);
  EXPECT_EQ(c.ctx_size, 2048);
  EXPECT_EQ(c.batch_yield_ms, 750);
  EXPECT_EQ(c.batch_busy_tokens, 3);
  EXPECT_EQ(c.responses_retention_ms, 12LL * 3600000);
  EXPECT_EQ(ServeConfig().responses_retention_ms, 30LL * 86400000);  // OpenAI's 30 days
  EXPECT_EQ(c.heap_arenas, 0);                                       // glibc's default
  EXPECT_EQ(c.heap_release_interval_ms, 0);                          // never
  EXPECT_EQ(ServeConfig().heap_arenas, 2);
  EXPECT_EQ(ServeConfig().heap_release_interval_ms, 30000);
}

TEST(Config, UplinkKeysAndTheStateDirectory) {
  ServeConfig c;
  ASSERT_TRUE(LoadConfigFile(WriteTemp("uplink_url: https://centre.example:4318/\n"
                                       "uplink_format: webhook\nuplink_interval: 2m\n"
                                       "uplink_spool_size: 1MiB\nbox_id: mine-3.line_2\n"),
                             &c)
                  .ok());
  EXPECT_EQ(c.uplink_url, "https://centre.example:4318");  // the trailing slash goes
  EXPECT_EQ(c.uplink_format, "webhook");
  EXPECT_EQ(c.uplink_interval_ms, 120000);
  EXPECT_EQ(c.uplink_spool_size, 1u << 20);
  EXPECT_EQ(c.box_id, "mine-3.line_2");
  c.state_dir = "/srv/outpost";
  EXPECT_EQ(StateDir(c), "/srv/outpost");
  c.state_dir.clear();
  setenv("STATE_DIRECTORY", "/var/lib/outpost:/var/lib/other", 1);
  EXPECT_EQ(StateDir(c), "/var/lib/outpost");
  unsetenv("STATE_DIRECTORY");
}

TEST(Config, FlagsOverrideFileThroughTheSameValidation) {
  ServeConfig c;
  ASSERT_TRUE(LoadConfigFile(WriteTemp("parallel: 4\n"), &c).ok());
  ASSERT_TRUE(ApplySetting(&c, "parallel", "auto").ok());
  EXPECT_EQ(c.parallel, 0);
  EXPECT_TRUE(LoadConfigFile(WriteTemp(""), &c).ok());  // empty file: defaults
}

struct BadConfig {
  const char* yaml;
  const char* key;
  const char* message_part;
};

void PrintTo(const BadConfig& c, std::ostream* os) {
  *os << c.yaml;
}

class BadConfigs : public ::testing::TestWithParam<BadConfig> {};

TEST_P(BadConfigs, NameKeyAndProblem) {
  ServeConfig c;
  Status st = LoadConfigFile(WriteTemp(GetParam().yaml), &c);
  ASSERT_FALSE(st.ok()) << GetParam().yaml;
  EXPECT_EQ(st.param(), GetParam().key);
  EXPECT_NE(st.message().find(GetParam().message_part), std::string::npos) << st.message();
}

INSTANTIATE_TEST_SUITE_P(
    Table, BadConfigs,
    ::testing::Values(
        BadConfig{"prot: 80\n", "prot", "unknown key 'prot'"},
        BadConfig{"port: 99999\n", "port", "between 0 and 65535"},
        BadConfig{"port: eighty\n", "port", "must be an integer"},
        BadConfig{"parallel: many\n", "parallel", "'auto' or an integer"},
        BadConfig{"parallel: 0\n", "parallel", "'auto' or an integer"},
        BadConfig{"memory_budget: lots\n", "memory_budget", "not a size"},
        BadConfig{"headroom: -5%\n", "headroom", "between 0% and 400%"},
        BadConfig{"kv_type: f8\n", "kv_type", "one of f16, q8_0, q4_0"},
        BadConfig{"reasoning_format: deepseek\n", "reasoning_format", "one of auto, none"},
        BadConfig{"reasoning_budget: -5\n", "reasoning_budget", "between -1 and"},
        BadConfig{"reasoning_budget: lots\n", "reasoning_budget", "must be a number"},
        BadConfig{"queue_wait: soon\n", "queue_wait", "not a duration"},
        BadConfig{"priority_aging: -1s\n", "priority_aging", "negative"},
        BadConfig{"priority_aging: 5y\n", "priority_aging", "unit"},
        BadConfig{"step_budget: 2m\n", "step_budget", "at most 60000ms"},
        BadConfig{"threads_batch: -2\n", "threads_batch", "between 0"},
        BadConfig{"threads_batch: many\n", "threads_batch", "integer"},
        BadConfig{"batch_parallel: 2000\n", "batch_parallel", "between 0"},
        BadConfig{"speculative_draft: 17\n", "speculative_draft", "between 0 and 16"},
        BadConfig{"speculative_max_batch: 0\n", "speculative_max_batch", "between 1"},
        BadConfig{"batch_yield: 2h\n", "batch_yield", "at most 3600000ms"},
        BadConfig{"batch_yield: -1s\n", "batch_yield", "negative"},
        BadConfig{"responses_retention: forever\n", "responses_retention", "not a duration"},
        BadConfig{"responses_retention: 11y\n", "responses_retention", "unknown duration unit"},
        BadConfig{"responses_retention: 4000d\n", "responses_retention", "at most"},
        BadConfig{"batch_busy_tokens: 0\n", "batch_busy_tokens", "between 1"},
        BadConfig{"ctx_size: 4\n", "ctx_size", "between 16"},
        BadConfig{"log_level: loud\n", "log_level", "one of trace"},
        BadConfig{"uplink_url: ftp://centre\n", "uplink_url", "http:// or https://"},
        BadConfig{"uplink_format: kafka\n", "uplink_format", "one of otlp, webhook"},
        BadConfig{"uplink_interval: 10ms\n", "uplink_interval", "between 100ms"},
        BadConfig{"uplink_max_backoff: never\n", "uplink_max_backoff", "duration"},
        BadConfig{"uplink_spool_size: 1KiB\n", "uplink_spool_size", "between 64KiB"},
        BadConfig{"uplink_spool_size: big\n", "uplink_spool_size", "not a size"},
        BadConfig{"pinned_cache_size: 512KiB\n", "pinned_cache_size", "between 1MiB and 1TiB"},
        BadConfig{"pinned_cache_size: 2TiB\n", "pinned_cache_size", "between 1MiB and 1TiB"},
        BadConfig{"pinned_cache_size: -1\n", "pinned_cache_size", "pinned_cache_size"},
        BadConfig{"box_id: 'site 1'\n", "box_id", "letters, digits"},
        BadConfig{"fleet_url: ftp://central/state\n", "fleet_url", "oci://"},
        BadConfig{"fleet_url: state.json\n", "fleet_url", "absolute path"},
        BadConfig{"fleet_interval: soon\n", "fleet_interval", "duration"},
        BadConfig{"fleet_labels: line\n", "fleet_labels", "KEY=VALUE"},
        BadConfig{"fleet_labels: line=a,=b\n", "fleet_labels", "KEY=VALUE"},
        BadConfig{"fleet_report_url: ftp://central\n", "fleet_report_url", "http:// or https://"},
        BadConfig{"temperature: 3\n", "temperature", "between 0 and 2"},
        BadConfig{"top_p: 0\n", "top_p", "between 0.0001 and 1"},
        BadConfig{"top_k: many\n", "top_k", "a number"},
        BadConfig{"min_p: -1\n", "min_p", "between 0 and 1"},
        BadConfig{"repeat_penalty: 0\n", "repeat_penalty", "between 0.01"},
        BadConfig{"embeddings: yes\n", "embeddings", "true or false"},
        BadConfig{"metrics_require_key: 1\n", "metrics_require_key", "true or false"},
        BadConfig{"model_hot_standby: maybe\n", "model_hot_standby", "true or false"},
        BadConfig{"pull_window: nights\n", "pull_window", "HH:MM-HH:MM"},
        BadConfig{"signature_policy: strict\n", "signature_policy", "must be off, warn or enforce"},
        BadConfig{"signature_policy: oci://r/=maybe\n", "signature_policy",
                  "entry 'oci://r/=maybe'"},
        BadConfig{"port: [1, 2]\n", "port", "single value"},
        BadConfig{"port: 1\n  bad: indent: here\n", "config", "YAML syntax error"},
        BadConfig{"- a\n- b\n", "config", "must be a mapping"},
        BadConfig{"models: 5\n", "models", "non-empty list"},
        BadConfig{"models: []\n", "models", "non-empty list"},
        BadConfig{"models:\n  - a.gguf\n", "models", "must be a mapping"},
        BadConfig{"models:\n  - {id: a}\n", "models", "'models[].path' is required"},
        BadConfig{"models:\n  - {path: a.gguf, size: 7B}\n", "models",
                  "unknown key 'models[].size'"},
        BadConfig{"pinned_prompts: be brief\n", "pinned_prompts", "non-empty list"},
        BadConfig{"pinned_prompts: []\n", "pinned_prompts", "non-empty list"},
        BadConfig{"pinned_prompts:\n  - be brief\n", "pinned_prompts[0]", "must be a mapping"},
        BadConfig{"pinned_prompts:\n  - {tenant: lab}\n", "pinned_prompts[0]",
                  "exactly one of system, system_file or prompt, not 0"},
        BadConfig{"pinned_prompts:\n  - {system: a, prompt: b}\n", "pinned_prompts[0]",
                  "exactly one of system, system_file or prompt, not 2"},
        BadConfig{"pinned_prompts:\n  - {system: a}\n  - {sytem: b}\n", "pinned_prompts[1].sytem",
                  "unknown key 'pinned_prompts[1].sytem'"},
        BadConfig{"pinned_prompts:\n  - {system: ''}\n", "pinned_prompts[0].system",
                  "1 byte to 1 MiB"},
        BadConfig{"pinned_prompts:\n  - {system: [a, b]}\n", "pinned_prompts[0].system",
                  "single text value"},
        BadConfig{"pinned_prompts:\n  - {system_file: /nonexistent/prompt.txt}\n",
                  "pinned_prompts[0].system_file", "'/nonexistent/prompt.txt' cannot be read"},
        BadConfig{"pinned_prompts:\n  - {system_file: /dev/zero}\n",
                  "pinned_prompts[0].system_file", "not a readable regular file"},
        BadConfig{"pinned_prompts:\n  - {system_file: /tmp}\n", "pinned_prompts[0].system_file",
                  "not a readable regular file"},
        BadConfig{"pinned_prompts:\n  - {system: a, model: ''}\n", "pinned_prompts[0].model",
                  "must name a served model"},
        BadConfig{"pinned_prompts:\n  - {system: a, model: [x, y]}\n", "pinned_prompts[0].model",
                  "single text value"},
        // Found by reading after fuzzing: these threw out of the loader.
        BadConfig{"[a, b]: 1\n", "config", "a key must be a plain name"},
        BadConfig{"models:\n  - {[x]: a.gguf}\n", "models", "a key must be a plain name"},
        BadConfig{"header_timeout: 5ms\n", "header_timeout", "between 100ms"},
        BadConfig{"write_timeout: never\n", "write_timeout", "not a duration"},
        BadConfig{"max_connections: 2\n", "max_connections", "between 16"},
        BadConfig{"heap_arenas: -1\n", "heap_arenas", "between 0"},
        BadConfig{"heap_arenas: 5000\n", "heap_arenas", "between 0"},
        BadConfig{"heap_arenas: two\n", "heap_arenas", "heap_arenas"},
        BadConfig{"heap_release_interval: often\n", "heap_release_interval", "not a duration"},
        BadConfig{"heap_release_interval: 25h\n", "heap_release_interval", "at most"},
        BadConfig{"max_header_size: 0\n", "max_header_size", "greater than 0"}));

TEST(Config, ModelsListServesSeveralModelsTheFirstBeingTheDefault) {
  ServeConfig c;
  ASSERT_TRUE(LoadConfigFile(WriteTemp("models:\n  - {path: /a.gguf, id: small}\n"
                                       "  - {path: /b.gguf}\n  - path: /c.gguf\n    id: big\n"),
                             &c)
                  .ok());
  EXPECT_EQ(c.model, "/a.gguf");
  EXPECT_EQ(c.model_id, "small");
  ASSERT_EQ(c.extra_models.size(), 2u);
  EXPECT_EQ(c.extra_models[0].path, "/b.gguf");
  EXPECT_EQ(c.extra_models[1].id, "big");
  EXPECT_EQ(ModelRuntimeOptionsFrom(c, 2).path, "/c.gguf");
  EXPECT_EQ(ModelRuntimeOptionsFrom(c, 0).id, "small");
}

TEST(Config, PinnedPromptsReachEveryModelWithTheirFileDirectory) {
  const std::string prompt_file = WriteTemp("You are the plant's assistant.\nBe brief.");
  ServeConfig c;
  ASSERT_TRUE(LoadConfigFile(WriteTemp("state_dir: /var/lib/outpost\n"
                                       "pinned_cache_size: 300MiB\n"
                                       "models:\n  - {path: /a.gguf}\n  - {path: /b.gguf}\n"
                                       "pinned_prompts:\n"
                                       "  - system_file: " +
                                       prompt_file +
                                       "\n"
                                       "  - {prompt: 'Q: torque?', tenant: lab}\n"
                                       "  - {system: 'Answer in German.', model: b}\n"),
                             &c)
                  .ok());
  ASSERT_EQ(c.pinned_prompts.size(), 3u);
  EXPECT_EQ(c.pinned_prompts[0].system, "You are the plant's assistant.\nBe brief.");
  EXPECT_EQ(c.pinned_prompts[0].model, "");
  EXPECT_EQ(c.pinned_prompts[2].model, "b");
  EXPECT_EQ(c.pinned_prompts[1].prompt, "Q: torque?");
  EXPECT_EQ(c.pinned_prompts[1].tenant, "lab");
  c.pinned_prompts[1].scope = "tenant:lab/internal";  // `serve` sets it from the routing file
  for (size_t i : {0, 1}) {
    const models::ModelRuntimeOptions o = ModelRuntimeOptionsFrom(c, i);
    // Every model gets all three; models::LoadModel keeps those for its id.
    ASSERT_EQ(o.pinned_prompts.size(), 3u);
    EXPECT_EQ(o.pinned_prompts[0].system, c.pinned_prompts[0].system);
    EXPECT_EQ(o.pinned_prompts[2].model, "b");
    EXPECT_EQ(o.pinned_prompts[1].scope, "tenant:lab/internal");
    EXPECT_EQ(o.pinned_dir, "/var/lib/outpost/pinned");
    EXPECT_EQ(o.pinned_dir_max_bytes, 300ull << 20);
  }
  // None configured: no directory either.
  const ServeConfig none;
  EXPECT_TRUE(ModelRuntimeOptionsFrom(none, 0).pinned_dir.empty());
}

TEST(Config, RepeatedModelFlagsReplaceTheFilesModels) {
  ServeConfig c;
  ASSERT_TRUE(
      LoadConfigFile(WriteTemp("models:\n  - {path: /a.gguf}\n  - {path: /b.gguf}\n"), &c).ok());
  ASSERT_TRUE(ApplyModelFlags(&c, {"/x.gguf", "chat=/models/y.gguf"}).ok());
  EXPECT_EQ(c.model, "/x.gguf");
  ASSERT_EQ(c.extra_models.size(), 1u);
  EXPECT_EQ(c.extra_models[0].id, "chat");
  EXPECT_EQ(c.extra_models[0].path, "/models/y.gguf");
  // No flags: the file's models stay.
  ServeConfig d;
  d.model = "/keep.gguf";
  ASSERT_TRUE(ApplyModelFlags(&d, {}).ok());
  EXPECT_EQ(d.model, "/keep.gguf");
}

TEST(Config, BadModelFlagsNameTheValue) {
  for (const std::string v : {"=/a.gguf", "x=", ""}) {
    ServeConfig c;
    const Status st = ApplyModelFlags(&c, {v});
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << v;
    EXPECT_EQ(st.param(), "model") << v;
  }
}

TEST(Config, EveryKeyHasHelpAndEveryHelpAKey) {
  std::vector<std::string> documented;
  for (const auto& d : ConfigKeyDocs()) documented.push_back(d.key);
  std::sort(documented.begin(), documented.end());
  std::vector<std::string> keys = ConfigKeys();
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(documented, keys);
}

TEST(Config, MissingFile) {
  ServeConfig c;
  Status st = LoadConfigFile("/nonexistent/outpost.yaml", &c);
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_NE(st.message().find("/nonexistent/outpost.yaml"), std::string::npos);
}

}  // namespace
}  // namespace outpost::app
