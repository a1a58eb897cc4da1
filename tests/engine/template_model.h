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

inline bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace outpost::engine::testing
