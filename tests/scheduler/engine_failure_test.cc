// The scheduler when the engine cannot go on: a grammar that allows no next
// token (kNoToken) ends its own request; an exception out of a step ends that
// step's requests. The server keeps serving in both. Fake engine, simulated clock.
#include "outpost/scheduler/scheduler.h"

#include <gtest/gtest.h>

#include <string>

#include "mocks/fake_engine.h"
#include "scheduler/scheduler_fixture.h"

namespace outpost::scheduler {
namespace {

using testing::Fixture;
using testing::Opts;

// The engine finds no token the request's grammar allows: the text so far
// stays with the client, the request ends with an error naming the cause,
// its KV is freed, and the next request is answered.
TEST(Scheduler, AGrammarThatAllowsNoTokenEndsTheRequestWithAnError) {
  Fixture f(Opts(1, 0));
  f.engine->dead_end_at = 3;
  auto a = f.Sink("a");
  ASSERT_TRUE(f.Submit(a, 4).ok());
  f.RunToIdle();
  ASSERT_TRUE(a->done);
  EXPECT_EQ(a->text, "hel");
  EXPECT_EQ(a->result.finish, FinishReason::kError);
  EXPECT_EQ(a->result.error.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(a->result.error.message().find("after 3 generated tokens"), std::string::npos)
      << a->result.error.message();
  EXPECT_NE(a->result.error.message().find("allows nothing more"), std::string::npos);
  EXPECT_EQ(a->result.usage.completion_tokens, 3);
  EXPECT_EQ(f.engine->TotalKvCells(), 0);
  f.engine->dead_end_at.reset();
  auto b = f.Sink("b");
  ASSERT_TRUE(f.Submit(b, 4).ok());
  f.RunToIdle();
  EXPECT_EQ(b->text, "hello");
  EXPECT_EQ(b->result.finish, FinishReason::kStop);
  EXPECT_EQ(f.engine->violations, 0);
}

// Something on the engine thread throws (llama.cpp did, on a grammar): the
// requests in that step end with the error, their KV is freed, and the
// scheduler goes on serving instead of the exception ending the process.
TEST(Scheduler, AnExceptionInAStepEndsItsRequestsNotTheServer) {
  Fixture f(Opts(2, 0));
  f.engine->throw_at = 2;
  auto a = f.Sink("a");
  auto b = f.Sink("b");
  ASSERT_TRUE(f.Submit(a, 4).ok());
  ASSERT_TRUE(f.Submit(b, 5).ok());
  f.RunToIdle();
  for (const auto* s : {a.get(), b.get()}) {
    ASSERT_TRUE(s->done);
    EXPECT_EQ(s->text, "he");
    EXPECT_EQ(s->result.finish, FinishReason::kError);
    EXPECT_EQ(s->result.error.code(), StatusCode::kInternal);
    EXPECT_NE(s->result.error.message().find("Unexpected empty grammar stack"), std::string::npos)
        << s->result.error.message();
  }
  EXPECT_EQ(f.engine->TotalKvCells(), 0);
  f.engine->throw_at.reset();
  auto c = f.Sink("c");
  ASSERT_TRUE(f.Submit(c, 4).ok());
  f.RunToIdle();
  EXPECT_EQ(c->text, "hello");
  EXPECT_EQ(c->result.finish, FinishReason::kStop);
  EXPECT_EQ(f.engine->violations, 0);
}

}  // namespace
}  // namespace outpost::scheduler
