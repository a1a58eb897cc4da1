// The real models for engine tests: the default (SmolLM2 135M Instruct, a
// llama-architecture chat model) and Gemma 3 270M (another architecture, a
// 262k vocabulary, no chat template), at the paths scripts/bootstrap links
// (built in), or where OUTPOST_MODEL / OUTPOST_GEMMA point. A missing model
// is a failure, never a silent skip, unless OUTPOST_ALLOW_MISSING_MODEL=1.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace outpost::testing {

inline std::string ModelPath(const char* env = "OUTPOST_MODEL") {
  const char* p = std::getenv(env);
  std::string path = p != nullptr && *p ? p : "";
#if defined(OUTPOST_TEST_MODEL_PATH) && defined(OUTPOST_TEST_GEMMA_PATH)
  if (path.empty())
    path = std::string(env) == "OUTPOST_GEMMA" ? OUTPOST_TEST_GEMMA_PATH : OUTPOST_TEST_MODEL_PATH;
#endif
  return !path.empty() && std::filesystem::exists(path) ? path : std::string();
}

// A test data file's text (tests/data/...); "" when unreadable.
inline std::string ReadTestData(const std::string& relative) {
#ifdef OUTPOST_TEST_DATA
  std::ifstream in(std::string(OUTPOST_TEST_DATA) + "/" + relative);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
#else
  return "";
#endif
}

inline bool ModelRequired() {
  const char* r = std::getenv("OUTPOST_ALLOW_MISSING_MODEL");
  return r == nullptr || std::string(r) != "1";
}

}  // namespace outpost::testing

// Declares `var` as the model path named by environment variable `env`, or
// fails (under CTest) / skips the test.
#define OUTPOST_TEST_MODEL_FROM(var, env)                                 \
  const std::string var = ::outpost::testing::ModelPath(env);             \
  if (var.empty()) {                                                      \
    if (::outpost::testing::ModelRequired()) FAIL() << env " is missing"; \
    GTEST_SKIP() << env " not set";                                       \
  }
#define OUTPOST_TEST_MODEL(var) OUTPOST_TEST_MODEL_FROM(var, "OUTPOST_MODEL")
#define OUTPOST_TEST_GEMMA(var) OUTPOST_TEST_MODEL_FROM(var, "OUTPOST_GEMMA")
