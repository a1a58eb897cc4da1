#include "outpost/api/openai_request.h"

#include <gtest/gtest.h>

namespace outpost::api {
namespace {

constexpr int32_t kVocab = 1000;

TEST(ParseRequest, ChatDefaultsAndFields) {
  auto r = ParseRequest(Endpoint::kChat, R"({
    "model": "m", "messages": [{"role": "system", "content": "be brief"},
                               {"role": "user", "content": [{"type": "text", "text": "hi"}]}],
    "temperature": 0, "top_p": 0.9, "top_k": 40, "min_p": 0.05, "seed": 7,
    "presence_penalty": 0.5, "frequency_penalty": -0.5, "max_tokens": 12,
    "stop": ["\n\n", "END"], "logit_bias": {"42": -100, "7": 2.5},
    "stream": true, "stream_options": {"include_usage": true}})",
                        kVocab);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->model, "m");
  ASSERT_EQ(r->messages.size(), 2u);
  EXPECT_EQ(r->messages[1].content, "hi");
  EXPECT_EQ(r->sampling.temperature, 0.0f);
  EXPECT_FLOAT_EQ(*r->sampling.top_p, 0.9f);
  EXPECT_EQ(r->sampling.top_k, 40);
  EXPECT_TRUE(r->sampling.has_seed);
  EXPECT_EQ(r->sampling.seed, 7u);
  EXPECT_EQ(r->max_tokens, 12);
  EXPECT_EQ(r->stop, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_EQ(r->sampling.logit_bias.size(), 2u);
  EXPECT_TRUE(r->stream);
  EXPECT_TRUE(r->include_usage);
}

TEST(ParseRequest, UnsetSamplingKnobsStayUnset) {
  auto r =
      ParseRequest(Endpoint::kChat, R"({"messages": [{"role": "user", "content": "hi"}]})", kVocab);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->sampling.temperature.has_value());
  EXPECT_FALSE(r->sampling.top_k.has_value());
  EXPECT_FALSE(r->sampling.top_p.has_value());
  EXPECT_FALSE(r->sampling.min_p.has_value());
  EXPECT_FALSE(r->sampling.repeat_penalty.has_value());
}

TEST(ParseRequest, ServiceTierPicksTheAdmissionClassUnlessTheHeaderAsksForBatch) {
  using scheduler::Priority;
  const std::vector<std::pair<std::string, Priority>> tiers = {{"priority", Priority::kPriority},
                                                               {"default", Priority::kInteractive},
                                                               {"auto", Priority::kInteractive},
                                                               {"flex", Priority::kFlex}};
  for (const auto& [tier, want] : tiers) {
    auto r = ParseRequest(
        Endpoint::kChat,
        R"({"service_tier": ")" + tier + R"(", "messages": [{"role": "user", "content": "hi"}]})",
        kVocab);
    ASSERT_TRUE(r.ok()) << tier << ": " << r.status().message();
    EXPECT_EQ(AdmissionClass(Priority::kInteractive, *r), want) << tier;
    EXPECT_EQ(AdmissionClass(Priority::kBatch, *r), Priority::kBatch) << tier;
  }
  auto plain = ParseRequest(Endpoint::kCompletion, R"({"prompt": "hi"})", kVocab);
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->service_tier.has_value());
  EXPECT_EQ(AdmissionClass(Priority::kInteractive, *plain), Priority::kInteractive);
  EXPECT_STREQ(scheduler::ServiceTierName(Priority::kBatch), "flex");
}

