#include "outpost/api/responses_request.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace outpost::api {
namespace {

using nlohmann::json;

TEST(ParseResponsesRequest, AStringInputWithInstructionsIsASystemAndAUserMessage) {
  auto r = ParseResponsesRequest(R"({"model": "m", "instructions": "Be brief.",
    "input": "What is the capital of France?", "max_output_tokens": 40, "temperature": 0.2,
    "top_p": 0.9, "user": "u7", "service_tier": "flex", "stream": true,
    "metadata": {"ticket": "T-1"}})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const ParsedRequest& c = r->chat;
  EXPECT_EQ(c.endpoint, Endpoint::kResponses);
  EXPECT_EQ(c.model, "m");
  ASSERT_EQ(c.messages.size(), 2u);
  EXPECT_EQ(c.messages[0].role, "system");
  EXPECT_EQ(c.messages[0].content, "Be brief.");
  EXPECT_EQ(c.messages[1].role, "user");
  EXPECT_EQ(c.messages[1].content, "What is the capital of France?");
  EXPECT_EQ(c.max_tokens, 40);
  EXPECT_FLOAT_EQ(*c.sampling.temperature, 0.2f);
  EXPECT_FLOAT_EQ(*c.sampling.top_p, 0.9f);
  EXPECT_EQ(c.user, "u7");
  EXPECT_EQ(c.service_tier, scheduler::Priority::kFlex);
  EXPECT_TRUE(c.stream);
  EXPECT_EQ(c.n, 1);
  EXPECT_EQ(c.top_logprobs, -1);

  // The Response object repeats the settings, defaults filled in.
  const json echo = json::parse(r->echo);
  EXPECT_EQ(echo["instructions"], "Be brief.");
  EXPECT_EQ(echo["max_output_tokens"], 40);
  EXPECT_EQ(echo["metadata"]["ticket"], "T-1");
  EXPECT_EQ(echo["tool_choice"], "auto");
  EXPECT_EQ(echo["tools"], json::array());
  EXPECT_EQ(echo["text"]["format"]["type"], "text");
  EXPECT_EQ(echo["parallel_tool_calls"], true);
  EXPECT_EQ(echo["store"], false);  // no store given: nothing is kept
  EXPECT_EQ(echo["previous_response_id"], nullptr);
  EXPECT_FALSE(r->store);
  EXPECT_TRUE(r->expanded_body.empty());
  EXPECT_EQ(echo["truncation"], "disabled");
  EXPECT_EQ(echo["user"], "u7");
}

