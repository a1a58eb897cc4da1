// Rendering of OpenAI Responses API answers: the Response object
// (object "response") and, for a stream, its named events in order, each
// with a sequence_number:
//
//   response.created, response.in_progress
//   per output item: response.output_item.added,
//     reasoning:       response.reasoning_text.delta*, response.reasoning_text.done
//     a message:       response.content_part.added, response.output_text.delta*,
//                      response.output_text.done, response.content_part.done
//     a function call: response.function_call_arguments.delta*,
//                      response.function_call_arguments.done
//   response.output_item.done
//   response.completed | response.incomplete (max_output_tokens) | response.failed
//
// There is no [DONE]: the last event ends the stream. Output items are a
// thinking model's reasoning (one reasoning_text part), a message (one
// output_text part) and then the function calls, as the answer brings them. Pure; not thread-safe
// (one ResponseEvents per stream).
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "outpost/api/openai_response.h"
#include "outpost/scheduler/request.h"
#include "outpost/util/random.h"
#include "outpost/util/status.h"

namespace outpost::api {

// What every rendering of one response shares.
struct ResponseInfo {
  std::string id;  // "resp_..."
  int64_t created_at = 0;
  std::string model;
  std::string service_tier = "default";
  std::string echo;          // ResponsesRequest::echo (a JSON object)
  int64_t completed_at = 0;  // unix seconds once the answer is whole (0: null)
};

// The whole Response for a finished answer: `answer` holds its text (the
// message, if any), its calls (ApplyParsedAnswer) and, if asked, logprobs.
// finish kLength makes it "incomplete" (reason max_output_tokens).
std::string ResponseBody(const ResponseInfo& info, const Choice& answer,
                         const scheduler::Usage& usage, util::Random& random);

// A Response with no answer yet, or none to come: `status` queued,
// in_progress or cancelled, output empty, usage null (a background run's
// states before and instead of its answer).
std::string PendingResponseBody(const ResponseInfo& info, const char* status);

// The payload of an "error" event (code, message, param) for a stream that
// failed where no Response can follow (a relay cut short).
std::string ResponsesErrorEvent(const Status& error, int64_t sequence_number = 0);

// Sets `fields` (a JSON object: what this server decided for a relayed
// request — store, previous_response_id, conversation, background, and a
// background response's id) on every Response
// object an upstream's answer carries: a body's, and the `response` of each
// event in its stream. Everything else passes byte for byte. A stream is fed
// in chunks as they come; a line is held only until its end arrives.
// Not thread-safe (one per relay).
class ResponseFieldsPatch {
 public:
  explicit ResponseFieldsPatch(std::string fields);
  // A whole body; one that is not a Response object is returned unchanged.
  std::string Body(const std::string& body) const;
  // The next piece of a stream: what can go out now.
  std::string Feed(std::string_view chunk);
  // The stream's end: whatever was held.
  std::string Finish();

 private:
  std::string Line(std::string_view line) const;

  std::string fields_;
  std::string held_;  // a line without its end yet
};

// The Response object (JSON) that a Responses event stream ended with — its
// response.completed or response.incomplete event's — or "" when it has
// none (cut short, failed). For a relayed stream, whose events are not ours.
std::string FinalResponseOfStream(std::string_view sse);

// FinalResponseOfStream for a stream read as it passes, in chunks cut
// anywhere: Feed returns the final Response once the line of its event has
// ended (the stream's last line counts as ended when `ended`), "" before and
// after. Holds one unended line at most; a line past `max_line` bytes gives
// the stream up (overflow(): Feed answers "" from then on). Not thread-safe.
class FinalResponseReader {
 public:
  explicit FinalResponseReader(size_t max_line) : max_line_(max_line) {}
  std::string Feed(std::string_view data, bool ended);
  bool overflow() const { return overflow_; }

 private:
  const size_t max_line_;
  std::string line_;  // the last line, not yet ended
  bool overflow_ = false;
};

// A streamed Response, event by event (already SSE-framed).
class ResponseEvents {
 public:
  ResponseEvents(ResponseInfo info, util::Random* random)
      : info_(std::move(info)), random_(random) {}

  // response.created and response.in_progress.
  std::string Start();
  // A piece of the answer: thinking to append to the reasoning item, text to
  // append to the message, and call deltas
  // (AnswerStream's: a call's first delta has id and name, later ones
  // argument text). Opens and closes items as needed.
  std::string Delta(const Choice& delta);
  // The answer ended: closes the open item, then response.completed, or
  // response.incomplete when it was cut at max_output_tokens.
  std::string Finish(scheduler::FinishReason finish, const scheduler::Usage& usage,
                     int64_t completed_at);
  // The answer failed after the stream began: response.failed, with the
  // items so far.
  std::string Fail(const Status& error);
  // After Finish(): the whole Response object (JSON) it sent; "" before.
  const std::string& final_response() const { return final_; }

 private:
  struct Item {
    enum class Kind { kMessage, kCall, kReasoning };
    Kind kind = Kind::kMessage;
    std::string id;    // "msg_..." / "fc_..." / "rs_..."
    std::string text;  // message text, a call's arguments, or the thinking
    std::string call_id, name;
    std::vector<scheduler::TokenInfo> logprobs;
    const char* status = "in_progress";  // once closed: "completed" or "incomplete"
    bool open() const { return std::string_view(status) == "in_progress"; }
  };
  // One SSE event: `fields` plus type and the next sequence_number.
  std::string Event(const char* type, nlohmann::json fields);
  static nlohmann::json ItemJson(const Item& item);
  std::string Open(Item item);
  // Closes the last item if it is open; status "completed" or "incomplete".
  std::string CloseOpen(const char* status);
  std::string Lifecycle(const char* type, const char* status, const nlohmann::json& extra);

  ResponseInfo info_;
  util::Random* random_;
  int64_t seq_ = 0;
  std::vector<Item> items_;  // the last one may be open
  bool logprobs_ = false;
  std::string final_;
};

}  // namespace outpost::api