TEST(ParseRequest, ResponseFormats) {
  using Type = engine::ResponseFormat::Type;
  auto parse = [](const std::string& rf) {
    return ParseRequest(
        Endpoint::kChat,
        R"({"messages": [{"role": "user", "content": "hi"}], "response_format": )" + rf + "}",
        kVocab);
  };
  auto text = parse(R"({"type": "text"})");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->response_format.type, Type::kText);
  auto obj = parse(R"({"type": "json_object"})");
  ASSERT_TRUE(obj.ok());
  EXPECT_EQ(obj->response_format.type, Type::kJsonObject);
  auto schema = parse(
      R"({"type": "json_schema", "json_schema": {"name": "defect", "strict": true,
          "schema": {"type": "object", "properties": {"part": {"type": "string"}}}}})");
  ASSERT_TRUE(schema.ok()) << schema.status().ToString();
  EXPECT_EQ(schema->response_format.type, Type::kJsonSchema);
  // The client's key order is kept: the grammar writes properties in it.
  EXPECT_EQ(schema->response_format.schema,
            R"({"type":"object","properties":{"part":{"type":"string"}}})");
  EXPECT_FALSE(schema->tools.active());

  struct Bad {
    const char* rf;
    const char* param;
  };
  for (const Bad& b : {Bad{R"("json")", "response_format"}, Bad{R"({})", "response_format.type"},
                       Bad{R"({"type": "xml"})", "response_format.type"},
                       Bad{R"({"type": "json_schema"})", "response_format.json_schema"},
                       Bad{R"({"type": "json_schema", "json_schema": {"schema": {}}})",
                           "response_format.json_schema.name"},
                       Bad{R"({"type": "json_schema", "json_schema": {"name": "a b"}})",
                           "response_format.json_schema.name"},
                       Bad{R"({"type": "json_schema", "json_schema": {"name": "a", "schema": 3}})",
                           "response_format.json_schema.schema"},
                       Bad{R"({"type": "json_schema", "json_schema": {"name": "a", "strict": 1}})",
                           "response_format.json_schema.strict"}}) {
    auto r = parse(b.rf);
    ASSERT_FALSE(r.ok()) << b.rf;
    EXPECT_EQ(r.status().param(), b.param) << b.rf << ": " << r.status().ToString();
  }
}

// llama-server's `grammar`: GBNF as the one constraint, on both endpoints.
TEST(ParseRequest, AGrammarIsTheOneConstraint) {
  using Type = engine::ResponseFormat::Type;
  const std::string gbnf = R"(root ::= \"yes\" | \"no\")";
  auto chat = ParseRequest(
      Endpoint::kChat,
      R"({"messages": [{"role": "user", "content": "hi"}], "grammar": ")" + gbnf + R"("})", kVocab);
  ASSERT_TRUE(chat.ok()) << chat.status().ToString();
  EXPECT_EQ(chat->response_format.type, Type::kGrammar);
  EXPECT_EQ(chat->response_format.grammar, R"(root ::= "yes" | "no")");
  auto comp = ParseRequest(Endpoint::kCompletion,
                           R"({"prompt": "x", "grammar": ")" + gbnf + R"("})", kVocab);
  ASSERT_TRUE(comp.ok()) << comp.status().ToString();
  EXPECT_EQ(comp->response_format.type, Type::kGrammar);
  // Empty or null: none, as llama-server.
  for (const char* none : {R"("")", "null"}) {
    auto r = ParseRequest(Endpoint::kCompletion,
                          std::string(R"({"prompt": "x", "grammar": )") + none + "}", kVocab);
    ASSERT_TRUE(r.ok()) << none;
    EXPECT_EQ(r->response_format.type, Type::kText) << none;
  }
  struct Bad {
    std::string body;
    const char* words;
  };
  const std::string msgs = R"("messages": [{"role": "user", "content": "hi"}])";
  for (const Bad& b : {
           Bad{"{" + msgs + R"(, "grammar": 5})", "must be a string (GBNF), got a number"},
           Bad{"{" + msgs + R"(, "grammar": ["root ::= \"a\""]})", "got an array"},
           Bad{"{" + msgs + R"(, "grammar": ")" + gbnf +
                   R"(", "response_format": {"type": "json_object"}})",
               "cannot be combined with 'response_format'"},
           Bad{"{" + msgs + R"(, "grammar": ")" + gbnf +
                   R"(", "tools": [{"type": "function", "function": {"name": "f"}}]})",
               "cannot be combined with 'tools'"},
       }) {
    auto r = ParseRequest(Endpoint::kChat, b.body, kVocab);
    ASSERT_FALSE(r.ok()) << b.body;
    EXPECT_EQ(r.status().param(), "grammar") << b.body;
    EXPECT_NE(r.status().message().find(b.words), std::string::npos) << r.status().message();
  }
}