TEST(ParseResponsesRequest, ItemsBecomeTheConversationWithCallsOnTheAssistantTurn) {
  // What a client sends back after running a function: the earlier answer's
  // output items (a message, a reasoning item, two calls) and the results.
  auto r = ParseResponsesRequest(R"({"input": [
    {"role": "developer", "content": "Use the tools."},
    {"type": "message", "role": "user",
     "content": [{"type": "input_text", "text": "Weather in Paris"},
                 {"type": "input_text", "text": "and Oslo?"}]},
    {"type": "reasoning", "id": "rs_1", "summary": []},
    {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
     "content": [{"type": "output_text", "text": "Checking.", "annotations": []}]},
    {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "weather",
     "arguments": "{\"city\":\"Paris\"}", "status": "completed"},
    {"type": "function_call", "call_id": "call_b", "name": "weather",
     "arguments": "{\"city\":\"Oslo\"}"},
    {"type": "function_call_output", "call_id": "call_a", "output": "18 C"},
    {"type": "function_call_output", "call_id": "call_b",
     "output": [{"type": "input_text", "text": "9 C"}]},
    {"type": "function_call", "call_id": "call_c", "name": "weather", "arguments": "{}"}
  ], "tools": [{"type": "function", "name": "weather", "description": "Weather now",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                "strict": true}],
     "tool_choice": {"type": "function", "name": "weather"}, "parallel_tool_calls": false})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto& m = r->chat.messages;
  ASSERT_EQ(m.size(), 6u);
  EXPECT_EQ(m[0].role, "system");  // developer
  EXPECT_EQ(m[1].role, "user");
  EXPECT_EQ(m[1].content, "Weather in Paris\nand Oslo?");
  EXPECT_EQ(m[2].role, "assistant");
  EXPECT_EQ(m[2].content, "Checking.");
  const json calls = json::parse(m[2].tool_calls);
  ASSERT_EQ(calls.size(), 2u);  // both calls join the assistant turn before them
  EXPECT_EQ(calls[0]["id"], "call_a");
  EXPECT_EQ(calls[0]["function"]["name"], "weather");
  EXPECT_EQ(calls[1]["function"]["arguments"], "{\"city\":\"Oslo\"}");
  EXPECT_EQ(m[3].role, "tool");
  EXPECT_EQ(m[3].tool_call_id, "call_a");
  EXPECT_EQ(m[3].content, "18 C");
  EXPECT_EQ(m[4].content, "9 C");
  EXPECT_EQ(m[5].role, "assistant");  // a call after a tool result starts a turn
  EXPECT_TRUE(m[5].content.empty());
  EXPECT_EQ(json::parse(m[5].tool_calls)[0]["id"], "call_c");

  const auto& tools = r->chat.tools;
  ASSERT_EQ(tools.functions.size(), 1u);
  EXPECT_EQ(tools.functions[0].name, "weather");
  EXPECT_EQ(tools.functions[0].description, "Weather now");
  EXPECT_EQ(tools.functions[0].parameters,
            R"({"type":"object","properties":{"city":{"type":"string"}}})");  // the client's order
  EXPECT_EQ(tools.choice.mode, router::ToolChoice::Mode::kFunction);
  EXPECT_EQ(tools.choice.function, "weather");
  EXPECT_FALSE(tools.parallel);
  EXPECT_EQ(json::parse(r->echo)["tool_choice"]["name"], "weather");
}

TEST(ParseResponsesRequest, TextFormatAndLogprobs) {
  auto r = ParseResponsesRequest(R"({"input": "a person", "text": {"format": {
    "type": "json_schema", "name": "person", "strict": true,
    "schema": {"type": "object", "properties": {"name": {"type": "string"}}}}},
    "top_logprobs": 3})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->chat.response_format.type, engine::ResponseFormat::Type::kJsonSchema);
  EXPECT_EQ(r->chat.response_format.schema,
            R"({"type":"object","properties":{"name":{"type":"string"}}})");  // the client's order
  EXPECT_EQ(r->chat.top_logprobs, 3);
  EXPECT_EQ(json::parse(r->echo)["text"]["format"]["name"], "person");

  auto object = ParseResponsesRequest(
      R"({"input": "x", "text": {"format": {"type": "json_object"}},
          "include": ["message.output_text.logprobs"]})");
  ASSERT_TRUE(object.ok()) << object.status().ToString();
  EXPECT_EQ(object->chat.response_format.type, engine::ResponseFormat::Type::kJsonObject);
  EXPECT_EQ(object->chat.top_logprobs, 0);  // logprobs of the chosen tokens only

  auto plain = ParseResponsesRequest(R"({"input": "x", "text": {"verbosity": "low"}})");
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->chat.response_format.type, engine::ResponseFormat::Type::kText);
  EXPECT_EQ(json::parse(plain->echo)["text"]["format"]["type"], "text");
}

