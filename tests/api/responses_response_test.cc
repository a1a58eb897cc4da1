#include "outpost/api/responses_response.h"

#include "mocks/seeded_random.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace outpost::api {
namespace {

using nlohmann::json;
using scheduler::FinishReason;

ResponseInfo Info() {
  ResponseInfo info;
  info.id = "resp_1";
  info.created_at = 1000;
  info.model = "m";
  info.echo = R"({"instructions": null, "tools": [], "tool_choice": "auto", "store": false})";
  return info;
}

scheduler::Usage Usage() {
  scheduler::Usage u;
  u.prompt_tokens = 20;
  u.cached_tokens = 12;
  u.completion_tokens = 5;
  return u;
}

struct Event {
  std::string name;
  json data;
};

// Splits SSE text into named events; every event must be "event:" + "data:".
std::vector<Event> Parse(const std::string& sse) {
  std::vector<Event> out;
  size_t at = 0;
  while (at < sse.size()) {
    const size_t end = sse.find("\n\n", at);
    EXPECT_NE(end, std::string::npos);
    if (end == std::string::npos) break;
    const std::string block = sse.substr(at, end - at);
    const size_t nl = block.find('\n');
    EXPECT_EQ(block.rfind("event: ", 0), 0u) << block;
    EXPECT_EQ(block.compare(nl + 1, 6, "data: "), 0) << block;
    out.push_back({block.substr(7, nl - 7), json::parse(block.substr(nl + 7))});
    EXPECT_EQ(out.back().data["type"], out.back().name);
    at = end + 2;
  }
  return out;
}

std::vector<std::string> Names(const std::vector<Event>& events) {
  std::vector<std::string> names;
  for (const auto& e : events) names.push_back(e.name);
  return names;
}

TEST(ResponseBody, ACompletedAnswerIsOneMessage) {
  testing::SeededRandom random(1);
  ResponseInfo info = Info();
  info.completed_at = 1002;
  Choice answer;
  answer.text = "Paris.";
  answer.finish = FinishReason::kStop;
  const json r = json::parse(ResponseBody(info, answer, Usage(), random));
  EXPECT_EQ(r["id"], "resp_1");
  EXPECT_EQ(r["object"], "response");
  EXPECT_EQ(r["created_at"], 1000);
  EXPECT_EQ(r["completed_at"], 1002);
  EXPECT_EQ(r["status"], "completed");
  EXPECT_TRUE(r["error"].is_null());
  EXPECT_TRUE(r["incomplete_details"].is_null());
  EXPECT_EQ(r["model"], "m");
  EXPECT_EQ(r["tool_choice"], "auto");  // from the request
  ASSERT_EQ(r["output"].size(), 1u);
  const json& msg = r["output"][0];
  EXPECT_EQ(msg["type"], "message");
  EXPECT_EQ(msg["role"], "assistant");
  EXPECT_EQ(msg["status"], "completed");
  EXPECT_EQ(msg["id"].get<std::string>().rfind("msg_", 0), 0u);
  EXPECT_EQ(msg["content"][0]["type"], "output_text");
  EXPECT_EQ(msg["content"][0]["text"], "Paris.");
  EXPECT_EQ(msg["content"][0]["annotations"], json::array());
  EXPECT_EQ(r["usage"]["input_tokens"], 20);
  EXPECT_EQ(r["usage"]["input_tokens_details"]["cached_tokens"], 12);
  EXPECT_EQ(r["usage"]["output_tokens"], 5);
  EXPECT_EQ(r["usage"]["total_tokens"], 25);
  EXPECT_EQ(r["usage"]["output_tokens_details"]["reasoning_tokens"], 0);
}

TEST(ResponseBody, CutAtTheLimitIsIncompleteAndCallsAreFunctionCallItems) {
  testing::SeededRandom random(1);
  ResponseInfo info = Info();
  info.completed_at = 1002;
  Choice cut;
  cut.text = "The capital";
  cut.finish = FinishReason::kLength;
  cut.has_logprobs = true;
  cut.logprobs = {{"The", -0.5f, {{"The", -0.5f}, {"A", -1.5f}}}};
  const json r = json::parse(ResponseBody(info, cut, Usage(), random));
  EXPECT_EQ(r["status"], "incomplete");
  EXPECT_EQ(r["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_TRUE(r["completed_at"].is_null());
  EXPECT_EQ(r["output"][0]["status"], "incomplete");
  const json& lp = r["output"][0]["content"][0]["logprobs"];
  ASSERT_EQ(lp.size(), 1u);
  EXPECT_EQ(lp[0]["token"], "The");
  EXPECT_EQ(lp[0]["bytes"], json::array({84, 104, 101}));
  EXPECT_EQ(lp[0]["top_logprobs"][1]["token"], "A");

  Choice calls;
  calls.finish = FinishReason::kStop;
  calls.tool_calls = {{"call_a", "weather", R"({"city":"Paris"})", 0},
                      {"call_b", "weather", R"({"city":"Oslo"})", 1}};
  const json c = json::parse(ResponseBody(info, calls, Usage(), random));
  EXPECT_EQ(c["status"], "completed");
  ASSERT_EQ(c["output"].size(), 2u);  // no empty message before the calls
  EXPECT_EQ(c["output"][0]["type"], "function_call");
  EXPECT_EQ(c["output"][0]["call_id"], "call_a");
  EXPECT_EQ(c["output"][0]["name"], "weather");
  EXPECT_EQ(c["output"][0]["arguments"], R"({"city":"Paris"})");
  EXPECT_EQ(c["output"][0]["id"].get<std::string>().rfind("fc_", 0), 0u);
  EXPECT_EQ(c["output"][1]["call_id"], "call_b");
}

TEST(ResponseEvents, ATextStreamInOrderWithConsecutiveSequenceNumbers) {
  testing::SeededRandom random(1);
  ResponseEvents events(Info(), &random);
  std::string sse = events.Start();
  for (const char* piece : {"Par", "is", "."}) {
    Choice d;
    d.text = piece;
    sse += events.Delta(d);
  }
  sse += events.Finish(FinishReason::kStop, Usage(), 1003);
  const auto ev = Parse(sse);
  EXPECT_EQ(Names(ev), (std::vector<std::string>{
                           "response.created", "response.in_progress", "response.output_item.added",
                           "response.content_part.added", "response.output_text.delta",
                           "response.output_text.delta", "response.output_text.delta",
                           "response.output_text.done", "response.content_part.done",
                           "response.output_item.done", "response.completed"}));
  for (size_t i = 0; i < ev.size(); ++i) EXPECT_EQ(ev[i].data["sequence_number"], i);
  EXPECT_EQ(ev[0].data["response"]["status"], "in_progress");
  EXPECT_TRUE(ev[0].data["response"]["usage"].is_null());
  const std::string item_id = ev[2].data["item"]["id"];
  for (size_t i = 3; i < 10; ++i) {
    if (ev[i].data.contains("item_id")) {
      EXPECT_EQ(ev[i].data["item_id"], item_id);
    }
    EXPECT_EQ(ev[i].data["output_index"], 0);
  }
  EXPECT_EQ(ev[4].data["delta"], "Par");
  EXPECT_EQ(ev[7].data["text"], "Paris.");
  EXPECT_EQ(ev[9].data["item"]["status"], "completed");
  const json& done = ev.back().data["response"];
  EXPECT_EQ(done["status"], "completed");
  EXPECT_EQ(done["completed_at"], 1003);
  EXPECT_EQ(done["output"][0]["id"], item_id);
  EXPECT_EQ(done["output"][0]["content"][0]["text"], "Paris.");
  EXPECT_EQ(done["usage"]["output_tokens"], 5);
  // What is stored: the object the last event carried, and what a relay of
  // this stream finds in it.
  EXPECT_EQ(json::parse(events.final_response()), done);
  EXPECT_EQ(json::parse(FinalResponseOfStream(sse)), done);
}

TEST(FinalResponseOfStream, IsTheLastCompletedOrIncompleteObjectAndNothingElse) {
  testing::SeededRandom random(1);
  ResponseEvents cut(Info(), &random);
  Choice d;
  d.text = "response.completed is a name";  // text that mentions it is not an event
  std::string sse = cut.Start() + cut.Delta(d);
  EXPECT_EQ(FinalResponseOfStream(sse), "");
  EXPECT_EQ(cut.final_response(), "");
  sse += cut.Finish(FinishReason::kLength, Usage(), 1003);
  const json r = json::parse(FinalResponseOfStream(sse));
  EXPECT_EQ(r["status"], "incomplete");
  EXPECT_EQ(r["output"][0]["content"][0]["text"], "response.completed is a name");

  // Another server's spacing, and CRLF line ends.
  const std::string other =
      "event: response.created\r\ndata: {\"type\": \"response.created\", \"response\": "
      "{\"id\": \"resp_x\", \"status\": \"in_progress\"}}\r\n\r\n"
      "event: response.completed\r\ndata: {\"type\": \"response.completed\", "
      "\"response\": {\"id\": \"resp_x\", \"status\": \"completed\"}}\r\n\r\n";
  EXPECT_EQ(json::parse(FinalResponseOfStream(other))["status"], "completed");

  ResponseEvents failed(Info(), &random);
  const std::string f = failed.Start() + failed.Fail(Status::Internal("x"));
  EXPECT_EQ(FinalResponseOfStream(f), "");
  EXPECT_EQ(failed.final_response(), "");
}

TEST(FinalResponseReader, FindsItAsSoonAsItsLineEndsHoweverTheStreamIsCut) {
  testing::SeededRandom random(1);
  ResponseEvents events(Info(), &random);
  Choice d;
  d.text = "a long answer that names response.completed";
  const std::string body = events.Start() + events.Delta(d) + events.Delta(d);
  const std::string last = events.Finish(FinishReason::kStop, Usage(), 1003);
  const std::string sse = body + last;
  // Where the final event's data line ends (its blank line after it).
  const size_t line_end = sse.find('\n', sse.rfind("data:")) + 1;
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{64}, sse.size()}) {
    FinalResponseReader reader(1 << 20);
    std::string found;
    size_t found_at = 0;
    for (size_t at = 0; at < sse.size(); at += chunk) {
      const std::string_view piece = std::string_view(sse).substr(at, chunk);
      if (std::string r = reader.Feed(piece, false); !r.empty()) {
        EXPECT_TRUE(found.empty()) << "found twice, chunk " << chunk;
        found = r;
        found_at = at + piece.size();
      }
    }
    ASSERT_FALSE(found.empty()) << chunk;
    EXPECT_EQ(json::parse(found), json::parse(events.final_response())) << chunk;
    // Not before its line ended, and no later than the chunk that ended it.
    EXPECT_GE(found_at, line_end) << chunk;
    EXPECT_LT(found_at, line_end + chunk) << chunk;
    EXPECT_EQ(reader.Feed("", true), "");
  }
  // A last line without its end counts once the stream has ended.
  FinalResponseReader unended(1 << 20);
  const std::string cut = sse.substr(0, line_end - 1);
  EXPECT_EQ(unended.Feed(cut, false), "");
  EXPECT_EQ(json::parse(unended.Feed("", true))["status"], "completed");
  // A line past the limit gives the stream up.
  FinalResponseReader small(64);
  EXPECT_EQ(small.Feed(sse, true), "");
  EXPECT_TRUE(small.overflow());
  EXPECT_EQ(small.Feed(last, true), "");
}

TEST(ResponseFieldsPatch, SetsTheServersFieldsOnEveryResponseAndNothingElse) {
  const std::string fields =
      R"({"store":true,"previous_response_id":null,"conversation":{"id":"conv_1"}})";
  ResponseFieldsPatch body_patch(fields);
  const json body = json::parse(body_patch.Body(
      R"({"id":"resp_u","object":"response","store":false,"previous_response_id":null,"output":[]})"));
  EXPECT_EQ(body["store"], true);
  EXPECT_EQ(body["conversation"]["id"], "conv_1");
  EXPECT_EQ(body["id"], "resp_u");
  // Not a Response (an error body, text): unchanged.
  for (const std::string& other :
       {std::string(R"({"error":{"message":"x"}})"), std::string("oops")}) {
    EXPECT_EQ(body_patch.Body(other), other);
  }

  // A stream in awkward chunks, with CRLF lines and a delta that mentions
  // "response": only the lifecycle events change.
  const std::string sse =
      "event: response.created\r\ndata: {\"type\":\"response.created\",\"response\":{\"id\":"
      "\"resp_u\",\"store\":false}}\r\n\r\n"
      "event: response.output_text.delta\r\ndata: {\"type\":\"response.output_text.delta\","
      "\"delta\":\"the \\\"response\\\" was\"}\r\n\r\n"
      "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":"
      "\"resp_u\",\"store\":false,\"output\":[]}}\n\n";
  for (size_t piece : {size_t{1}, size_t{7}, sse.size()}) {
    ResponseFieldsPatch patch(fields);
    std::string out;
    for (size_t at = 0; at < sse.size(); at += piece) out += patch.Feed(sse.substr(at, piece));
    out += patch.Finish();
    // The delta event passes byte for byte.
    EXPECT_NE(out.find("event: response.output_text.delta\r\ndata: {\"type\":\"response.output_"
                       "text.delta\",\"delta\":\"the \\\"response\\\" was\"}\r\n\r\n"),
              std::string::npos)
        << out;
    const json final_response = json::parse(FinalResponseOfStream(out));
    EXPECT_EQ(final_response["store"], true) << piece;
    EXPECT_EQ(final_response["conversation"]["id"], "conv_1") << piece;
    EXPECT_EQ(out.find("\"store\":false"), std::string::npos) << out;
    EXPECT_NE(out.find("\r\n\r\nevent: response.completed\n"), std::string::npos) << out;
  }
  // A last line without its end is still written, patched.
  ResponseFieldsPatch open_end(fields);
  std::string out = open_end.Feed("data: {\"response\":{\"store\":false}}");
  EXPECT_EQ(out, "");
  out += open_end.Finish();
  EXPECT_EQ(json::parse(out.substr(5))["response"]["store"], true);
}

TEST(ResponseEvents, TextThenCallsCloseEachItemBeforeTheNext) {
  testing::SeededRandom random(1);
  ResponseEvents events(Info(), &random);
  std::string sse = events.Start();
  Choice text;
  text.text = "Let me check.";
  sse += events.Delta(text);
  Choice first;  // a call's first delta: id and name, then argument text
  first.tool_calls = {{"call_a", "weather", "{\"ci", 0}};
  sse += events.Delta(first);
  Choice more;
  more.tool_calls = {{"", "", "ty\":\"Paris\"}", 0}, {"call_b", "time", "{}", 1}};
  sse += events.Delta(more);
  sse += events.Finish(FinishReason::kStop, Usage(), 1003);
  const auto ev = Parse(sse);
  EXPECT_EQ(Names(ev), (std::vector<std::string>{
                           "response.created",
                           "response.in_progress",
                           "response.output_item.added",  // the message
                           "response.content_part.added",
                           "response.output_text.delta",
                           "response.output_text.done",
                           "response.content_part.done",
                           "response.output_item.done",
                           "response.output_item.added",  // call_a
                           "response.function_call_arguments.delta",
                           "response.function_call_arguments.delta",
                           "response.function_call_arguments.done",
                           "response.output_item.done",
                           "response.output_item.added",  // call_b
                           "response.function_call_arguments.delta",
                           "response.function_call_arguments.done",
                           "response.output_item.done",
                           "response.completed",
                       }));
  EXPECT_EQ(ev[8].data["output_index"], 1);
  EXPECT_EQ(ev[8].data["item"]["type"], "function_call");
  EXPECT_EQ(ev[8].data["item"]["call_id"], "call_a");
  EXPECT_EQ(ev[8].data["item"]["arguments"], "");
  EXPECT_EQ(ev[11].data["arguments"], R"({"city":"Paris"})");
  EXPECT_EQ(ev[13].data["output_index"], 2);
  const json& out = ev.back().data["response"]["output"];
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[1]["arguments"], R"({"city":"Paris"})");
  EXPECT_EQ(out[2]["name"], "time");
  EXPECT_EQ(out[2]["status"], "completed");
}

