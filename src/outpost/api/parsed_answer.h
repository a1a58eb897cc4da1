// A parsed chat answer as the client sees it: the parser the local target
// chose (the template's own format, or the router's generic one for tools)
// turns the model's text into its thinking (reasoning_content), content and
// calls; each call gets an id ("call_..." unless the format carries one)
// and finish_reason becomes "tool_calls".
//
// AnswerStream does the same for a stream, incrementally: after each piece
// it re-parses the answer so far (partial) and yields only what is new, in
// OpenAI's delta shape (reasoning and content text to append; a call's
// first delta has index, id, type and name, later ones argument text to
// append). Not thread-safe: one per choice.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "outpost/api/openai_response.h"
#include "outpost/engine/types.h"
#include "outpost/util/random.h"

namespace outpost::api {

// Replaces c->text (the raw answer) by its thinking, content and calls, and makes
// finish_reason "tool_calls" when it called one. An answer cut short —
// c->finish kLength (max_tokens, the context), or a stop string — gives what
// it holds so far: its content, and the calls whose name is complete with
// their arguments' text so far; a cut one keeps finish_reason "length", as
// OpenAI answers a cut call. The format's own markup never reaches the
// client. A text that is not the format at all is left as it is.
void ApplyParsedAnswer(Choice* c, const engine::AnswerParser& parser, util::Random& random);

class AnswerStream {
 public:
  AnswerStream(std::shared_ptr<const engine::AnswerParser> parser, util::Random* random)
      : parser_(std::move(parser)), random_(random) {}

  // Adds a piece of the answer. Returns the delta to send: reasoning and text
  // (thinking and content to append, possibly empty) and tool_calls (call
  // deltas, each with `index`).
  Choice Feed(const std::string& piece);
  // The answer has ended (`cut`: by max_tokens or the context, finish_reason
  // "length"): the rest of the delta. One cut short gives what it holds (as
  // ApplyParsedAnswer); when even that does not parse and nothing was sent yet,
  // the raw text is sent as content.
  Choice Finish(bool cut);
  // After Finish: the answer was whole and called at least one function
  // (finish_reason "tool_calls"; a cut one keeps "length").
  bool called() const { return whole_ && !sent_.tool_calls.empty(); }

 private:
  Choice Delta(const engine::ParsedAnswer& now);

  std::shared_ptr<const engine::AnswerParser> parser_;
  util::Random* random_;
  std::string text_;
  engine::ParsedAnswer sent_;  // what the client has so far (calls with their ids)
  bool whole_ = false;         // Finish found the whole answer in the format
};

}  // namespace outpost::api