// Every bad body: a 400 naming the Responses field, never the chat one.
TEST(ParseResponsesRequest, BadBodiesNameTheField) {
  struct Case {
    const char* body;
    const char* param;
    const char* says;
  };
  const Case cases[] = {
      {R"(not json)", "", "not valid JSON"},
      {R"([1])", "", "JSON object"},
      {R"({})", "input", "'input' is required"},
      {R"({"input": ""})", "input", "must not be empty"},
      {R"({"input": []})", "input", "must not be empty"},
      {R"({"input": 7})", "input", "a string or an array"},
      {R"({"input": [3]})", "input[0]", "an object"},
      {R"({"input": [{"content": "hi"}]})", "input[0].role", "is required"},
      {R"({"input": [{"role": "tool", "content": "hi"}]})", "input[0].role", "must be one of"},
      {R"({"input": [{"role": "user"}]})", "input[0].content", "is required"},
      {R"({"input": [{"role": "user", "content": [{"type": "input_image",
          "image_url": "http://x/y.png"}]}]})",
       "input[0].content[0].type", "not supported by this model"},
      {R"({"input": [{"role": "user", "content": [{"type": "input_text"}]}]})",
       "input[0].content[0].text", "is required"},
      {R"({"input": [{"role": "user", "content": [{"type": "bogus", "text": "x"}]}]})",
       "input[0].content[0].type", "input_text or output_text"},
      {R"({"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]})",
       "input[0].call_id", "is required"},
      {R"({"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": {}}]})",
       "input[0].arguments", "a string"},
      {R"({"input": [{"type": "function_call_output", "call_id": "c"}]})", "input[0].output",
       "is required"},
      {R"({"input": [{"type": "item_reference", "id": "msg_1"}]})", "input[0].type", "stores none"},
      {R"({"input": [{"type": "item_reference"}]})", "input[0].id", "is required"},
      {R"({"input": [{"type": "item_reference", "id": 3}]})", "input[0].id", "a string"},
      {R"({"input": [{"type": "web_search_call", "id": "ws_1"}]})", "input[0].type",
       "not supported"},
      {R"({"input": [{"type": "reasoning", "summary": []}]})", "input", "holds no message"},
      {R"({"input": "hi", "previous_response_id": "resp_1"})", "previous_response_id",
       "stores no responses (responses_retention: 0)"},
      {R"({"input": "hi", "previous_response_id": 5})", "previous_response_id", "a string"},
      {R"({"input": "hi", "previous_response_id": ""})", "previous_response_id",
       "must not be empty"},
      {R"({"input": "hi", "conversation": "conv_1"})", "conversation", "keeps no conversations"},
      {R"({"input": "hi", "conversation": 5})", "conversation", "a string or an object"},
      {R"({"input": "hi", "conversation": {}})", "conversation.id", "is required"},
      {R"({"input": "hi", "conversation": {"id": 5}})", "conversation.id", "a string"},
      {R"({"input": "hi", "conversation": ""})", "conversation", "must not be empty"},
      {R"({"input": "hi", "prompt": {"id": "pmpt_1"}})", "prompt", "stored prompts"},
      {R"({"input": "hi", "metadata": [1]})", "metadata", "an object"},
      {R"({"instructions": "Be brief.", "input": [{"type": "reasoning", "summary": []}]})", "input",
       "holds no message"},
      {R"({"input": "hi", "background": true})", "background", "stores no responses"},
      {R"({"input": "hi", "background": "yes"})", "background", "a boolean"},
      {R"({"input": "hi", "store": "yes"})", "store", "a boolean"},
      {R"({"input": "hi", "instructions": 5})", "instructions", "a string"},
      {R"({"input": "hi", "max_output_tokens": 0})", "max_output_tokens", "between 1 and"},
      {R"({"input": "hi", "max_output_tokens": "many"})", "max_output_tokens", "an integer"},
      {R"({"input": "hi", "temperature": 3})", "temperature", "between 0 and 2"},
      {R"({"input": "hi", "top_logprobs": 21})", "top_logprobs", "between 0 and 20"},
      {R"({"input": "hi", "tools": {}})", "tools", "an array"},
      {R"({"input": "hi", "tools": [{"type": "web_search"}]})", "tools[0].type",
       "runs no hosted tools"},
      {R"({"input": "hi", "tools": [{"name": "f"}]})", "tools[0].type", "is required"},
      {R"({"input": "hi", "tools": [{"type": "function", "name": "bad name"}]})", "tools[0].name",
       "1 to 64"},
      {R"({"input": "hi", "tools": [{"type": "function", "name": "f"}],
          "tool_choice": {"type": "function"}})",
       "tool_choice", "\"name\""},
      {R"({"input": "hi", "tools": [{"type": "function", "name": "f"}],
          "tool_choice": {"type": "function", "name": "g"}})",
       "tool_choice", "not in 'tools'"},
      {R"({"input": "hi", "tool_choice": "sometimes"})", "tool_choice", "none, auto, required"},
      {R"({"input": "hi", "text": "json"})", "text", "an object"},
      {R"({"input": "hi", "text": {"format": {"type": "yaml"}}})", "text.format.type",
       "text, json_object or json_schema"},
      {R"({"input": "hi", "text": {"format": {"type": "json_schema", "schema": {}}}})",
       "text.format.name", "is required"},
      {R"({"input": "hi", "include": "logprobs"})", "include", "an array"},
      {R"({"input": "hi", "metadata": {"a": 1}})", "metadata.a", "a string"},
      {R"({"input": "hi", "truncation": "middle"})", "truncation", "auto or disabled"},
  };
  for (const Case& c : cases) {
    auto r = ParseResponsesRequest(c.body);
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.body;
    EXPECT_EQ(r.status().param(), c.param) << c.body << ": " << r.status().message();
    EXPECT_NE(r.status().message().find(c.says), std::string::npos)
        << c.body << ": " << r.status().message();
    // Never the chat request's names.
    EXPECT_EQ(r.status().message().find("max_tokens"), std::string::npos) << c.body;
    EXPECT_EQ(r.status().message().find("response_format"), std::string::npos) << c.body;
    EXPECT_EQ(r.status().message().find("messages"), std::string::npos) << c.body;
  }
}

