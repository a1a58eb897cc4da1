// llama-server's /infill body read into a completion call with its gap
// (api/infill_request.h), and response_fields.
#include "outpost/api/infill_request.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace outpost::api {
namespace {

TEST(ParseInfillRequest, ReadsTheGapAndTheSharedKnobs) {
  auto r = ParseInfillRequest(R"({"input_prefix": "def f():\n", "input_suffix": "\n",
    "prompt": "    x", "input_extra": [{"filename": "a.py", "text": "y = 1\n"}, {"text": "z"}],
    "n_predict": 16, "temperature": 0.2, "top_k": 40, "repeat_penalty": 1.1, "stop": ["\n\n"],
    "stream": true, "cache_prompt": false, "response_fields": ["content", "timings/prompt_n"],
    "t_max_predict_ms": 500, "samplers": ["top_k", "infill"], "n_indent": 4})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const ParsedRequest& q = r->request;
  EXPECT_EQ(q.endpoint, Endpoint::kCompletion);
  EXPECT_EQ(q.prompt, "def f():\n");
  ASSERT_TRUE(q.infill.has_value());
  EXPECT_EQ(q.infill->suffix, "\n");
  EXPECT_EQ(q.infill->prompt, "    x");
  ASSERT_EQ(q.infill->extra.size(), 2u);
  EXPECT_EQ(q.infill->extra[0].filename, "a.py");
  EXPECT_EQ(q.infill->extra[0].text, "y = 1\n");
  EXPECT_EQ(q.infill->extra[1].filename, "");
  EXPECT_EQ(q.max_tokens, 16);
  EXPECT_FLOAT_EQ(*q.sampling.temperature, 0.2f);
  EXPECT_EQ(*q.sampling.top_k, 40);
  EXPECT_FLOAT_EQ(*q.sampling.repeat_penalty, 1.1f);
  EXPECT_EQ(q.stop, (std::vector<std::string>{"\n\n"}));
  EXPECT_TRUE(q.stream);
  EXPECT_FALSE(q.cache_prompt);
  EXPECT_EQ(r->response_fields, (std::vector<std::string>{"content", "timings/prompt_n"}));
  EXPECT_EQ(r->max_predict_ms, 500);
  EXPECT_EQ(r->n_indent, 4);

  // The cursor at a file's start, nothing after it; no limit (-1, as
  // llama-server's default); max_tokens in place of n_predict.
  auto start = ParseInfillRequest(R"({"input_prefix": "", "input_suffix": "", "n_predict": -1})");
  ASSERT_TRUE(start.ok()) << start.status().ToString();
  EXPECT_EQ(start->request.prompt, "");
  EXPECT_EQ(start->request.max_tokens, -1);
  auto max = ParseInfillRequest(R"({"input_prefix": "a", "input_suffix": "b", "max_tokens": 3})");
  ASSERT_TRUE(max.ok());
  EXPECT_EQ(max->request.max_tokens, 3);
}