TEST(ParseRequest, SeveralPromptsBecomeABatch) {
  auto r = ParseRequest(Endpoint::kCompletion, R"({"prompt": ["Once", [5, 6, 7]]})", kVocab);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->batch_prompts.size(), 2u);
  EXPECT_EQ(r->batch_prompts[0].text, "Once");
  EXPECT_EQ(r->batch_prompts[1].tokens, (std::vector<engine::Token>{5, 6, 7}));
  auto one = ParseRequest(Endpoint::kCompletion, R"({"prompt": [[5, 6]]})", kVocab);
  ASSERT_TRUE(one.ok());
  EXPECT_TRUE(one->batch_prompts.empty());
  EXPECT_EQ(one->prompt_tokens, (std::vector<engine::Token>{5, 6}));
}

TEST(ParseRequest, CompletionPromptForms) {
  auto text = ParseRequest(Endpoint::kCompletion, R"({"prompt": "Once"})", kVocab);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->prompt, "Once");
  auto one = ParseRequest(Endpoint::kCompletion, R"({"prompt": ["Once"]})", kVocab);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->prompt, "Once");
  auto toks = ParseRequest(Endpoint::kCompletion, R"({"prompt": [1, 2, 3]})", kVocab);
  ASSERT_TRUE(toks.ok());
  EXPECT_EQ(toks->prompt_tokens, (std::vector<engine::Token>{1, 2, 3}));
  auto mct =
      ParseRequest(Endpoint::kCompletion, R"({"prompt": "x", "max_completion_tokens": 5})", kVocab);
  ASSERT_TRUE(mct.ok());
  EXPECT_EQ(mct->max_tokens, 5);
}

TEST(ParseRequest, ASuffixAsksToFillInTheMiddle) {
  auto r = ParseRequest(Endpoint::kCompletion, R"({"prompt": "int f() {", "suffix": "}"})", kVocab);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->infill.has_value());
  EXPECT_EQ(r->prompt, "int f() {");
  EXPECT_EQ(r->infill->suffix, "}");
  // The cursor at the start of a file: nothing before the gap.
  auto start = ParseRequest(Endpoint::kCompletion, R"({"prompt": "", "suffix": "}"})", kVocab);
  ASSERT_TRUE(start.ok()) << start.status().ToString();
  EXPECT_EQ(start->prompt, "");
  // Each of several prompts before the same suffix.
  auto several =
      ParseRequest(Endpoint::kCompletion, R"({"prompt": ["a", "b"], "suffix": "}"})", kVocab);
  ASSERT_TRUE(several.ok());
  EXPECT_EQ(several->batch_prompts.size(), 2u);
  EXPECT_TRUE(several->infill.has_value());
  // null, or not given: a plain completion.
  for (const char* body : {R"({"prompt": "x", "suffix": null})", R"({"prompt": "x"})"}) {
    auto plain = ParseRequest(Endpoint::kCompletion, body, kVocab);
    ASSERT_TRUE(plain.ok());
    EXPECT_FALSE(plain->infill.has_value()) << body;
  }
}

struct BadCase {
  Endpoint endpoint;
  std::string body;
  const char* param;         // expected param ("" = none)
  const char* message_part;  // must appear in the message
};

// n object members: "k0": {}, "k1": {}, ...
std::string Members(int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += (i ? ", \"k" : "\"k") + std::to_string(i) + "\": {}";
  return out;
}

void PrintTo(const BadCase& c, std::ostream* os) {
  *os << c.body;
}

class BadRequests : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadRequests, NameTheFieldAndTheProblem) {
  const BadCase& c = GetParam();
  auto r = ParseRequest(c.endpoint, c.body, kVocab);
  ASSERT_FALSE(r.ok()) << c.body;
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().param(), c.param) << r.status().message();
  EXPECT_NE(r.status().message().find(c.message_part), std::string::npos)
      << "message: " << r.status().message() << "\nwanted: " << c.message_part;
}

const auto kChat = Endpoint::kChat;
const auto kComp = Endpoint::kCompletion;
#define MSGS R"("messages":[{"role":"user","content":"hi"}])"

