// Chat formatting through llama.cpp's jinja support: the built-in Gemma format
// for the default model, and the Llama 3, ChatML (Qwen) and Phi-3 templates
// supplied as overrides, each rendering a system + user conversation exactly.
#include <gtest/gtest.h>

#include "mocks/test_model.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "outpost/engine/model.h"

namespace outpost::engine {
namespace {

struct Case {
  const char* name;
  const char* template_file;  // "" = the model's own (built-in Gemma)
  const char* expected;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

class ChatTemplates : public ::testing::TestWithParam<Case> {};

TEST_P(ChatTemplates, RendersSystemAndUserTurns) {
  OUTPOST_TEST_GEMMA(model);
  InstallLlamaLogger(false);
  ModelOptions o;
  o.path = model;
  if (*GetParam().template_file) {
    o.chat_template =
        outpost::testing::ReadTestData(std::string("templates/") + GetParam().template_file);
    ASSERT_FALSE(o.chat_template.empty());
  }
  auto m = Model::Load(o);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto prompt = (*m)->ApplyChatTemplate({{"system", "Be brief."}, {"user", "Hi"}});
  ASSERT_TRUE(prompt.ok()) << prompt.status().ToString();
  EXPECT_EQ(prompt->text, GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(
    Families, ChatTemplates,
    ::testing::Values(
        // BOS is left to the tokenizer (the model adds it), so it is not in the text.
        Case{"gemma", "",
             "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n"},
        Case{"llama3", "llama3.jinja",
             "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
             "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
             "<|start_header_id|>assistant<|end_header_id|>\n\n"},
        Case{"chatml_qwen", "chatml.jinja",
             "<|im_start|>system\nBe "
             "brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"},
        Case{"phi3", "phi3.jinja",
             "<|system|>\nBe brief.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\n"}),
    [](const auto& info) { return std::string(info.param.name); });

// The default model (SmolLM2 Instruct) brings its own ChatML template, which
// adds a system turn when the conversation has none.
TEST(ChatTemplates, DefaultModelUsesItsOwnTemplate) {
  OUTPOST_TEST_MODEL(model);
  ModelOptions o;
  o.path = model;
  auto m = Model::Load(o);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto prompt = (*m)->ApplyChatTemplate({{"user", "Hi"}});
  ASSERT_TRUE(prompt.ok()) << prompt.status().ToString();
  EXPECT_EQ(prompt->text,
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
            "Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  // The turn ends with <|im_end|>, the model's end-of-generation token.
  const auto end = (*m)->Tokenize("<|im_end|>", false, true);
  ASSERT_EQ(end.size(), 1u);
  EXPECT_TRUE((*m)->IsEndOfGeneration(end[0]));
}

// Gemma's turn end must stop generation even though the GGUF's EOS is <eos>.
TEST(ChatTemplates, GemmaEndOfTurnIsAnEndOfGenerationToken) {
  OUTPOST_TEST_GEMMA(model);
  ModelOptions o;
  o.path = model;
  auto m = Model::Load(o);
  ASSERT_TRUE(m.ok());
  for (const char* t : {"<end_of_turn>", "<eos>"}) {
    const auto tok = (*m)->Tokenize(t, false, true);
    ASSERT_EQ(tok.size(), 1u) << t;
    EXPECT_TRUE((*m)->IsEndOfGeneration(tok[0])) << t;
  }
}

TEST(ChatTemplates, AlternationErrorIsAClearInvalidArgument) {
  OUTPOST_TEST_GEMMA(model);
  ModelOptions o;
  o.path = model;
  auto m = Model::Load(o);
  ASSERT_TRUE(m.ok());
  auto prompt = (*m)->ApplyChatTemplate({{"user", "a"}, {"user", "b"}});
  ASSERT_FALSE(prompt.ok());
  EXPECT_EQ(prompt.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(prompt.status().message().find("alternate"), std::string::npos)
      << prompt.status().message();
}

}  // namespace
}  // namespace outpost::engine
