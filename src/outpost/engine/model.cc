#include "outpost/engine/model.h"

#include <chat.h>
#include <llama.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "outpost/engine/chat_format.h"
#include "outpost/engine/grammar_limits.h"
#include "outpost/engine/json_schema_grammar.h"

#include "outpost/version.h"

namespace outpost::engine {
namespace {

// Gemma's chat format, for Gemma GGUFs that ship without tokenizer.chat_template
// (llama.cpp would otherwise fall back to ChatML, which Gemma was not trained on).
// Same rendering as the template Google publishes with the instruction-tuned models.
constexpr const char* kGemmaTemplate =
    "{{ bos_token }}"
    "{%- if messages[0]['role'] == 'system' -%}"
    "{%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}"
    "{%- set loop_messages = messages[1:] -%}"
    "{%- else -%}{%- set first_user_prefix = \"\" -%}{%- set loop_messages = messages -%}{%- endif "
    "-%}"
    "{%- for message in loop_messages -%}"
    "{%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
    "{%- endif -%}"
    "{%- if message['role'] == 'assistant' -%}{%- set role = 'model' -%}"
    "{%- else -%}{%- set role = message['role'] -%}{%- endif -%}"
    "{{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else '') + "
    "(message['content'] | trim) + '<end_of_turn>\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<start_of_turn>model\n' }}{%- endif -%}";

// The template to use instead of the GGUF's, or "" to use the GGUF's own.
std::string TemplateOverride(const llama_model* model, const std::string& arch) {
  if (llama_model_chat_template(model, nullptr) != nullptr) return "";
  if (arch.rfind("gemma", 0) == 0) return kGemmaTemplate;
  return "";
}

// A GGUF general.sampling.* value as a number, if the file carries it.
std::optional<double> MetaNumber(const llama_model* model, const char* key) {
  char buf[64];
  if (llama_model_meta_val_str(model, key, buf, sizeof buf) < 0) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(buf, &end);
  if (end == buf) return std::nullopt;
  return v;
}

// Defaults: llama.cpp's, then the GGUF's general.sampling.* keys, then the
// operator's settings.
SamplingDefaults LoadSamplingDefaults(const llama_model* model, const SamplingParams& config) {
  SamplingDefaults d;
  if (auto v = MetaNumber(model, "general.sampling.temp")) d.temperature = static_cast<float>(*v);
  if (auto v = MetaNumber(model, "general.sampling.top_p")) d.top_p = static_cast<float>(*v);
  if (auto v = MetaNumber(model, "general.sampling.top_k")) d.top_k = static_cast<int32_t>(*v);
  if (auto v = MetaNumber(model, "general.sampling.min_p")) d.min_p = static_cast<float>(*v);
  if (auto v = MetaNumber(model, "general.sampling.penalty_repeat")) {
    d.repeat_penalty = static_cast<float>(*v);
  }
  if (config.temperature) d.temperature = *config.temperature;
  if (config.top_p) d.top_p = *config.top_p;
  if (config.top_k) d.top_k = *config.top_k;
  if (config.min_p) d.min_p = *config.min_p;
  if (config.repeat_penalty) d.repeat_penalty = *config.repeat_penalty;
  if (config.thinking_budget) d.thinking_budget = *config.thinking_budget;
  return d;
}

// True when the template describes tools itself (a probe function's name
// shows in the prompt) and llama.cpp's chat code derives a grammar for its
// call format. Templates without one (SmolLM2's, Gemma's) get the router's
// generic format instead (router/tool_calls.h).
bool ProbeToolFormat(const common_chat_templates* templates, common_chat_templates_inputs in) {
  constexpr const char* kProbe = "outpost_probe_function";
  in.tools.push_back(
      {kProbe, "Probe.", R"({"type":"object","properties":{"x":{"type":"string"}}})"});
  in.tool_choice = COMMON_CHAT_TOOL_CHOICE_REQUIRED;
  try {
    auto params = common_chat_templates_apply(templates, in);
    return !params.grammar.empty() && !params.parser.empty() &&
           params.prompt.find(kProbe) != std::string::npos;
  } catch (const std::exception& e) {
    spdlog::debug("chat template has no usable tool-call format: {}", e.what());
    return false;
  }
}

}  // namespace

StatusOr<std::unique_ptr<Model>> Model::Load(const ModelOptions& options) {
  // Read and check the metadata first: clear errors for missing, non-GGUF and
  // truncated files before llama.cpp sees them.
  auto info = ReadModelInfo(options.path);
  if (!info.ok()) return info.status();

  llama_model_params mp = llama_model_default_params();
  mp.load_mode = options.use_mmap ? LLAMA_LOAD_MODE_MMAP : LLAMA_LOAD_MODE_NONE;
  mp.n_gpu_layers = options.n_gpu_layers;
  llama_model* raw = llama_model_load_from_file(options.path.c_str(), mp);
  if (raw == nullptr) {
    return Status::InvalidArgument("llama.cpp could not load '" + options.path +
                                       "' (architecture '" + info->architecture +
                                       "' unsupported by this build, or the file is damaged)",
                                   "model");
  }
  std::unique_ptr<Model> m(new Model());
  m->info_ = std::move(info).value();
  m->model_ = raw;
  m->vocab_ = llama_model_get_vocab(raw);
  m->info_.n_vocab = llama_vocab_n_tokens(m->vocab_);
  for (Token t = 0; t < m->info_.n_vocab; ++t) {
    if (llama_vocab_is_eog(m->vocab_, t)) m->eog_tokens_.push_back(t);
  }
  m->sampling_defaults_ = LoadSamplingDefaults(raw, options.sampling);
  m->split_reasoning_ = options.split_reasoning;
  // LLAMA_TOKEN_NULL is -1, as kNoToken.
  m->infill_.pre = llama_vocab_fim_pre(m->vocab_);
  m->infill_.suf = llama_vocab_fim_suf(m->vocab_);
  m->infill_.mid = llama_vocab_fim_mid(m->vocab_);
  m->infill_.rep = llama_vocab_fim_rep(m->vocab_);
  m->infill_.sep = llama_vocab_fim_sep(m->vocab_);
  if (llama_vocab_get_add_bos(m->vocab_)) m->infill_.bos = llama_vocab_bos(m->vocab_);

  try {
    std::string override_tmpl = options.chat_template;
    if (override_tmpl.empty()) override_tmpl = TemplateOverride(raw, m->info_.architecture);
    if (!override_tmpl.empty() && options.chat_template.empty()) {
      spdlog::warn("'{}' has no chat template; using the built-in {} template", options.path,
                   m->info_.architecture);
    }
    m->templates_ = common_chat_templates_init(raw, override_tmpl).release();
    m->add_bos_ = llama_vocab_get_add_bos(m->vocab_);
    m->add_eos_ = llama_vocab_get_add_eos(m->vocab_);
    // Probe the template once: fail at start (not per request) when it cannot
    // render, and learn whether it has a tool-call format.
    common_chat_templates_inputs probe;
    probe.use_jinja = true;
    probe.add_bos = m->add_bos_;
    probe.add_eos = m->add_eos_;
    probe.messages.push_back({"user", "hi", {}, {}, {}, {}, {}});
    common_chat_templates_apply(m->templates_, probe);
    m->native_tools_ = ProbeToolFormat(m->templates_, probe);
    spdlog::info("'{}': tool calls in {}", options.path,
                 m->native_tools_
                     ? "the chat template's own format"
                     : "Outpost's generic JSON format (the template declares no tools)");
  } catch (const std::exception& e) {
    return Status::InvalidArgument(
        std::string("chat template of '") + options.path + "' cannot be used: " + e.what(),
        "model");
  }
  return m;
}

Model::~Model() {
  if (templates_) common_chat_templates_free(templates_);
  if (model_) llama_model_free(model_);
}

std::vector<Token> Model::Tokenize(std::string_view text, bool add_special,
                                   bool parse_special) const {
  std::vector<Token> out(text.size() + 8);
  int32_t n = llama_tokenize(vocab_, text.data(), static_cast<int32_t>(text.size()), out.data(),
                             static_cast<int32_t>(out.size()), add_special, parse_special);
  if (n < 0) {
    out.resize(static_cast<size_t>(-n));
    n = llama_tokenize(vocab_, text.data(), static_cast<int32_t>(text.size()), out.data(),
                       static_cast<int32_t>(out.size()), add_special, parse_special);
  }
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return out;
}

std::string Model::TokenPiece(Token token, bool special) const {
  char buf[256];
  int32_t n = llama_token_to_piece(vocab_, token, buf, sizeof buf, 0, special);
  if (n >= 0) return std::string(buf, static_cast<size_t>(n));
  std::string big(static_cast<size_t>(-n), '\0');
  n = llama_token_to_piece(vocab_, token, big.data(), static_cast<int32_t>(big.size()), 0, special);
  big.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return big;
}

StatusOr<std::string> Model::GrammarFromJsonSchema(const std::string& schema,
                                                   const std::string& param) const {
  return JsonSchemaToGrammar(schema, param);
}

Status Model::CheckGrammar(const std::string& gbnf, const std::string& param) const {
  return ParseGrammar(gbnf, vocab_, param);
}

bool Model::IsEndOfGeneration(Token token) const {
  return llama_vocab_is_eog(vocab_, token);
}

int32_t Model::SlidingWindow() const {
  return llama_model_n_swa(model_);
}

int32_t Model::VocabSize() const {
  return llama_vocab_n_tokens(vocab_);
}

StatusOr<ChatPrompt> Model::ApplyChatTemplate(const std::vector<ChatMessage>& messages,
                                              const ChatTools* tools,
                                              const ChatOptions& options) const {
  common_chat_templates_inputs in;
  in.use_jinja = true;
  // The tokenizer adds BOS/EOS itself; strip them from the rendered text.
  in.add_bos = add_bos_;
  in.add_eos = add_eos_;
  ChatOptions resolved = options;
  if (!resolved.parse_reasoning) resolved.parse_reasoning = split_reasoning_;
  if (Status st = FillChatInputs(messages, tools, resolved, &in); !st.ok()) return st;
  try {
    std::lock_guard<std::mutex> lock(template_mu_);
    std::string opening;
    if (tools != nullptr && tools->required) {
      common_chat_templates_inputs auto_in = in;
      auto_in.tool_choice = COMMON_CHAT_TOOL_CHOICE_AUTO;
      opening = CallOpening(common_chat_templates_apply(templates_, auto_in));
    }
    ChatPrompt out =
        ToChatPrompt(common_chat_templates_apply(templates_, in), tools, resolved, opening, vocab_);
    if (resolved.ending == ChatOptions::Ending::kContinueReasoning && out.thinking.end.empty()) {
      // llama.cpp would drop the message: it has no block to put it in.
      return Status::InvalidArgument(
          "the model's chat template has no thinking block, so there is no thinking to "
          "continue; send the text to continue as the last message's content",
          "continue_final_message");
    }
    if (tools != nullptr && !out.grammar.empty()) {
      // The prompt shows the parameters as given; the grammar is built from
      // them readied, so that what llama.cpp's converter would drop (a
      // number's bounds, a pattern's \d) holds in the calls too.
      auto ready = ReadyToolSchemas(*tools);
      if (!ready.ok()) return ready.status();
      const bool changed =
          std::any_of(ready->begin(), ready->end(), [](const ReadySchema& r) { return r.changed; });
      if (changed) out.grammar = ToolGrammar(templates_, in, *ready);
    }
    return out;
  } catch (const std::exception& e) {
    return Status::InvalidArgument(
        std::string("the model's chat template rejected the messages: ") + e.what(), "messages");
  }
}

std::string LlamaCppVersion() {
  return OUTPOST_LLAMA_VERSION;
}

std::string LlamaSystemInfo() {
  return llama_print_system_info();
}

namespace {
// QuietLlamaWarnings: llama.cpp logs on the thread that called it.
thread_local bool quiet_warnings = false;

void LogCallback(ggml_log_level level, const char* text, void* user_data) {
  const bool verbose = user_data != nullptr;
  if (quiet_warnings && level == GGML_LOG_LEVEL_WARN) level = GGML_LOG_LEVEL_DEBUG;
  if (!verbose && level != GGML_LOG_LEVEL_ERROR && level != GGML_LOG_LEVEL_WARN) return;
  std::string s(text);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  if (s.empty()) return;
  // An interrupted decode (Context::DecodeInterruptible) is routine, and its
  // cells are accounted for there.
  if (level == GGML_LOG_LEVEL_WARN &&
      s.find("removing memory module entries") != std::string::npos) {
    level = GGML_LOG_LEVEL_DEBUG;
    if (!verbose) return;
  }
  switch (level) {
    case GGML_LOG_LEVEL_ERROR:
      spdlog::error("llama.cpp: {}", s);
      break;
    case GGML_LOG_LEVEL_WARN:
      spdlog::warn("llama.cpp: {}", s);
      break;
    default:
      spdlog::debug("llama.cpp: {}", s);
      break;
  }
}
}  // namespace

QuietLlamaWarnings::QuietLlamaWarnings() : was_quiet_(quiet_warnings) {
  quiet_warnings = true;
}

QuietLlamaWarnings::~QuietLlamaWarnings() {
  quiet_warnings = was_quiet_;
}

void InstallLlamaLogger(bool verbose) {
  static int kVerboseTag = 1;
  llama_log_set(LogCallback, verbose ? &kVerboseTag : nullptr);
  llama_backend_init();
}

}  // namespace outpost::engine