INSTANTIATE_TEST_SUITE_P(
    Table, BadRequests,
    ::testing::Values(
        BadCase{kChat, "{not json", "", "not valid JSON"},
        BadCase{kChat, R"({"tools": {}, )" MSGS "}", "tools", "must be an array"},
        BadCase{kChat, R"({"tools": [{"type": "code"}], )" MSGS "}", "tools[0].type", "function"},
        BadCase{kChat, R"({"tools": [{"type": "function"}], )" MSGS "}", "tools[0].function",
                "required"},
        BadCase{kChat,
                R"({"tools": [{"type": "function", "function": {"name": "a.b"}}], )" MSGS "}",
                "tools[0].function.name", "1 to 64"},
        BadCase{kChat,
                R"({"tools": [{"type": "function", "function": {"name": "f"}},
                              {"type": "function", "function": {"name": "f"}}], )" MSGS "}",
                "tools[1].function.name", "declared twice"},
        BadCase{
            kChat,
            R"({"tools": [{"type": "function", "function": {"name": "f", "parameters": 1}}], )" MSGS
            "}",
            "tools[0].function.parameters", "must be an object"},
        BadCase{kChat, R"({"tool_choice": "sometimes", )" MSGS "}", "tool_choice", "none, auto"},
        BadCase{kChat, R"({"tool_choice": "required", )" MSGS "}", "tool_choice",
                "requires 'tools'"},
        BadCase{kChat,
                R"({"tools": [{"type": "function", "function": {"name": "f"}}],
                    "tool_choice": {"type": "function", "function": {"name": "g"}}, )" MSGS "}",
                "tool_choice", "not in 'tools'"},
        BadCase{kChat, R"({"messages": [{"role": "tool", "content": "42"}]})",
                "messages[0].tool_call_id", "required"},
        BadCase{kChat, R"({"messages": [{"role": "user", "content": "x", "tool_calls": []}]})",
                "messages[0].tool_calls", "only allowed on assistant"},
        // A schema is read in written order, which costs a scan per member:
        // objects past 1,000 members are refused before that.
        BadCase{kChat,
                R"({"response_format": {"type": "json_schema", "json_schema": {"name": "x",
                    "schema": {"type": "object", "properties": {)" +
                    Members(1001) + "}}}}, " MSGS "}",
                "response_format", "an object of 1001 members; at most 1000"},
        BadCase{kChat, "[1,2]", "", "must be a JSON object"},
        BadCase{kChat, "{}", "messages", "'messages' is required"},
        BadCase{kChat, R"({"messages": "hi"})", "messages", "must be an array"},
        BadCase{kChat, R"({"messages": []})", "messages", "must not be empty"},
        BadCase{kChat, R"({"messages": [42]})", "messages[0]", "must be an object"},
        BadCase{kChat, R"({"messages": [{"content": "x"}]})", "messages[0].role", "is required"},
        BadCase{kChat, R"({"messages": [{"role": "wizard", "content": "x"}]})", "messages[0].role",
                "got 'wizard'"},
        BadCase{kChat, R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content",
                "got a number"},
        BadCase{kChat, R"({"messages": [{"role": "user"}]})", "messages[0].content", "is required"},
        BadCase{kChat, R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})",
                "messages[0].content[0].type", "not supported"},
        BadCase{kChat, R"({"model": 3, )" MSGS "}", "model", "must be a string"},
        BadCase{kChat, R"({"temperature": 2.5, )" MSGS "}", "temperature", "between 0 and 2"},
        BadCase{kChat, R"({"temperature": "hot", )" MSGS "}", "temperature", "must be a number"},
        BadCase{kChat, R"({"top_p": 1.5, )" MSGS "}", "top_p", "between 0 and 1"},
        BadCase{kChat, R"({"top_p": 0, )" MSGS "}", "top_p", "greater than 0"},
        BadCase{kChat, R"({"top_k": -1, )" MSGS "}", "top_k", "between 0"},
        BadCase{kChat, R"({"min_p": -0.1, )" MSGS "}", "min_p", "between 0 and 1"},
        BadCase{kChat, R"({"presence_penalty": 3, )" MSGS "}", "presence_penalty",
                "between -2 and 2"},
        BadCase{kChat, R"({"frequency_penalty": -2.5, )" MSGS "}", "frequency_penalty",
                "between -2 and 2"},
        BadCase{kChat, R"({"max_tokens": 0, )" MSGS "}", "max_tokens", "between 1"},
        BadCase{kChat, R"({"max_tokens": 1.5, )" MSGS "}", "max_tokens", "must be an integer"},
        BadCase{kChat, R"({"n": 0, )" MSGS "}", "n", "between 1 and 128"},
        BadCase{kChat, R"({"user": 5, )" MSGS "}", "user", "a string"},
        BadCase{kChat, R"({"service_tier": "scale", )" MSGS "}", "service_tier",
                "'auto', 'default', 'flex' or 'priority'"},
        BadCase{kChat, R"({"service_tier": 1, )" MSGS "}", "service_tier", "a string"},
        BadCase{kChat, R"({"stop": 5, )" MSGS "}", "stop", "string or an array"},
        BadCase{kChat, R"({"stop": ["a", 1], )" MSGS "}", "stop[1]", "must be a string"},
        BadCase{kChat, R"({"logit_bias": {"abc": 1}, )" MSGS "}", "logit_bias", "not a token id"},
        BadCase{kChat, R"({"logit_bias": {"5000": 1}, )" MSGS "}", "logit_bias",
                "outside the vocabulary"},
        BadCase{kChat, R"({"logit_bias": {"-1": 1}, )" MSGS "}", "logit_bias",
                "token id -1 is negative (ids start at 0)"},
        BadCase{kChat, R"({"logit_bias": {"5": 101}, )" MSGS "}", "logit_bias.5",
                "between -100 and 100"},
        BadCase{kChat, R"({"seed": "x", )" MSGS "}", "seed", "must be an integer"},
        BadCase{kChat, R"({"stream": "yes", )" MSGS "}", "stream", "must be a boolean"},
        BadCase{kChat, R"({"cache_prompt": 0, )" MSGS "}", "cache_prompt", "must be a boolean"},
        BadCase{kChat, R"({"stream_options": {"include_usage": true}, )" MSGS "}", "stream_options",
                "only allowed when 'stream' is true"},
        BadCase{kChat, R"({"stream": true, "stream_options": {"include_usage": 1}, )" MSGS "}",
                "stream_options.include_usage", "must be a boolean"},
        BadCase{kChat, R"({"tools": 5, )" MSGS "}", "tools", "must be an array"},
        BadCase{kComp, "{}", "prompt", "'prompt' is required"},
        BadCase{kComp, R"({"prompt": ""})", "prompt", "must not be empty"},
        BadCase{kComp, R"({"prompt": 12})", "prompt", "must be a string"},
        BadCase{kComp, R"({"prompt": ["a", ""]})", "prompt[1]", "must not be empty"},
        BadCase{kComp, R"({"prompt": ["a", 3]})", "prompt[1]", "a string or an array of token ids"},
        BadCase{kComp, R"({"prompt": [[1, "x"]]})", "prompt[0][1]", "token id"},
        BadCase{kComp, R"({"prompt": [[1], []]})", "prompt[1]", "must not be empty"},
        BadCase{kComp, R"({"prompt": [1, -4]})", "prompt[1]",
                "token id -4 is negative (ids start at 0)"},
        BadCase{kComp, R"({"prompt": "x", "echo": 1})", "echo", "must be a boolean"},
        BadCase{kComp, R"({"prompt": "x", "suffix": 5})", "suffix", "must be a string"},
        BadCase{kComp, R"({"prompt": [1, 2], "suffix": "}"})", "suffix",
                "needs the prompt as text"},
        BadCase{kComp, R"({"prompt": ["a", [1, 2]], "suffix": "}"})", "suffix",
                "needs the prompt as text"},
        BadCase{kComp, R"({"prompt": "x", "suffix": "}", "echo": true})", "echo",
                "cannot be combined with 'suffix'"},
        BadCase{kComp, R"({"prompt": "", "suffix": ""})", "prompt", "must not be empty"}));

