// Parsing and validation of OpenAI request bodies into plain request values.
//
// Every rule lives here: a body that passes is safe to hand to the scheduler
// (ranges checked, types checked); one that fails yields InvalidArgument whose
// message and param name the offending field. No exceptions escape. Pure;
// thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "outpost/engine/types.h"
#include "outpost/router/completion_call.h"
#include "outpost/router/route_types.h"
#include "outpost/scheduler/request.h"
#include "outpost/util/status.h"

namespace outpost::api {

using router::Endpoint;
// The parsed body: plain values the router acts on.
using ParsedRequest = router::CompletionRequest;

// chat_template_kwargs members, at most (each is a variable in every render).
inline constexpr size_t kMaxTemplateKwargs = 64;
// reasoning_budget_message bytes, at most (forced token by token).
inline constexpr size_t kMaxBudgetMessage = 1000;

// Parses a /v1/chat/completions or /v1/completions body. `n_vocab` bounds
// logit_bias keys and token-id prompts (INT32_MAX defers that check to the
// model's scheduler, which knows its vocabulary). `for_tokenize`: the body
// is only counted (/tokenize), so add_generation_prompt false alone is taken
// (ChatOptions::Ending::kNoHeader); a generation refuses it.
StatusOr<ParsedRequest> ParseRequest(Endpoint endpoint, std::string_view body, int32_t n_vocab,
                                     bool for_tokenize = false);

// OpenAI's reasoning effort (`field`: chat's reasoning_effort, Responses'
// reasoning.effort): "none" turns a thinking template's thinking off; the
// others ("minimal", "low", "medium", "high", "xhigh") reach the template as
// its reasoning_effort variable (gpt-oss reads it). Errors: InvalidArgument
// naming `field` for any other value.
Status ApplyReasoningEffort(const nlohmann::json& effort, const std::string& field,
                            engine::ChatOptions* options);

// "interactive" (default) or "batch", from the X-Outpost-Priority header.
StatusOr<scheduler::Priority> ParsePriority(std::string_view header_value);
// The admission class of a request: the batch class when the header asks for
// it, else the body's service_tier, else "default".
scheduler::Priority AdmissionClass(scheduler::Priority header, const ParsedRequest& request);

// Routing headers. Errors: InvalidArgument naming the header and its values.
// X-Data-Class: public | internal | restricted (empty: not given).
StatusOr<std::optional<router::DataClass>> ParseDataClassHeader(std::string_view header_value);
// X-Outpost-Tier: local | central (empty: any).
StatusOr<router::Tier> ParseTierHeader(std::string_view header_value);
// X-Latency-Budget-Ms: a positive integer of milliseconds (empty: not given).
StatusOr<std::optional<int64_t>> ParseLatencyBudgetHeader(std::string_view header_value);

}  // namespace outpost::api
