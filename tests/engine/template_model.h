// The default model under one of the chat templates in tests/data/templates
// (copied from the pinned llama.cpp's models/templates), for tests of what
// llama.cpp's chat code makes of a template family: thinking, tool calls,
// continuation.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "mocks/test_model.h"
#include "outpost/engine/model.h"

namespace outpost::engine::testing {

// `model` with `template_file`'s template ("" keeps the GGUF's own); null,
// and a test failure, when either does not load.
inline std::unique_ptr<Model> LoadWith(const std::string& model, const std::string& template_file) {
  ModelOptions o;
  o.path = model;
  if (!template_file.empty()) {
    o.chat_template = outpost::testing::ReadTestData("templates/" + template_file);
    EXPECT_FALSE(o.chat_template.empty()) << template_file;
  }
  auto m = Model::Load(o);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

inline bool StartsWith(const std::string& s, const std::string& head) {
  return s.compare(0, head.size(), head) == 0;
}

// What a streamed answer's parser gives for every prefix of `answer` (a
// partial parse) is a prefix of `whole`'s parts and of the next prefix's, so
// deltas only ever append; the last equals the whole.
inline void ExpectStreamedPartsGrow(const AnswerParser& parser, const std::string& answer,
                                    const ParsedAnswer& whole) {
  std::string last_reasoning, last_content;
  for (size_t i = 0; i <= answer.size(); ++i) {
    auto part = parser.Parse(answer.substr(0, i), /*partial=*/true);
    ASSERT_TRUE(part.ok()) << i;
    EXPECT_TRUE(StartsWith(whole.reasoning, part->reasoning)) << i << ": " << part->reasoning;
    EXPECT_TRUE(StartsWith(whole.content, part->content)) << i << ": " << part->content;
    EXPECT_TRUE(StartsWith(part->reasoning, last_reasoning)) << i;
    EXPECT_TRUE(StartsWith(part->content, last_content)) << i;
    last_reasoning = part->reasoning;
    last_content = part->content;
  }
  EXPECT_EQ(last_reasoning, whole.reasoning);
  EXPECT_EQ(last_content, whole.content);
}

inline bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace outpost::engine::testing
