#include "outpost/batch/batch_input.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace outpost::batch {
namespace {

const char* kChat = "/v1/chat/completions";

std::string Line(const std::string& id, const std::string& content,
                 const std::string& model = "default") {
  return nlohmann::json{
      {"custom_id", id},
      {"method", "POST"},
      {"url", kChat},
      {"body", {{"model", model}, {"messages", {{{"role", "user"}, {"content", content}}}}}}}
      .dump();
}

TEST(BatchInput, AGoodFileGivesOneLineEachInFileOrderWithTheirBodies) {
  const std::string file = Line("a", "one") + "\n" + Line("b", "two") + "\r\n\n" + Line("c", "x");
  const ParsedInput in = ParseBatchInput(file, kChat, 100);
  ASSERT_TRUE(in.errors.empty()) << in.errors[0].message;
  ASSERT_EQ(in.lines.size(), 3u);
  EXPECT_EQ(in.lines[0].custom_id, "a");
  EXPECT_EQ(in.lines[1].custom_id, "b");
  EXPECT_EQ(in.lines[2].custom_id, "c");
  EXPECT_EQ(in.lines[0].index, 0);
  EXPECT_EQ(in.lines[2].index, 3);  // the blank line keeps its number
  EXPECT_EQ(in.lines[1].url, kChat);
  EXPECT_EQ(nlohmann::json::parse(in.lines[1].body)["messages"][0]["content"], "two");
  EXPECT_EQ(in.model, "default");  // the model every line names
  EXPECT_EQ(ParseBatchInput(R"({"custom_id":"a","method":"POST","url":"/v1/chat/completions",)"
                            R"("body":{"messages":[]}})",
                            kChat, 100)
                .model,
            "");  // none named
}

TEST(BatchInput, LinesWithTheSamePromptPrefixShareTheStartOfTheirOrderKey) {
  const ParsedInput in =
      ParseBatchInput(Line("a", "Summarise: cats") + "\n" + Line("b", "Translate: dogs") + "\n" +
                          Line("c", "Summarise: birds"),
                      kChat, 100);
  ASSERT_EQ(in.lines.size(), 3u);
  // The two "Summarise" lines sort next to each other, before "Translate".
  EXPECT_LT(in.lines[0].order_key, in.lines[1].order_key);
  EXPECT_LT(in.lines[2].order_key, in.lines[1].order_key);
  EXPECT_EQ(in.lines[0].order_key.substr(0, 24), in.lines[2].order_key.substr(0, 24));
}

struct BadCase {
  const char* name;
  std::string file;
  const char* code;
  int64_t line;
  const char* param;
};

TEST(BatchInput, EachBadLineIsReportedWithItsNumberCodeAndField) {
  const std::string good = Line("ok", "hi");
  const std::vector<BadCase> cases = {
      {"not json", good + "\n{nope", "invalid_json_line", 2, ""},
      {"an array", "[1,2]", "invalid_json_line", 1, ""},
      {"no custom_id", R"({"method":"POST","url":"/v1/chat/completions","body":{}})",
       "missing_required_parameter", 1, "custom_id"},
      {"empty custom_id",
       R"({"custom_id":"","method":"POST","url":"/v1/chat/completions","body":{}})",
       "missing_required_parameter", 1, "custom_id"},
      {"custom_id a number",
       R"({"custom_id":7,"method":"POST","url":"/v1/chat/completions","body":{}})",
       "missing_required_parameter", 1, "custom_id"},
      {"custom_id too long",
       R"({"custom_id":")" + std::string(513, 'x') +
           R"(","method":"POST","url":"/v1/chat/completions","body":{}})",
       "invalid_value", 1, "custom_id"},
      {"duplicate custom_id", good + "\n" + Line("ok", "again"), "duplicate_custom_id", 2,
       "custom_id"},
      {"GET", R"({"custom_id":"a","method":"GET","url":"/v1/chat/completions","body":{}})",
       "invalid_value", 1, "method"},
      {"another endpoint", R"({"custom_id":"a","method":"POST","url":"/v1/completions","body":{}})",
       "invalid_url", 1, "url"},
      {"no body", R"({"custom_id":"a","method":"POST","url":"/v1/chat/completions"})",
       "missing_required_parameter", 1, "body"},
      {"body a string",
       R"({"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":"x"})",
       "missing_required_parameter", 1, "body"},
      {"streaming",
       R"({"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"stream":true}})",
       "invalid_value", 1, "body.stream"},
      {"two models", good + "\n" + Line("b", "hi", "other"), "mismatched_model", 2, "body.model"},
      {"empty file", "\n\n", "empty_file", 0, ""},
  };
  for (const auto& c : cases) {
    const ParsedInput in = ParseBatchInput(c.file, kChat, 100);
    ASSERT_FALSE(in.errors.empty()) << c.name;
    EXPECT_EQ(in.errors[0].code, c.code) << c.name;
    EXPECT_EQ(in.errors[0].line, c.line) << c.name;
    EXPECT_EQ(in.errors[0].param, c.param) << c.name;
    EXPECT_FALSE(in.errors[0].message.empty()) << c.name;
  }
}

TEST(BatchInput, MoreLinesThanTheLimitIsOneErrorNamingTheLimit) {
  std::string file;
  for (int i = 0; i < 5; ++i) file += Line("l" + std::to_string(i), "x") + "\n";
  const ParsedInput in = ParseBatchInput(file, kChat, 3);
  ASSERT_EQ(in.errors.size(), 1u);
  EXPECT_EQ(in.errors[0].code, "too_many_requests");
  EXPECT_NE(in.errors[0].message.find("3"), std::string::npos);
}

TEST(BatchInput, ErrorsAreCappedAndRenderedAsOpenAIsList) {
  std::string file;
  for (int i = 0; i < 300; ++i) file += "garbage\n";
  const ParsedInput in = ParseBatchInput(file, kChat, 1000);
  EXPECT_EQ(in.errors.size(), kMaxInputErrors);
  const auto j = nlohmann::json::parse(InputErrorsJson(in.errors));
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["data"][0]["code"], "invalid_json_line");
  EXPECT_EQ(j["data"][0]["line"], 1);
  EXPECT_TRUE(j["data"][0]["param"].is_null());
}

}  // namespace
}  // namespace outpost::batch