TEST(ResponseBody, AThinkingModelsReasoningIsAnItemBeforeTheMessage) {
  testing::SeededRandom random(1);
  Choice answer;
  answer.reasoning = "I add.";
  answer.text = "4";
  answer.finish = FinishReason::kStop;
  scheduler::Usage usage = Usage();
  usage.reasoning_tokens = 3;
  const json r = json::parse(ResponseBody(Info(), answer, usage, random));
  ASSERT_EQ(r["output"].size(), 2u) << r.dump();
  const json& thought = r["output"][0];
  EXPECT_EQ(thought["type"], "reasoning");
  EXPECT_EQ(thought["id"].get<std::string>().rfind("rs_", 0), 0u);
  EXPECT_EQ(thought["status"], "completed");
  EXPECT_EQ(thought["summary"], json::array());
  EXPECT_EQ(thought["content"], json::parse(R"([{"type":"reasoning_text","text":"I add."}])"));
  EXPECT_EQ(r["output"][1]["type"], "message");
  EXPECT_EQ(r["usage"]["output_tokens_details"]["reasoning_tokens"], 3);

  // Cut inside the thinking: the reasoning is incomplete, the message empty.
  answer.text.clear();
  answer.finish = FinishReason::kLength;
  const json cut = json::parse(ResponseBody(Info(), answer, usage, random));
  EXPECT_EQ(cut["output"][0]["status"], "incomplete");
  EXPECT_EQ(cut["output"][1]["content"][0]["text"], "");
}