TEST(ParseInfillRequest, BadBodiesAreRefusedByTheirOwnNames) {
  struct Bad {
    const char* body;
    const char* param;
    const char* says;
  };
  for (const Bad& b : {
           Bad{"[]", "", "must be a JSON object"},
           Bad{R"({"input_suffix": ""})", "input_prefix", "'input_prefix' is required"},
           Bad{R"({"input_prefix": ""})", "input_suffix", "'input_suffix' is required"},
           Bad{R"({"input_prefix": [1, 2], "input_suffix": ""})", "input_prefix",
               "must be a string"},
           Bad{R"({"input_prefix": "", "input_suffix": null})", "input_suffix", "is required"},
           Bad{R"({"input_prefix": "", "input_suffix": "", "prompt": 5})", "prompt",
               "must be a string"},
           Bad{R"({"input_prefix": "", "input_suffix": "", "input_extra": {}})", "input_extra",
               "must be an array"},
           Bad{R"({"input_prefix": "", "input_suffix": "", "input_extra": [5]})", "input_extra[0]",
               "must be an object"},
           Bad{R"({"input_prefix": "", "input_suffix": "", "input_extra": [{}]})",
               "input_extra[0].text", "is required"},
           Bad{R"({"input_prefix": "", "input_suffix": "", "input_extra": [{"text": 1}]})",
               "input_extra[0].text", "must be a string"},
           Bad{R"({"input_prefix": "", "input_suffix": "",
                   "input_extra": [{"text": "", "filename": 7}]})",
               "input_extra[0].filename", "must be a string"},
           Bad{R"({"input_prefix": "", "input_suffix": "", "n_predict": 0})", "n_predict",
               "'n_predict' must be between 1"},
           Bad{R"({"input_prefix": "", "input_suffix": "", "n_predict": "8"})", "n_predict",
               "'n_predict' must be an integer"},
           Bad{R"({"input_prefix": "", "input_suffix": "", "max_tokens": 0})", "max_tokens",
               "'max_tokens' must be between 1"},
           Bad{R"({"input_prefix": "", "input_suffix": "", "repeat_penalty": 50})",
               "repeat_penalty", "'repeat_penalty' must be"},
           Bad{R"({"input_prefix": "", "input_suffix": "", "temperature": 9})", "temperature",
               "between 0"},
           Bad{R"({"input_prefix": "", "input_suffix": "", "stop": 1})", "stop",
               "string or an array"},
           Bad{R"({"input_prefix": "", "input_suffix": "", "response_fields": "content"})",
               "response_fields", "an array of strings"},
           Bad{R"({"input_prefix": "", "input_suffix": "", "response_fields": [1]})",
               "response_fields[0]", "must be a string"},
           Bad{R"({"input_prefix": "", "input_suffix": "", "t_max_predict_ms": 1.5})",
               "t_max_predict_ms", "must be an integer"},
           Bad{R"({"input_prefix": "", "input_suffix": "", "t_max_predict_ms": -1})",
               "t_max_predict_ms", "between 0 (no limit) and 3600000"},
           Bad{R"({"input_prefix": "", "input_suffix": "", "n_indent": "4"})", "n_indent",
               "must be an integer"},
           Bad{R"({"input_prefix": "", "input_suffix": "", "n_indent": -1})", "n_indent",
               "between 0 (no limit) and 4096"},
           Bad{R"({"input_prefix": "", "input_suffix": "", "n_indent": 5000})", "n_indent",
               "between 0 (no limit) and 4096"},
       }) {
    auto r = ParseInfillRequest(b.body);
    ASSERT_FALSE(r.ok()) << b.body;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << b.body;
    EXPECT_EQ(r.status().param(), b.param) << b.body;
    EXPECT_NE(r.status().message().find(b.says), std::string::npos)
        << b.body << ": " << r.status().message();
  }
  std::string many = R"({"input_prefix": "", "input_suffix": "", "input_extra": [)";
  for (size_t i = 0; i <= kMaxInfillFiles; ++i)
    many += (i ? "," : "") + std::string("{\"text\": \"\"}");
  auto r = ParseInfillRequest(many + "]}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().param(), "input_extra");
}

TEST(ForInfill, NamesTheFieldsAsTheClientSentThem) {
  Status too_long = Status::InvalidArgument(
      "the context per session is 4096 tokens, but 5004 were requested; lower max_tokens or "
      "shorten the prompt",
      "max_tokens");
  too_long.WithErrorCode("context_length_exceeded");
  const Status n = ForInfill(too_long, "n_predict");
  EXPECT_EQ(n.param(), "n_predict");
  EXPECT_EQ(n.error_code(), "context_length_exceeded");
  EXPECT_NE(n.message().find("lower n_predict or shorten the prompt"), std::string::npos)
      << n.message();
  EXPECT_EQ(ForInfill(too_long, "max_tokens").message(), too_long.message());
  // A prose word stays; only the field's name changes.
  const Status prompt = ForInfill(Status::InvalidArgument("the prompt has 9 tokens", "prompt"), "");
  EXPECT_EQ(prompt.param(), "input_prefix");
  EXPECT_EQ(prompt.message(), "the prompt has 9 tokens");
  EXPECT_EQ(ForInfill(Status::InvalidArgument("no", "suffix"), "").param(), "input_suffix");
  EXPECT_EQ(ForInfill(Status::InvalidArgument("no", "seed"), "").param(), "seed");
}

TEST(SelectResponseFields, KeepsThePathsAskedFor) {
  const auto answer = nlohmann::json::parse(
      R"({"content": "x", "stop": true, "timings": {"prompt_n": 3, "predicted_ms": 1.5}})");
  EXPECT_EQ(SelectResponseFields(answer, {}), answer);
  EXPECT_EQ(SelectResponseFields(answer, {"content", "timings/prompt_n", "timings/none", "a/b"}),
            nlohmann::json::parse(R"({"content": "x", "timings/prompt_n": 3})"));
  EXPECT_EQ(SelectResponseFields(answer, {"content/deeper", "timings"}),
            nlohmann::json::parse(R"({"timings": {"prompt_n": 3, "predicted_ms": 1.5}})"));
}

}  // namespace
}  // namespace outpost::api