// A store holding one earlier turn: a user message and the answer's output.
ResponsesParseOptions WithStored(int* lookups) {
  ResponsesParseOptions o;
  o.previous = [lookups](const std::string& id) -> StatusOr<std::string> {
    ++*lookups;
    if (id != "resp_1") {
      return Status::NotFound("no stored response with id '" + id + "'", "previous_response_id");
    }
    return std::string(R"([{"type": "message", "role": "user", "content": "My name is Ada."},
      {"type": "message", "id": "msg_a", "status": "completed", "role": "assistant",
       "content": [{"type": "output_text", "text": "Hello Ada!", "annotations": []}]}])");
  };
  return o;
}

TEST(ParseResponsesRequest, APreviousResponsesItemsComeAfterTheInstructionsAndBeforeTheInput) {
  int lookups = 0;
  auto r = ParseResponsesRequest(R"({"instructions": "Be brief.", "previous_response_id":
    "resp_1", "input": "What is my name?", "store": true})",
                                 WithStored(&lookups));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(lookups, 1);
  const auto& m = r->chat.messages;
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0].role, "system");
  EXPECT_EQ(m[0].content, "Be brief.");
  EXPECT_EQ(m[1].role, "user");
  EXPECT_EQ(m[1].content, "My name is Ada.");
  EXPECT_EQ(m[2].role, "assistant");
  EXPECT_EQ(m[2].content, "Hello Ada!");
  EXPECT_EQ(m[3].role, "user");
  EXPECT_EQ(m[3].content, "What is my name?");
  EXPECT_TRUE(r->store);
  EXPECT_EQ(r->previous_response_id, "resp_1");
  const json echo = json::parse(r->echo);
  EXPECT_EQ(echo["previous_response_id"], "resp_1");
  EXPECT_EQ(echo["store"], true);

  // The context: the earlier items, then this input (no instructions).
  const json context = json::parse(r->context);
  ASSERT_EQ(context.size(), 3u);
  EXPECT_EQ(context[0]["content"], "My name is Ada.");
  EXPECT_EQ(context[1]["id"], "msg_a");
  EXPECT_EQ(context[2]["content"], "What is my name?");
  // An upstream gets the same conversation without the id it never stored.
  const json expanded = json::parse(r->expanded_body);
  EXPECT_FALSE(expanded.contains("previous_response_id"));
  EXPECT_EQ(expanded["input"], context);
  EXPECT_EQ(expanded["instructions"], "Be brief.");
  auto again = ParseResponsesRequest(r->expanded_body);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_EQ(again->chat.messages.size(), 4u);
  EXPECT_EQ(again->chat.messages[2].content, "Hello Ada!");

  // input_items: this request's input only, as parts with an id.
  const json listed = json::parse(r->input_items);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0]["type"], "message");
  EXPECT_EQ(listed[0]["role"], "user");
  EXPECT_EQ(listed[0]["status"], "completed");
  EXPECT_EQ(listed[0]["content"],
            json::parse(R"([{"type": "input_text", "text": "What is my name?"}])"));
  EXPECT_EQ(listed[0]["id"].get<std::string>().rfind("msg_", 0), 0u);
}

