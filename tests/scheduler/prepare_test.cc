// Scheduler::Prepare on a fake engine: chat templating and tokenizing, the
// vocabulary check, the model's sampling defaults, and a response_format
// turned into a grammar. Split from scheduler_test.cc (admission and steps).
#include <gtest/gtest.h>

#include <string>

#include "outpost/scheduler/scheduler.h"
#include "scheduler/scheduler_fixture.h"

namespace outpost::scheduler {
namespace {

using testing::Fixture;
using testing::Opts;

TEST(Scheduler, PrepareTemplatesTokenizesAndChecksTheVocabulary) {
  Fixture f(Opts(1, 0));
  PromptInput chat;
  chat.chat = true;
  chat.messages = {{"user", "hi"}};
  GenerationRequest req;
  ASSERT_TRUE(f.sched->Prepare(chat, /*ignore_eos=*/false, &req).ok());
  EXPECT_EQ(std::string(req.prompt.begin(), req.prompt.end()), "user: hi\nassistant: ");
  PromptInput tokens;
  tokens.tokens = {1, 2, 999};
  GenerationRequest bad;
  const Status st = f.sched->Prepare(tokens, false, &bad);
  EXPECT_EQ(st.param(), "prompt[2]");
  GenerationRequest bias;
  bias.sampling.logit_bias = {{5000, 1.0f}};
  EXPECT_EQ(f.sched->Prepare(chat, false, &bias).param(), "logit_bias");
  // Every token banned (-100): nothing could be generated; one spared is fine.
  GenerationRequest all;
  for (engine::Token t = 0; t < f.engine->VocabSize(); ++t)
    all.sampling.logit_bias.emplace_back(t, -100.0f);
  GenerationRequest spared = all;
  const Status none = f.sched->Prepare(chat, false, &all);
  EXPECT_EQ(none.param(), "logit_bias");
  EXPECT_NE(none.message().find("bans every token of the vocabulary (257)"), std::string::npos)
      << none.message();
  spared.sampling.logit_bias.back().second = -99.0f;
  EXPECT_TRUE(f.sched->Prepare(chat, false, &spared).ok());
  // ignore_eos bans every end-of-generation token: the answer runs to max_tokens.
  PromptInput text;
  text.text = "go";
  GenerationRequest forever;
  forever.max_tokens = 8;
  ASSERT_TRUE(f.sched->Prepare(text, /*ignore_eos=*/true, &forever).ok());
  auto s = f.Sink("s");
  ASSERT_TRUE(f.sched->Submit(std::move(forever), s).ok());
  f.RunToIdle();
  EXPECT_EQ(s->text, "helloxxx");
  EXPECT_EQ(s->result.finish, FinishReason::kLength);
}

TEST(Scheduler, PrepareFillsUnsetSamplingFromTheModelsDefaults) {
  Fixture f(Opts(1, 0));
  f.engine->defaults.temperature = 0.3f;
  f.engine->defaults.top_k = 7;
  PromptInput text;
  text.text = "go";
  GenerationRequest req;
  req.sampling.top_k = 0;  // set by the request: kept
  ASSERT_TRUE(f.sched->Prepare(text, false, &req).ok());
  EXPECT_EQ(req.sampling.temperature, 0.3f);
  EXPECT_EQ(req.sampling.top_k, 0);
  EXPECT_EQ(req.sampling.top_p, 0.95f);
  EXPECT_EQ(req.sampling.min_p, 0.05f);
  EXPECT_TRUE(req.sampling.grammar.empty());
  auto s = f.Sink("s");
  ASSERT_TRUE(f.sched->Submit(std::move(req), s).ok());
  f.RunToIdle();
  ASSERT_EQ(f.engine->started.size(), 1u);
  EXPECT_EQ(f.engine->started[0].temperature, 0.3f);  // what the engine was started with
}

TEST(Scheduler, PrepareTurnsAResponseFormatIntoAGrammarOrNamesTheField) {
  Fixture f(Opts(1, 0));
  PromptInput in;
  in.text = "go";
  in.response_format.type = engine::ResponseFormat::Type::kJsonSchema;
  in.response_format.schema = R"({"type":"object"})";
  GenerationRequest req;
  ASSERT_TRUE(f.sched->Prepare(in, false, &req).ok());
  EXPECT_FALSE(req.sampling.grammar.empty());
  in.response_format.schema = R"({"not":{}})";
  GenerationRequest bad;
  EXPECT_EQ(f.sched->Prepare(in, false, &bad).param(), "response_format");
}

TEST(Scheduler, PrepareTakesAClientsGrammarAsItIsOrSaysWhereItIsWrong) {
  Fixture f(Opts(1, 0));
  PromptInput in;
  in.text = "go";
  in.response_format.type = engine::ResponseFormat::Type::kGrammar;
  in.response_format.grammar = "root ::= \"yes\" | \"no\"";
  GenerationRequest req;
  ASSERT_TRUE(f.sched->Prepare(in, false, &req).ok());
  EXPECT_EQ(req.sampling.grammar, in.response_format.grammar);
  in.response_format.grammar = "root ::= yes";
  GenerationRequest bad;
  const Status st = f.sched->Prepare(in, false, &bad);
  EXPECT_EQ(st.param(), "grammar");
  EXPECT_NE(st.message().find("the rule 'yes' is used but never defined"), std::string::npos)
      << st.message();
}

TEST(Scheduler, PrepareFillsInTheMiddleOnlyOnAModelTrainedForIt) {
  Fixture f(Opts(1, 0));  // 128 tokens a session: the window is the context
  PromptInput in;
  in.infill.emplace();
  in.infill->prefix = "ab";
  in.infill->suffix = "yz";
  GenerationRequest req;
  const Status none = f.sched->Prepare(in, false, &req);
  EXPECT_EQ(none.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(none.param(), "suffix");
  EXPECT_NE(none.message().find("cannot fill in the middle"), std::string::npos) << none.message();
  // Nothing after the gap: the same request as a plain completion.
  PromptInput prefix_only;
  prefix_only.infill.emplace();
  prefix_only.infill->prefix = "ab";
  GenerationRequest plain;
  ASSERT_TRUE(f.sched->Prepare(prefix_only, false, &plain).ok());
  EXPECT_EQ(std::string(plain.prompt.begin(), plain.prompt.end()), "ab");

  f.engine->infill.pre = 250;
  f.engine->infill.suf = 251;
  f.engine->infill.mid = 252;
  ASSERT_TRUE(f.sched->Prepare(in, false, &req).ok());
  EXPECT_EQ(req.prompt, (std::vector<engine::Token>{250, 'a', 'b', 251, 'y', 'z', 252}));
  // A long prefix keeps its end (3/4 of the 128-token window).
  in.infill->prefix = std::string(200, 'p') + "END";
  GenerationRequest cut;
  ASSERT_TRUE(f.sched->Prepare(in, false, &cut).ok());
  EXPECT_EQ(cut.prompt.size(), 1 + 96 + 1 + 2 + 1u);
  EXPECT_EQ(std::string(cut.prompt.begin() + 94, cut.prompt.begin() + 97), "END");
}

}  // namespace
}  // namespace outpost::scheduler