TEST(ResponseEvents, ThinkingIsStreamedAsReasoningTextBeforeTheMessage) {
  testing::SeededRandom random(1);
  ResponseEvents events(Info(), &random);
  std::string sse = events.Start();
  Choice d;
  d.reasoning = "I ";
  sse += events.Delta(d);
  d.reasoning = "add.";
  sse += events.Delta(d);
  d.reasoning.clear();
  d.text = "4";
  sse += events.Delta(d);
  sse += events.Finish(FinishReason::kStop, Usage(), 1003);
  const auto ev = Parse(sse);
  EXPECT_EQ(
      Names(ev),
      (std::vector<std::string>{
          "response.created", "response.in_progress", "response.output_item.added",
          "response.reasoning_text.delta", "response.reasoning_text.delta",
          "response.reasoning_text.done", "response.output_item.done", "response.output_item.added",
          "response.content_part.added", "response.output_text.delta", "response.output_text.done",
          "response.content_part.done", "response.output_item.done", "response.completed"}));
  EXPECT_EQ(ev[2].data["item"]["type"], "reasoning");
  EXPECT_EQ(ev[3].data["delta"], "I ");
  EXPECT_EQ(ev[3].data["output_index"], 0);
  EXPECT_EQ(ev[3].data["content_index"], 0);
  EXPECT_EQ(ev[5].data["text"], "I add.");
  EXPECT_EQ(ev[6].data["item"]["status"], "completed");
  EXPECT_EQ(ev[6].data["item"]["content"][0]["text"], "I add.");
  EXPECT_EQ(ev[9].data["output_index"], 1);
  const json& done = ev.back().data["response"];
  EXPECT_EQ(done["output"][0]["type"], "reasoning");
  EXPECT_EQ(done["output"][1]["content"][0]["text"], "4");

  // Cut inside the thinking: it closes incomplete, then an empty message.
  ResponseEvents cut(Info(), &random);
  sse = cut.Start();
  d = Choice();
  d.reasoning = "I add";
  sse += cut.Delta(d);
  sse += cut.Finish(FinishReason::kLength, Usage(), 1003);
  const auto cev = Parse(sse);
  const json& out = cev.back().data["response"]["output"];
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0]["status"], "incomplete");
  EXPECT_EQ(out[1]["type"], "message");
  EXPECT_EQ(out[1]["status"], "incomplete");
}