TEST(ParseResponsesRequest, StoreIsTheRequestsChoiceWhenTheServerStores) {
  int lookups = 0;
  auto kept = ParseResponsesRequest(R"({"input": "hi"})", WithStored(&lookups));
  ASSERT_TRUE(kept.ok());
  EXPECT_TRUE(kept->store);  // OpenAI's default
  EXPECT_EQ(json::parse(kept->echo)["store"], true);
  auto not_kept = ParseResponsesRequest(R"({"input": "hi", "store": false})", WithStored(&lookups));
  ASSERT_TRUE(not_kept.ok());
  EXPECT_FALSE(not_kept->store);
  EXPECT_EQ(json::parse(not_kept->echo)["store"], false);
  EXPECT_EQ(lookups, 0);
}

TEST(ParseResponsesRequest, ListedInputItemsKeepTheirIdsAndGetTheirTypesPrefixes) {
  auto r = ParseResponsesRequest(R"({"input": [
    {"role": "developer", "content": "Use tools."},
    {"type": "message", "id": "msg_mine", "role": "user",
     "content": [{"type": "input_text", "text": "Weather?"}]},
    {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
    {"type": "message", "role": "assistant", "content": "It is sunny."}]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const json items = json::parse(r->input_items);
  ASSERT_EQ(items.size(), 5u);
  EXPECT_EQ(items[0]["type"], "message");
  EXPECT_EQ(items[0]["content"][0]["type"], "input_text");
  EXPECT_EQ(items[1]["id"], "msg_mine");
  EXPECT_EQ(items[2]["id"].get<std::string>().rfind("fc_", 0), 0u);
  EXPECT_EQ(items[3]["id"].get<std::string>().rfind("fco_", 0), 0u);
  EXPECT_EQ(items[4]["content"][0]["type"], "output_text");
  EXPECT_EQ(items[4]["content"][0]["text"], "It is sunny.");
  // The context keeps the items as they came, typed.
  EXPECT_EQ(json::parse(r->context)[0], json::parse(R"({"type": "message", "role": "developer",
    "content": "Use tools."})"));
}

TEST(ParseResponsesRequest, AnUnknownPreviousResponseIsTheLookupsNotFound) {
  int lookups = 0;
  auto r = ParseResponsesRequest(R"({"input": "hi", "previous_response_id": "resp_2"})",
                                 WithStored(&lookups));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(r.status().param(), "previous_response_id");
  EXPECT_NE(r.status().message().find("resp_2"), std::string::npos);
  // A bad input next to a good id still names the input.
  auto bad = ParseResponsesRequest(R"({"input": [{"role": "user"}], "previous_response_id":
    "resp_1"})",
                                   WithStored(&lookups));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().param(), "input[0].content");
}

// A conversation holding one earlier exchange.
ResponsesParseOptions WithConversation(int* lookups) {
  ResponsesParseOptions o;
  o.previous = [](const std::string& id) -> StatusOr<std::string> { return std::string("[]"); };
  o.conversation = [lookups](const std::string& id) -> StatusOr<std::string> {
    ++*lookups;
    if (id != "conv_1")
      return Status::NotFound("no conversation with id '" + id + "'", "conversation");
    return std::string(R"([{"type": "message", "id": "msg_u", "role": "user", "status":
      "completed", "content": [{"type": "input_text", "text": "Pump 3 is loud."}]},
      {"type": "message", "id": "msg_a", "status": "completed", "role": "assistant",
       "content": [{"type": "output_text", "text": "Check its bearing.", "annotations": []}]}])");
  };
  return o;
}

