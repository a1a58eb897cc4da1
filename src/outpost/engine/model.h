// Model — one loaded GGUF model: weights (mmap), vocabulary and chat template.
//
// Owned by the app (one per served model; several may be loaded side by side).
// Loading happens once at start. After Load() returns, every const method is
// safe to call from any thread (HTTP workers tokenize and apply templates while
// the engine thread decodes): the vocabulary is immutable and template
// rendering is serialised internally.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "outpost/engine/infill.h"
#include "outpost/engine/model_info.h"
#include "outpost/engine/types.h"
#include "outpost/util/status.h"

struct llama_model;
struct llama_vocab;
struct common_chat_templates;

namespace outpost::engine {

struct ModelOptions {
  std::string path;
  bool use_mmap = true;       // weights are paged from the file; shared with the page cache
  int32_t n_gpu_layers = 0;   // layers to offload when a GPU backend is built in; -1 = all
  std::string chat_template;  // jinja source overriding the GGUF's; "" = the GGUF's own
  // A thinking model's reasoning split off the answer (ParsedAnswer::reasoning)
  // unless a request says otherwise (ChatOptions::parse_reasoning).
  bool split_reasoning = true;
  // Sampling defaults set by the operator (config); they win over the GGUF's.
  SamplingParams sampling;
};

class Model {
 public:
  // Loads weights and vocabulary. Errors: NotFound (no such file),
  // InvalidArgument (not a GGUF / unsupported architecture).
  static StatusOr<std::unique_ptr<Model>> Load(const ModelOptions& options);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelInfo& info() const { return info_; }

  // Text → tokens. add_special adds BOS where the model wants it; parse_special
  // turns "<start_of_turn>"-style text into control tokens (true for templated
  // chat prompts, false for raw user text).
  std::vector<Token> Tokenize(std::string_view text, bool add_special, bool parse_special) const;

  // The raw bytes of one token (may be part of a UTF-8 character). Control
  // tokens render as empty unless `special`.
  std::string TokenPiece(Token token, bool special = false) const;

  // True for end-of-generation tokens (EOS, EOT, <end_of_turn>...).
  bool IsEndOfGeneration(Token token) const;
  // Every end-of-generation token id (for ignore_eos, which bans them all).
  const std::vector<Token>& EndOfGenerationTokens() const { return eog_tokens_; }
  int32_t VocabSize() const;

  // Renders messages with the model's own chat template (jinja), adding the
  // assistant prefix. With tools (REQUIRES NativeToolCalls()), llama.cpp's
  // chat code renders them in the template's format and returns the lazy
  // grammar, triggers and parser for its calls (engine::Engine). `options`:
  // thinking on or off, the reasoning split, extra template variables.
  // Errors: InvalidArgument when the template rejects the conversation (e.g.
  // roles out of order, a variable it cannot take); the message says why.
  StatusOr<ChatPrompt> ApplyChatTemplate(const std::vector<ChatMessage>& messages,
                                         const ChatTools* tools = nullptr,
                                         const ChatOptions& options = ChatOptions()) const;
  // The template describes tools and has a call format llama.cpp parses
  // (probed once at load).
  bool NativeToolCalls() const { return native_tools_; }
  // Tokens a sliding-window attention layer sees (Gemma 3: 512); 0 = none.
  int32_t SlidingWindow() const;
  // The fill-in-the-middle tokens (none for a model not trained for it).
  const InfillTokens& Infill() const { return infill_; }

  // Sampling defaults for knobs a request leaves unset: the config's, else
  // the GGUF's general.sampling.* keys, else llama.cpp's (SamplingDefaults{}).
  const SamplingDefaults& DefaultSampling() const { return sampling_defaults_; }

  // A GBNF grammar that accepts exactly the JSON documents `schema` (JSON
  // text) describes. Errors: InvalidArgument naming `param` (the request
  // field) and the unsupported keyword or the converter's complaint.
  StatusOr<std::string> GrammarFromJsonSchema(const std::string& schema,
                                              const std::string& param) const;
  // GBNF a client wrote, checked as llama.cpp's sampler would take it (token
  // references read with this vocabulary); grammar_limits.h.
  Status CheckGrammar(const std::string& gbnf, const std::string& param) const;

  // For engine/ only: the llama.cpp handle.
  llama_model* raw() const { return model_; }

 private:
  Model() = default;

  ModelInfo info_;
  llama_model* model_ = nullptr;
  const llama_vocab* vocab_ = nullptr;
  common_chat_templates* templates_ = nullptr;
  std::vector<Token> eog_tokens_;
  InfillTokens infill_;
  SamplingDefaults sampling_defaults_;
  bool native_tools_ = false;
  bool add_bos_ = false;  // the tokenizer adds BOS (so templates must not)
  bool add_eos_ = false;
  bool split_reasoning_ = true;
  mutable std::mutex template_mu_;  // guards rendering through templates_
};

// Version strings for --version.
std::string LlamaCppVersion();
std::string LlamaSystemInfo();

// Routes llama.cpp's own logging to Outpost's logger (call once at start).
void InstallLlamaLogger(bool verbose);

// While alive, llama.cpp's warnings from this thread are logged at debug
// (errors stay errors). For a dry run (Context::DryRun), whose load warnings
// the real load repeats a moment later.
class QuietLlamaWarnings {
 public:
  QuietLlamaWarnings();
  ~QuietLlamaWarnings();
  QuietLlamaWarnings(const QuietLlamaWarnings&) = delete;
  QuietLlamaWarnings& operator=(const QuietLlamaWarnings&) = delete;

 private:
  bool was_quiet_;
};

}  // namespace outpost::engine
