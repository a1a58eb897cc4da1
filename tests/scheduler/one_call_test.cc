// The scheduler ends an answer at its one tool call when parallel calls are
// off (AnswerParser::OneCall): some templates' grammars let a model go on
// writing calls the parser then drops, which cost tokens and ended a whole
// call with finish "length". Fake engine with a toy parser.
#include "outpost/scheduler/scheduler.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "mocks/fake_engine.h"
#include "scheduler/scheduler_fixture.h"

namespace outpost::scheduler {
namespace {

using testing::Fixture;
using testing::Opts;

// A call is "<f(...)>"; the answer is whole once one closes.
class ToyCallParser final : public engine::AnswerParser {
 public:
  explicit ToyCallParser(bool one) : one_(one) {}
  StatusOr<engine::ParsedAnswer> Parse(const std::string& text, bool) const override {
    engine::ParsedAnswer a;
    a.content = text;
    return a;
  }
  bool OneCall() const override { return one_; }
  bool Ended(const std::string& text) const override {
    ++calls;
    seen = text;
    return one_ && text.find(")>") != std::string::npos;
  }
  mutable int calls = 0;
  mutable std::string seen;

 private:
  const bool one_;
};

Status SubmitWith(Fixture& f, const std::shared_ptr<testing::RecordingSink>& sink,
                  std::shared_ptr<const engine::AnswerParser> parser) {
  GenerationRequest req;
  req.prompt.assign(4, 'a');
  req.max_tokens = 64;
  req.answer_parser = std::move(parser);
  return f.sched->Submit(std::move(req), sink);
}

TEST(Scheduler, AnAnswerWithOneCallEndsWhereTheCallCloses) {
  Fixture f(Opts(1, 0), "<f(x)>\n<f(y)>\nmore text");
  auto one = std::make_shared<ToyCallParser>(true);
  auto a = f.Sink("a");
  ASSERT_TRUE(SubmitWith(f, a, one).ok());
  f.RunToIdle();
  ASSERT_TRUE(a->done);
  EXPECT_EQ(a->text, "<f(x)>");
  EXPECT_EQ(a->result.finish, FinishReason::kStop);
  EXPECT_EQ(a->result.usage.completion_tokens, 6);
  EXPECT_EQ(one->seen, "<f(x)>");  // the whole answer so far, not the last token
  // Only tokens with a delimiter are parsed: here every one but 'f' and 'x'.
  EXPECT_EQ(one->calls, 4);
  EXPECT_EQ(f.engine->TotalKvCells(), 0);

  // Parallel calls on: it runs to its own end.
  auto many = std::make_shared<ToyCallParser>(false);
  auto b = f.Sink("b");
  ASSERT_TRUE(SubmitWith(f, b, many).ok());
  f.RunToIdle();
  EXPECT_EQ(b->text, "<f(x)>\n<f(y)>\nmore text");
  EXPECT_EQ(b->result.finish, FinishReason::kStop);
  EXPECT_EQ(many->calls, 0);
  EXPECT_EQ(f.engine->violations, 0);
}

}  // namespace
}  // namespace outpost::scheduler