TEST(ParseResponsesRequest, AConversationsItemsComeAfterTheInstructionsAndBeforeTheInput) {
  int lookups = 0;
  for (const char* conversation : {R"("conv_1")", R"({"id": "conv_1"})"}) {
    auto r = ParseResponsesRequest(std::string(R"({"instructions": "Be brief.", "input":
      "Which pump?", "conversation": )") +
                                       conversation + "}",
                                   WithConversation(&lookups));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const auto& m = r->chat.messages;
    ASSERT_EQ(m.size(), 4u);
    EXPECT_EQ(m[0].content, "Be brief.");
    EXPECT_EQ(m[1].content, "Pump 3 is loud.");
    EXPECT_EQ(m[2].role, "assistant");
    EXPECT_EQ(m[2].content, "Check its bearing.");
    EXPECT_EQ(m[3].content, "Which pump?");
    EXPECT_EQ(r->conversation_id, "conv_1");
    EXPECT_TRUE(r->previous_response_id.empty());
    EXPECT_EQ(json::parse(r->echo)["conversation"], json({{"id", "conv_1"}}));
    // input_items: this input only; the context: the conversation, then it.
    EXPECT_EQ(json::parse(r->input_items).size(), 1u);
    const json context = json::parse(r->context);
    ASSERT_EQ(context.size(), 3u);
    EXPECT_EQ(context[1]["id"], "msg_a");
    // An upstream gets the items, not an id it never saw.
    const json expanded = json::parse(r->expanded_body);
    EXPECT_FALSE(expanded.contains("conversation"));
    EXPECT_EQ(expanded["input"], context);
  }
  EXPECT_EQ(lookups, 2);
  // A response outside a conversation says nothing of one.
  auto plain = ParseResponsesRequest(R"({"input": "hi"})", WithConversation(&lookups));
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(json::parse(plain->echo).contains("conversation"));
}

TEST(ParseResponsesRequest, AConversationIsNotAlsoAPreviousResponseAndMustExist) {
  int lookups = 0;
  auto both = ParseResponsesRequest(
      R"({"input": "hi", "conversation": "conv_1", "previous_response_id": "resp_1"})",
      WithConversation(&lookups));
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(both.status().param(), "conversation");
  EXPECT_NE(both.status().message().find("mutually exclusive"), std::string::npos);
  auto unknown = ParseResponsesRequest(R"({"input": "hi", "conversation": "conv_2"})",
                                       WithConversation(&lookups));
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(unknown.status().param(), "conversation");
  EXPECT_EQ(lookups, 1);
}

TEST(ParseResponsesRequest, ABackgroundResponseIsStored) {
  ResponsesParseOptions po;
  po.previous = [](const std::string&) -> StatusOr<std::string> { return std::string("[]"); };
  auto r = ParseResponsesRequest(R"({"input": "hi", "background": true})", po);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->background);
  const auto echo = nlohmann::json::parse(r->echo);
  EXPECT_EQ(echo["background"], true);
  EXPECT_EQ(echo["store"], true);
  auto unstored =
      ParseResponsesRequest(R"({"input": "hi", "background": true, "store": false})", po);
  ASSERT_FALSE(unstored.ok());
  EXPECT_EQ(unstored.status().param(), "background");
  EXPECT_NE(unstored.status().message().find("needs store: true"), std::string::npos);
  auto plain = ParseResponsesRequest(R"({"input": "hi", "background": false})", po);
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->background);
  EXPECT_FALSE(nlohmann::json::parse(plain->echo).contains("background"));
}

