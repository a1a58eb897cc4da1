// The real default model for engine tests. CTest sets OUTPOST_MODEL and
// OUTPOST_REQUIRE_MODEL=1: a missing model is then a failure, never a silent
// skip. Run by hand without OUTPOST_MODEL, such tests are skipped.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace outpost::testing {

inline std::string ModelPath() {
  const char* p = std::getenv("OUTPOST_MODEL");
  return p != nullptr && std::filesystem::exists(p) ? std::string(p) : std::string();
}

inline bool ModelRequired() {
  const char* r = std::getenv("OUTPOST_REQUIRE_MODEL");
  return r != nullptr && std::string(r) == "1";
}

}  // namespace outpost::testing

// Declares `var` as the model path, or fails (under CTest) / skips the test.
#define OUTPOST_TEST_MODEL(var)                                                    \
  const std::string var = ::outpost::testing::ModelPath();                         \
  if (var.empty()) {                                                               \
    if (::outpost::testing::ModelRequired()) FAIL() << "OUTPOST_MODEL is missing"; \
    GTEST_SKIP() << "OUTPOST_MODEL not set";                                       \
  }