TEST(ParseRequest, ToolsAreFlaggedForTheRouter) {
  auto t = ParseRequest(Endpoint::kChat,
                        R"({"tools": [{"type": "function", "function": {"name": "f"}}], )" MSGS "}",
                        kVocab);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE(t->tools.active());
  auto none = ParseRequest(
      Endpoint::kChat,
      R"({"tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "none", )" MSGS
      "}",
      kVocab);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->tools.active());
  EXPECT_FALSE(ParseRequest(Endpoint::kChat, "{" MSGS "}", kVocab)->tools.active());
}

TEST(ParseRequest, AThinkingModelsOptions) {
  auto none = ParseRequest(Endpoint::kChat, "{" MSGS "}", kVocab);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->chat_options.parse_reasoning.has_value());  // the model's default
  EXPECT_TRUE(none->chat_options.enable_thinking);
  EXPECT_TRUE(none->chat_options.template_kwargs.empty());

  auto r = ParseRequest(Endpoint::kChat,
                        R"({"reasoning_format": "none", "reasoning_effort": "high",
                            "chat_template_kwargs": {"enable_thinking": false, "depth": [1, "x"]},
                            "messages": [{"role": "user", "content": "a"},
                                         {"role": "assistant", "content": "b",
                                          "reasoning_content": "I thought."},
                                         {"role": "user", "content": "c"}]})",
                        kVocab);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const engine::ChatOptions& o = r->chat_options;
  EXPECT_EQ(o.parse_reasoning, false);
  EXPECT_FALSE(o.enable_thinking);
  // Values as JSON text, the effort after the kwargs (it wins).
  using KV = std::pair<std::string, std::string>;
  EXPECT_EQ(o.template_kwargs, (std::vector<KV>{{"depth", R"([1,"x"])"},
                                                {"enable_thinking", "false"},
                                                {"reasoning_effort", R"("high")"}}));
  EXPECT_EQ(r->messages[1].reasoning, "I thought.");
  // vLLM's and OpenRouter's name for it too.
  auto alias = ParseRequest(Endpoint::kChat,
                            R"({"messages": [{"role": "user", "content": "a"},
                                             {"role": "assistant", "content": "b",
                                              "reasoning": "Thought."}]})",
                            kVocab);
  ASSERT_TRUE(alias.ok()) << alias.status().ToString();
  EXPECT_EQ(alias->messages[1].reasoning, "Thought.");

  auto off = ParseRequest(Endpoint::kChat, R"({"reasoning_effort": "none", )" MSGS "}", kVocab);
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->chat_options.enable_thinking);
  EXPECT_TRUE(off->chat_options.template_kwargs.empty());
  auto split =
      ParseRequest(Endpoint::kChat, R"({"reasoning_format": "deepseek", )" MSGS "}", kVocab);
  ASSERT_TRUE(split.ok());
  EXPECT_EQ(split->chat_options.parse_reasoning, true);
}

