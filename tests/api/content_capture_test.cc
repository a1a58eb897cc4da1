// ContentCaptureSink and its helpers: the input in the GenAI conventions'
// shape, text read back from relayed bodies, one event per answer with the
// answer's text, cuts on UTF-8 boundaries, calls passed through unchanged.
#include "outpost/api/content_capture_sink.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <vector>

namespace outpost::api {
namespace {

using nlohmann::json;

// The inner sink: counts what reached it.
class CountingSink final : public router::ResponseSink {
 public:
  void OnRoute(const router::RouteReport&) override { ++routes; }
  void OnHeader(const std::string&, const std::string&) override {}
  void OnLocalStart(const router::LocalAnswerMeta&) override { ++starts; }
  void OnText(int, std::string t) override { text += t; }
  void OnLogprobs(int, std::vector<scheduler::TokenInfo>) override {}
  void OnDone(scheduler::GenerationResult) override { ++done; }
  void OnRelayHead(int, const std::string&) override {}
  void OnRelayBody(std::string chunk) override { relayed += chunk; }
  void OnRelayEnd(Status) override { ++done; }
  void OnError(Status) override { ++errors; }
  bool Cancelled() override { return false; }
  int routes = 0, starts = 0, done = 0, errors = 0;
  std::string text, relayed;
};

router::CompletionRequest Chat() {
  router::CompletionRequest r;
  r.endpoint = router::Endpoint::kChat;
  r.messages.emplace_back("system", "You are terse.");
  r.messages.emplace_back("user", "Capital of France?");
  engine::ChatMessage call("assistant", "");
  call.tool_calls =
      R"([{"id":"c1","type":"function","function":{"name":"lookup","arguments":"{\"q\":\"France\"}"}}])";
  r.messages.push_back(call);
  engine::ChatMessage result("tool", "Paris");
  result.tool_call_id = "c1";
  r.messages.push_back(result);
  return r;
}

TEST(CaptureInput, ChatMessagesInTheGenAiShape) {
  const CapturedInput in = CaptureInput(Chat(), kMaxContentBytes);
  EXPECT_FALSE(in.truncated);
  EXPECT_EQ(json::parse(in.system_json),
            json::parse(R"([{"type":"text","content":"You are terse."}])"));
  const json input = json::parse(in.input_json);
  ASSERT_EQ(input.size(), 3u);
  EXPECT_EQ(input[0], json::parse(R"({"role":"user","parts":[{"type":"text",
                                      "content":"Capital of France?"}]})"));
  EXPECT_EQ(input[1]["parts"][0], json::parse(R"({"type":"tool_call","id":"c1","name":"lookup",
                                                 "arguments":"{\"q\":\"France\"}"})"));
  EXPECT_EQ(input[2], json::parse(R"({"role":"tool","parts":[{"type":"tool_call_response",
                                      "id":"c1","response":"Paris"}]})"));
}

TEST(CaptureInput, ACompletionPromptIsOneUserMessageAndCutsKeepWholeCharacters) {
  router::CompletionRequest r;
  r.endpoint = router::Endpoint::kCompletion;
  r.prompt = "ab\xC3\xA9z";               // "abéz": the é is two bytes
  CapturedInput in = CaptureInput(r, 3);  // would cut inside the é
  EXPECT_TRUE(in.truncated);
  EXPECT_EQ(json::parse(in.input_json)[0]["parts"][0]["content"], "ab");
  EXPECT_EQ(in.system_json, "");
  in = CaptureInput(r, 5);
  EXPECT_FALSE(in.truncated);
  EXPECT_EQ(json::parse(in.input_json)[0]["parts"][0]["content"], "ab\xC3\xA9z");
}

TEST(RelayedText, WholeBodiesAndStreams) {
  auto t = RelayedText(R"({"choices":[{"index":0,"message":{"role":"assistant","content":"Paris."}},
                          {"index":1,"message":{"content":"Lyon?"}}]})");
  EXPECT_EQ(t[0], "Paris.");
  EXPECT_EQ(t[1], "Lyon?");
  t = RelayedText(
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Par\"}}]}\r\n\r\n"
      "data: not json\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"is\"}}]}\n\n"
      "data: [DONE]\n\n");
  EXPECT_EQ(t[0], "Paris");
  EXPECT_EQ(RelayedText(R"({"choices":[{"index":0,"text":" Paris"}]})")[0], " Paris");
  EXPECT_TRUE(RelayedText("garbage").empty());
}

