// A GBNF grammar in llama.cpp's own grammar engine, for tests that check
// what a grammar admits: parsed once, then matched against whole strings.
#pragma once

#include <gtest/gtest.h>
#include <llama-grammar.h>

#include <exception>
#include <string>

namespace outpost::engine::testing {

// A grammar (root rule "root") in llama.cpp's engine, parsed once; a
// grammar that does not parse is a test failure.
class Matcher {
 public:
  explicit Matcher(const std::string& gbnf)
      : g_(llama_grammar_init_impl(nullptr, gbnf.c_str(), "root", false, nullptr, 0, nullptr, 0)) {
    if (g_ == nullptr) {
      ADD_FAILURE() << "grammar does not parse:\n" << gbnf;
    } else {
      start_ = llama_grammar_get_stacks(g_);
    }
  }
  ~Matcher() {
    if (g_ != nullptr) llama_grammar_free_impl(g_);
  }
  Matcher(const Matcher&) = delete;
  Matcher& operator=(const Matcher&) = delete;

  // Whether it matches all of `text`.
  bool operator()(const std::string& text) {
    if (!Accept(text)) return false;
    for (const auto& stack : llama_grammar_get_stacks(g_)) {
      if (stack.empty()) return true;
    }
    return false;
  }

  // Whether `text` can begin a match (the grammar admits it so far).
  bool Admits(const std::string& text) {
    return Accept(text) && !llama_grammar_get_stacks(g_).empty();
  }

 private:
  // Feeds `text` from the start; false when the grammar refuses it.
  bool Accept(const std::string& text) {
    if (g_ == nullptr) return false;
    llama_grammar_get_stacks(g_) = start_;
    try {
      llama_grammar_accept_str(*g_, text);
    } catch (const std::exception&) {
      return false;
    }
    return true;
  }

  llama_grammar* g_;
  llama_grammar_stacks start_;
};

inline bool Matches(const std::string& gbnf, const std::string& text) {
  return Matcher(gbnf)(text);
}

}  // namespace outpost::engine::testing