// A schema's properties come out in the order the client wrote them (as
// OpenAI's structured outputs do), so the key order is kept end to end.
TEST(ParseRequest, SchemasAndToolParametersKeepTheClientsKeyOrder) {
  auto r = ParseRequest(
      Endpoint::kChat,
      R"({"response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema":
          {"type": "object", "properties": {"zeta": {"type": "string"}, "alpha": {}},
           "required": ["zeta", "alpha"]}}}, )" MSGS "}",
      kVocab);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->response_format.schema,
            R"({"type":"object","properties":{"zeta":{"type":"string"},"alpha":{}},)"
            R"("required":["zeta","alpha"]})");
  auto t = ParseRequest(Endpoint::kChat,
                        R"({"tools": [{"type": "function", "function": {"name": "f", "parameters":
                            {"type": "object", "properties": {"z": {}, "b": {}, "a": {}}}}}], )" MSGS
                        "}",
                        kVocab);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->tools.functions.size(), 1u);
  EXPECT_EQ(t->tools.functions[0].parameters,
            R"({"type":"object","properties":{"z":{},"b":{},"a":{}}})");
}

// A prefilled answer: continue_final_message (vLLM's true, llama-server's
// "content" / "reasoning_content") leaves the last, assistant message open;
// add_generation_prompt false alone only counts (/tokenize).
TEST(ParseRequest, ContinuingTheLastMessage) {
  using Ending = engine::ChatOptions::Ending;
  const std::string user = R"({"role":"user","content":"Capital of France?"})";
  const auto chat = [&](const std::string& last, const std::string& extra, bool count = false) {
    return ParseRequest(Endpoint::kChat,
                        R"({"messages":[)" + user + "," + last + "], " + extra + "}", kVocab,
                        count);
  };
  const std::string prefix = R"({"role":"assistant","content":"It is"})";
  const std::string thought = R"({"role":"assistant","content":"","reasoning_content":"Hm"})";
  struct Good {
    std::string last, extra;
    Ending ending;
  };
  for (const Good& g : {
           Good{prefix, R"("stream": false)", Ending::kNewTurn},
           Good{prefix, R"("continue_final_message": false)", Ending::kNewTurn},
           Good{prefix, R"("continue_final_message": true)", Ending::kContinueContent},
           Good{prefix, R"("continue_final_message": true, "add_generation_prompt": false)",
                Ending::kContinueContent},
           Good{prefix, R"("continue_final_message": "content")", Ending::kContinueContent},
           // Only thinking so far: `true` continues the thinking, as llama.cpp's AUTO.
           Good{thought, R"("continue_final_message": true)", Ending::kContinueReasoning},
           Good{thought, R"("continue_final_message": "reasoning_content")",
                Ending::kContinueReasoning},
           Good{thought, R"("continue_final_message": "content")", Ending::kContinueContent},
       }) {
    auto r = chat(g.last, g.extra);
    ASSERT_TRUE(r.ok()) << g.extra << ": " << r.status().ToString();
    EXPECT_EQ(r->chat_options.ending, g.ending) << g.last << " " << g.extra;
  }
  auto counted = chat(prefix, R"("add_generation_prompt": false)", /*count=*/true);
  ASSERT_TRUE(counted.ok()) << counted.status().ToString();
  EXPECT_EQ(counted->chat_options.ending, Ending::kNoHeader);

  struct Bad {
    std::string last, extra;
    const char* param;
    const char* message_part;
  };
  for (
      const Bad& b : {
          Bad{prefix, R"("add_generation_prompt": false)", "add_generation_prompt",
              "without the template's assistant header"},
          Bad{prefix, R"("add_generation_prompt": "no")", "add_generation_prompt", "a boolean"},
          Bad{prefix, R"("continue_final_message": true, "add_generation_prompt": true)",
              "add_generation_prompt", "exclude each other"},
          Bad{prefix, R"("continue_final_message": "yes")", "continue_final_message",
              "true, false, 'content' or 'reasoning_content'"},
          Bad{prefix, R"("continue_final_message": 1)", "continue_final_message",
              "true, false, 'content' or 'reasoning_content'"},
          Bad{R"({"role":"user","content":"more"})", R"("continue_final_message": true)",
              "messages[1].role", "must be the assistant's; 'messages[1].role' is 'user'"},
          Bad{R"({"role":"assistant","content":"","tool_calls":[{"id":"c","type":"function",
                  "function":{"name":"f","arguments":"{}"}}]})",
              R"("continue_final_message": true)", "messages[1].tool_calls", "tool calls"},
          Bad{R"({"role":"assistant","content":"It is","reasoning_content":"Hm"})",
              R"("continue_final_message": "reasoning_content")", "messages[1].content",
              "send its content empty"},
          Bad{prefix,
              R"("continue_final_message": true, "response_format": {"type": "json_object"})",
              "continue_final_message", "combined with 'response_format'"},
          Bad{prefix, R"("continue_final_message": true, "grammar": "root ::= \"a\"")",
              "continue_final_message", "combined with 'grammar'"},
          Bad{prefix,
              R"("continue_final_message": true, "tools": [{"type": "function", "function": {"name": "f"}}])",
              "continue_final_message", "combined with 'tools'"},
      }) {
    auto r = chat(b.last, b.extra);
    ASSERT_FALSE(r.ok()) << b.extra;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().param(), b.param) << r.status().message();
    EXPECT_NE(r.status().message().find(b.message_part), std::string::npos)
        << "message: " << r.status().message() << "\nwanted: " << b.message_part;
  }
  // tool_choice none: the tools are not in play, so nothing constrains the answer.
  auto none = chat(prefix, R"("continue_final_message": true, "tool_choice": "none",
                              "tools": [{"type": "function", "function": {"name": "f"}}])");
  EXPECT_TRUE(none.ok()) << none.status().ToString();
}

TEST(ParsePriority, Values) {
  EXPECT_EQ(*ParsePriority(""), scheduler::Priority::kInteractive);
  EXPECT_EQ(*ParsePriority("batch"), scheduler::Priority::kBatch);
  auto bad = ParsePriority("urgent");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().param(), "X-Outpost-Priority");
}

}  // namespace
}  // namespace outpost::api