TEST(ContentCaptureSink, OneEventWithTheAnswerAndEveryCallPassedThrough) {
  auto inner = std::make_shared<CountingSink>();
  std::vector<telemetry::UplinkEvent> sent;
  {
    ContentCaptureSink sink(
        inner, [&](telemetry::UplinkEvent e) { sent.push_back(std::move(e)); },
        {"chatcmpl-1", "chat", "lab", "default"}, CaptureInput(Chat(), kMaxContentBytes), 1234);
    sink.OnRoute({"local", "default"});
    sink.OnLocalStart({"smollm2", "fp", nullptr, "1"});
    sink.OnText(0, "The capital ");
    sink.OnText(0, "is Paris.");
    scheduler::GenerationResult r;
    r.finish = scheduler::FinishReason::kStop;
    r.choices = {scheduler::FinishReason::kStop};
    r.usage.prompt_tokens = 20;
    r.usage.completion_tokens = 5;
    sink.OnDone(r);
  }  // destroying it sends nothing more
  EXPECT_EQ(inner->routes, 1);
  EXPECT_EQ(inner->starts, 1);
  EXPECT_EQ(inner->done, 1);
  EXPECT_EQ(inner->text, "The capital is Paris.");
  ASSERT_EQ(sent.size(), 1u);
  const auto& e = sent[0];
  EXPECT_EQ(e.name, "gen_ai.client.inference.operation.details");
  EXPECT_EQ(e.severity, "DEBUG");
  EXPECT_EQ(e.time_ms, 1234);
  const auto& a = e.attributes;
  EXPECT_EQ(json::parse(a.at("gen_ai.output.messages")),
            json::parse(R"([{"role":"assistant","parts":[{"type":"text",
                            "content":"The capital is Paris."}],"finish_reason":"stop"}])"));
  EXPECT_EQ(json::parse(a.at("gen_ai.input.messages"))[0]["parts"][0]["content"],
            "Capital of France?");
  EXPECT_EQ(a.at("gen_ai.response.id"), "chatcmpl-1");
  EXPECT_EQ(a.at("gen_ai.response.model"), "smollm2");
  EXPECT_EQ(a.at("gen_ai.usage.input_tokens"), "20");
  EXPECT_EQ(a.at("gen_ai.usage.output_tokens"), "5");
  EXPECT_EQ(a.at("gen_ai.response.finish_reasons"), R"(["stop"])");
  EXPECT_EQ(a.at("outpost.tenant"), "lab");
  EXPECT_EQ(a.at("outpost.route"), "local");
  EXPECT_EQ(a.count("outpost.content_truncated"), 0u);
  EXPECT_EQ(a.count("error.type"), 0u);
}

TEST(ContentCaptureSink, RelayedAnswersAreReadBackAndACancelStillSendsOnce) {
  auto inner = std::make_shared<CountingSink>();
  std::vector<telemetry::UplinkEvent> sent;
  auto emit = [&](telemetry::UplinkEvent e) { sent.push_back(std::move(e)); };
  const std::string first =
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Pa\"}}]}\n\n";
  const std::string second =
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ris\"}}]}\n\n";
  {
    ContentCaptureSink sink(inner, emit, {"chatcmpl-2", "chat", "lab", "large"},
                            CaptureInput(Chat(), kMaxContentBytes), 1);
    sink.OnRoute({"central:hq", "alias"});
    sink.OnRelayHead(200, "text/event-stream");
    sink.OnRelayBody(first);
    sink.OnRelayBody(second);
    sink.OnRelayEnd(Status::Ok());
  }
  EXPECT_EQ(inner->relayed, first + second);  // both chunks passed through whole
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(json::parse(sent[0].attributes.at("gen_ai.output.messages"))[0]["parts"][0]["content"],
            "Paris");
  EXPECT_EQ(sent[0].attributes.at("outpost.route"), "central:hq");

  {  // Cancelled before any answer: one event, saying so.
    ContentCaptureSink sink(inner, emit, {"chatcmpl-3", "chat", "lab", ""},
                            CaptureInput(Chat(), kMaxContentBytes), 1);
  }
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[1].attributes.at("error.type"), "cancelled");
  EXPECT_EQ(sent[1].attributes.at("gen_ai.output.messages"), "[]");
}

TEST(ContentCaptureSink, ALongAnswerIsCutAndSaysSo) {
  auto inner = std::make_shared<CountingSink>();
  std::vector<telemetry::UplinkEvent> sent;
  {
    ContentCaptureSink sink(
        inner, [&](telemetry::UplinkEvent e) { sent.push_back(std::move(e)); },
        {"cmpl-4", "text_completion", "lab", ""}, CaptureInput(Chat(), kMaxContentBytes), 1);
    const std::string piece(1000, 'x');
    for (int i = 0; i < 40; ++i) sink.OnText(0, piece);
    scheduler::GenerationResult r;
    r.finish = scheduler::FinishReason::kLength;
    sink.OnDone(r);
  }
  EXPECT_EQ(inner->text.size(), 40000u);  // the client gets everything
  ASSERT_EQ(sent.size(), 1u);
  const json out = json::parse(sent[0].attributes.at("gen_ai.output.messages"));
  EXPECT_EQ(out[0]["parts"][0]["content"].get<std::string>().size(), kMaxContentBytes);
  EXPECT_EQ(out[0]["finish_reason"], "length");
  EXPECT_EQ(sent[0].attributes.at("outpost.content_truncated"), "true");
}

}  // namespace
}  // namespace outpost::api