TEST(ForResponses, NamesTheResponsesFieldsAndKeepsTheRest) {
  const Status chat = Status::InvalidArgument(
                          "the context per session is 64 tokens; lower "
                          "max_tokens or shorten the prompt",
                          "max_tokens")
                          .WithErrorCode("context_length_exceeded")
                          .WithRetryAfter(3);
  const Status out = ForResponses(chat);
  EXPECT_EQ(out.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(out.param(), "max_output_tokens");
  EXPECT_EQ(out.message(),
            "the context per session is 64 tokens; lower max_output_tokens or shorten the input");
  EXPECT_EQ(out.error_code(), "context_length_exceeded");
  EXPECT_EQ(out.retry_after_s(), 3);
}

TEST(ListedInputItems, ChecksEachItemAndGivesItAnId) {
  util::Random& random = util::RealRandom();
  auto ok = ListedInputItems(json::parse(R"([{"role": "user", "content": "hi"},
    {"type": "function_call_output", "call_id": "c1", "output": "42", "id": "fco_mine"}])"),
                             "items", random);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ASSERT_EQ(ok->size(), 2u);
  EXPECT_EQ((*ok)[0]["type"], "message");
  EXPECT_EQ(json((*ok)[0]["content"][0]), json({{"type", "input_text"}, {"text", "hi"}}));
  EXPECT_EQ((*ok)[1]["id"], "fco_mine");
  auto bad = ListedInputItems(json::parse(R"([{"role": "user", "content": "hi"},
    {"type": "function_call", "name": "f"}])"),
                              "items", random);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().param(), "items[1].call_id");
  EXPECT_EQ(ListedInputItems(json("hi"), "items", random).status().param(), "items");
}

TEST(ParseResponsesRequest, AnItemReferenceIsTheStoredItemItNames) {
  ResponsesParseOptions o;
  std::vector<std::string> asked;
  o.item = [&](const std::string& id, const std::string& param) -> StatusOr<std::string> {
    asked.push_back(id + " " + param);
    if (id == "fc_1") {
      return std::string(R"({"type": "function_call", "id": "fc_1", "call_id": "c1",
        "name": "weather", "arguments": "{}", "status": "completed"})");
    }
    return Status::NotFound("no stored item with id '" + id + "'", param);
  };
  auto r = ParseResponsesRequest(R"({"input": [
    {"role": "user", "content": "Weather?"},
    {"type": "item_reference", "id": "fc_1"},
    {"type": "function_call_output", "call_id": "c1", "output": "sunny"}]})",
                                 o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->chat.messages.size(), 3u);
  EXPECT_EQ(r->chat.messages[1].role, "assistant");
  const json calls = json::parse(r->chat.messages[1].tool_calls);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]["function"]["name"], "weather");
  EXPECT_EQ(asked, std::vector<std::string>{"fc_1 input[1].id"});
  // The item in its place everywhere: listed, in the context, and in the
  // body an upstream gets (which could not resolve the id).
  EXPECT_EQ(json::parse(r->input_items)[1]["id"], "fc_1");
  EXPECT_EQ(json::parse(r->context)[1]["name"], "weather");
  const json expanded = json::parse(r->expanded_body);
  EXPECT_EQ(expanded["input"][1]["type"], "function_call");
  auto again = ParseResponsesRequest(r->expanded_body);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->chat.messages.size(), 3u);

  auto unknown =
      ParseResponsesRequest(R"({"input": ["x", {"type": "item_reference", "id": "msg_9"}]})", o);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(unknown.status().param(), "input[1].id");
}

TEST(ParseResponsesRequest, AnItemReferenceNamesAnItemOfTheConversationSoFar) {
  int lookups = 0;
  ResponsesParseOptions o = WithConversation(&lookups);
  std::vector<std::string> asked;
  o.item = [&](const std::string& id, const std::string& param) -> StatusOr<std::string> {
    asked.push_back(id);
    return Status::NotFound("no stored item with id '" + id + "'", param);
  };
  // msg_u was added through the Conversations API: no stored response has it.
  auto r = ParseResponsesRequest(R"({"conversation": "conv_1", "input": [
    {"type": "item_reference", "id": "msg_u"}, {"role": "user", "content": "Again?"}]})",
                                 o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->chat.messages.size(), 4u);
  EXPECT_EQ(r->chat.messages[2].content, "Pump 3 is loud.");
  EXPECT_TRUE(asked.empty());
  // One it does not hold is asked of the stored responses, and not found.
  auto unknown = ParseResponsesRequest(R"({"conversation": "conv_1", "input": [
    {"type": "item_reference", "id": "msg_x"}]})",
                                       o);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(unknown.status().param(), "input[0].id");
  EXPECT_EQ(asked, std::vector<std::string>{"msg_x"});
}

}  // namespace
}  // namespace outpost::api
