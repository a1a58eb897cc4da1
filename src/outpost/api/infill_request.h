// ParseInfillRequest — llama-server's POST /infill body, as code-editor
// plugins send it (llama.vscode, llama.vim), read into the completion call it
// means: the text before the cursor (`input_prefix`) as the prompt, the text
// after it (`input_suffix`), the cursor's own text (`prompt`) and other files
// (`input_extra`) as the fill-in-the-middle input (engine/infill.h), and the
// sampling fields llama-server's /completion shares with OpenAI's, checked by
// the same rules (api/openai_request.h) and refused under their own names.
// Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "outpost/api/openai_request.h"
#include "outpost/util/status.h"

namespace outpost::api {

// The most `input_extra` files one request may carry.
inline constexpr size_t kMaxInfillFiles = 256;
// The largest n_indent: blanks at a line's start.
inline constexpr int64_t kMaxIndent = 4096;

struct InfillRequest {
  ParsedRequest request;  // a /v1/completions call with `infill` set
  // llama-server's response_fields: only these paths of the answer
  // ("content", "timings/prompt_n"), each as a member named by its path.
  std::vector<std::string> response_fields;
  // The name the answer's length came under ("n_predict", or llama-server's
  // alias "max_tokens"): errors about it name that.
  std::string limit_field = "n_predict";
  // llama-server's t_max_predict_ms (0: none): once a line is complete and
  // this long has passed since the first text, the answer ends there
  // (stop_type "limit"), so an editor's suggestion arrives in time.
  int64_t max_predict_ms = 0;
  // llama-server's n_indent (0: none): every line after the answer's first
  // starts with at least this many blanks, or the answer ends before it
  // (api/indent_limit.h).
  int32_t n_indent = 0;
};

// Errors: InvalidArgument naming the /infill field (`input_prefix`,
// `input_suffix`, `input_extra[i].text`, `n_predict`, `repeat_penalty`, …).
// Read: input_prefix and input_suffix (strings, required), prompt,
// input_extra ({text, filename}), n_predict or max_tokens (-1: no limit),
// temperature, top_k, top_p, min_p, seed, presence_penalty,
// frequency_penalty, repeat_penalty, stop, stream, cache_prompt, ignore_eos,
// model, response_fields, t_max_predict_ms, n_indent. Other llama-server
// knobs are ignored.
StatusOr<InfillRequest> ParseInfillRequest(std::string_view body);

// An error about the /v1/completions call an /infill body means, with the
// fields named as the client sent them: prompt → input_prefix, suffix →
// input_suffix, repetition_penalty → repeat_penalty, max_tokens →
// `limit_field`; in the message too (a quoted name, or an identifier with
// an underscore, never a prose word such as "the prompt").
Status ForInfill(const Status& st, const std::string& limit_field);

// `answer` with only the members `fields` name ("a/b" reaches into objects),
// each under its path; paths the answer lacks are left out (llama-server's
// json_get_nested_values). Empty `fields`: `answer` as it is.
nlohmann::json SelectResponseFields(const nlohmann::json& answer,
                                    const std::vector<std::string>& fields);

}  // namespace outpost::api
