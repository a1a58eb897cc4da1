// libFuzzer: the OpenAI request parsers and validators (api/openai_request.h,
// api/responses_request.h; llama-server's /infill, api/infill_request.h) on
// arbitrary bodies and header values. Any outcome but a crash, a sanitizer
// report or an uncaught exception is fine.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "outpost/api/indent_limit.h"
#include "outpost/api/infill_request.h"
#include "outpost/api/openai_request.h"
#include "outpost/api/responses_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  // The first byte picks the endpoint (bit 2: the Responses API; bit 3 with
  // it: a server that stores responses, items and conversations, every
  // even-length id naming one; then the body is also read as items added to
  // a conversation) and the vocabulary bound.
  const uint8_t sel = size > 0 ? data[0] : 0;
  if (sel & 4) {
    outpost::api::ResponsesParseOptions options;
    if (sel & 8) {
      options.previous = [](const std::string& id) -> outpost::StatusOr<std::string> {
        if (id.size() % 2 == 1)
          return outpost::Status::NotFound("no " + id, "previous_response_id");
        return std::string(R"([{"role": "user", "content": "hi"}, {"type": "function_call",
          "call_id": "c", "name": "f", "arguments": "{}"}])");
      };
      options.conversation = options.previous;
      options.item = [](const std::string& id,
                        const std::string& param) -> outpost::StatusOr<std::string> {
        if (id.size() % 2 == 1) return outpost::Status::NotFound("no " + id, param);
        return std::string(R"({"type": "function_call", "id": "fc_1", "call_id": "c",
          "name": "f", "arguments": "{}"})");
      };
      auto items = nlohmann::json::parse(in.substr(1), nullptr, false);
      if (!items.is_discarded()) {
        (void)outpost::api::ResolveItemReferences(&items, "items", options.item);
        (void)outpost::api::ListedInputItems(items, "items", outpost::util::RealRandom());
      }
    }
    auto responses = outpost::api::ParseResponsesRequest(in.substr(1), options);
    if (!responses.ok()) (void)outpost::api::ForResponses(responses.status());
    return 0;
  }
  const auto endpoint =
      (sel & 1) ? outpost::api::Endpoint::kChat : outpost::api::Endpoint::kCompletion;
  const int32_t n_vocab = (sel & 2) ? 49152 : INT32_MAX;
  auto parsed = outpost::api::ParseRequest(endpoint, in.substr(size > 0 ? 1 : 0), n_vocab);
  (void)parsed;
  // The same body as llama-server's /infill, and its response_fields on
  // the body itself.
  auto infill = outpost::api::ParseInfillRequest(in.substr(size > 0 ? 1 : 0));
  if (infill.ok() && !infill->response_fields.empty()) {
    auto body = nlohmann::json::parse(in.substr(1), nullptr, false);
    if (!body.is_discarded())
      (void)outpost::api::SelectResponseFields(body, infill->response_fields);
  }
  // n_indent's cut over the input as an answer that grows a byte at a time:
  // the end it gives never passes the text.
  if (infill.ok() && infill->n_indent > 0) {
    outpost::api::IndentLimit limit(infill->n_indent);
    const std::string_view text = in.substr(0, 4096);
    for (size_t i = 0; i <= text.size() && !limit.cut(); ++i) {
      if (limit.End(text.substr(0, i)) > i) __builtin_trap();
    }
  }
  // Header values share the input.
  (void)outpost::api::ParsePriority(in);
  (void)outpost::api::ParseDataClassHeader(in);
  (void)outpost::api::ParseTierHeader(in);
  (void)outpost::api::ParseLatencyBudgetHeader(in);
  return 0;
}