TEST(ResponseEvents, CutShortIsIncompleteAndAFailureIsTheLastEvent) {
  testing::SeededRandom random(1);
  ResponseEvents cut(Info(), &random);
  std::string sse = cut.Start();
  Choice d;
  d.text = "The";
  sse += cut.Delta(d);
  sse += cut.Finish(FinishReason::kLength, Usage(), 1003);
  auto ev = Parse(sse);
  EXPECT_EQ(ev.back().name, "response.incomplete");
  EXPECT_EQ(ev.back().data["response"]["status"], "incomplete");
  EXPECT_EQ(ev.back().data["response"]["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_TRUE(ev.back().data["response"]["completed_at"].is_null());
  EXPECT_EQ(ev[ev.size() - 2].data["item"]["status"], "incomplete");

  ResponseEvents empty(Info(), &random);  // nothing said: still one (empty) message
  sse = empty.Start();
  sse += empty.Finish(FinishReason::kStop, Usage(), 1003);
  ev = Parse(sse);
  EXPECT_EQ(ev.back().data["response"]["output"][0]["content"][0]["text"], "");

  ResponseEvents failed(Info(), &random);
  sse = failed.Start();
  sse += failed.Delta(d);
  sse += failed.Fail(Status::Internal("decode failed"));
  ev = Parse(sse);
  EXPECT_EQ(ev.back().name, "response.failed");
  EXPECT_EQ(ev.back().data["response"]["status"], "failed");
  EXPECT_EQ(ev.back().data["response"]["error"]["code"], "server_error");
  EXPECT_EQ(ev.back().data["response"]["error"]["message"], "decode failed");
  EXPECT_EQ(ev.back().data["response"]["output"][0]["content"][0]["text"], "The");

  const json error = json::parse(ResponsesErrorEvent(Status::Unavailable("upstream gone"), 4));
  EXPECT_EQ(error["type"], "error");
  EXPECT_EQ(error["code"], "server_error");
  EXPECT_EQ(error["message"], "upstream gone");
  EXPECT_EQ(error["sequence_number"], 4);
}

}  // namespace
}  // namespace outpost::api
