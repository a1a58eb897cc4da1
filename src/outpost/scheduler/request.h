// GenerationRequest, and the sink its results are pushed to.
//
// The router builds a GenerationRequest (Scheduler::Prepare tokenizes the
// prompt), hands it to Scheduler::Submit() with a GenerationSink, and the
// engine thread pushes into that sink as tokens are sampled: OnText() for each
// piece of text of each choice (a request with n > 1 has n choices that share
// its prompt), then exactly one OnDone() once every choice has ended. Nobody polls. The engine
// thread asks Cancelled() once per step; once it is true the sequence is finished with kCancelled
// and its KV freed before the next decode.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "outpost/engine/infill.h"
#include "outpost/engine/types.h"
#include "outpost/util/status.h"

namespace outpost::scheduler {

// Admission classes, most valuable first: OpenAI's service tiers
// ("priority", "default", "flex") and Outpost's batch class (the
// X-Outpost-Priority header, shadow requests). A queued request of a lower
// class is admitted after every higher one that arrived less than
// SchedulerOptions::priority_aging_ms per class before it (so none starves),
// and it is the first to be displaced when a higher class finds the queue full.
enum class Priority { kPriority = 0, kInteractive = 1, kFlex = 2, kBatch = 3 };
inline constexpr int kPriorityClasses = 4;
// The service tier an answer reports: "priority", "default" or "flex" (the
// batch class reports "flex", the lowest tier OpenAI names).
const char* ServiceTierName(Priority p);
// The class's own name: "priority", "default", "flex" or "batch".
const char* PriorityName(Priority p);

enum class FinishReason { kNone, kStop, kLength, kCancelled, kError };
const char* FinishReasonName(FinishReason r);  // "stop", "length", ...

// What to generate from: a conversation (rendered with the chat template), a
// text, or token ids — whichever is set, in that order.
struct PromptInput {
  bool chat = false;
  std::vector<engine::ChatMessage> messages;  // chat
  std::string text;                           // plain completion
  std::vector<engine::Token> tokens;          // completion given as token ids
  // Fill in the middle (a completion with a suffix; llama-server's /infill):
  // the prompt is the model's FIM layout of this (engine/infill.h), not
  // `text`.
  std::optional<engine::InfillInput> infill;
  engine::ResponseFormat response_format;  // json_object / json_schema: grammar-constrained
  // Tools rendered in the chat template's own format (REQUIRES chat and
  // engine().NativeToolCalls()); the calls are grammar-constrained.
  std::optional<engine::ChatTools> tools;
  engine::ChatOptions options;  // chat: thinking, reasoning split, template variables
};

// One generated token as the client sees it: its bytes (possibly part of a
// UTF-8 character), log-probability, and the top alternatives.
struct TokenInfo {
  std::string piece;
  float logprob = 0;
  std::vector<std::pair<std::string, float>> top;  // best first
};

struct GenerationRequest {
  std::string id;
  std::vector<engine::Token> prompt;
  engine::SamplingParams sampling;
  int32_t max_tokens = -1;  // -1: until the context is full
  // Choices: n sequences sampled independently after one prefill of the
  // prompt (its KV is copied, not recomputed). Admitted together as n
  // sessions, or not at all.
  int32_t n = 1;
  std::vector<std::string> stop;  // stop strings (not included in output)
  Priority priority = Priority::kInteractive;
  // How long it may wait in the queue for a session before it is refused
  // (503); 0: the scheduler's max_queue_wait. A background response waits
  // longer: no client holds a socket open for it.
  int64_t max_queue_wait_ms = 0;
  // Compute each sampled token's log-probability under the model's raw
  // distribution (costs one pass over the vocabulary per token).
  bool want_logprobs = false;
  // Per-token log-probabilities pushed to the sink (OnLogprobs) with this
  // many alternatives each (0-20); -1 = none.
  int32_t top_logprobs = -1;
  // Requests share cached prompt prefixes only with requests of the same
  // scope (the router sets tenant and data class; "" = one shared scope).
  std::string cache_scope;
  // false: compute the whole prompt, reusing nothing (the KV it leaves is
  // still cached for others).
  bool cache_prompt = true;
  // Control tokens whose text is part of the answer (a tool format's
  // "<tool_call>"); others render as nothing.
  std::vector<engine::Token> special_tokens;
  // Reads the answer back: tool calls in a template's own format, the
  // thinking of a template with a thinking block (set by Prepare). Carried
  // for the layers above; the scheduler asks it only whether one call ends
  // the answer (AnswerParser::OneCall).
  std::shared_ptr<const engine::AnswerParser> answer_parser;
  // The OTel gen_ai.operation.name the request counts under: "chat" or
  // "text_completion".
  std::string operation = "text_completion";
};

struct Usage {
  int32_t prompt_tokens = 0;      // once, however many choices
  int32_t cached_tokens = 0;      // of those, reused from the prefix cache (not computed)
  int32_t completion_tokens = 0;  // summed over the choices
  // Of those, thinking (ThinkingCounter over sampling.thinking), summed likewise.
  int32_t reasoning_tokens = 0;
  double sum_logprob = 0;  // with want_logprobs: sum over generated tokens
};

// How a request ended. error is non-OK when finish == kError (it carries
// Retry-After when the request expired in the queue).
struct GenerationResult {
  FinishReason finish = FinishReason::kNone;  // choice 0's; kError if any choice failed
  std::vector<FinishReason> choices;          // each choice's (n entries)
  Status error;
  Usage usage;
};

class GenerationSink {
 public:
  virtual ~GenerationSink() = default;
  // Engine thread. Text of choice `choice` (0 ≤ choice < n): whole UTF-8
  // characters, never empty. Must not block: buffer and wake the consumer.
  virtual void OnText(int choice, std::string text) = 0;
  // Engine thread, when the request asked for top_logprobs: the tokens that
  // produced the choice's next OnText() (or, before OnDone(), its final text).
  // Tokens that ended up inside a stop string are not reported.
  virtual void OnLogprobs(int choice, std::vector<TokenInfo> tokens) {}
  // Engine thread (or the submitting thread at shutdown); exactly once, last.
  virtual void OnDone(GenerationResult result) = 0;
  // Any thread; cheap. True once nobody wants the output any more.
  virtual bool Cancelled() = 0;
};

}  // namespace outpost::scheduler
