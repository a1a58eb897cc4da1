// A grammar for an answer that may think first: a model with a thinking
// block (Qwen 3, DeepSeek R1) writes "<think>…</think>" before its answer,
// and a response_format grammar that applied from the first token would
// make it write the JSON inside that block. The wrapped grammar lets the
// thinking through, unconstrained but for its closing tag, and applies the
// answer's grammar after it.
#pragma once

#include <string>

#include "outpost/engine/types.h"

namespace outpost::engine {

// `grammar` (GBNF whose start rule is `root`) preceded by the thinking
// block. block.open (the prompt opened it): the answer starts with any text
// up to and including block.end, then whitespace. Otherwise the block is
// optional: whitespace, block.start, any text up to and including
// block.end, whitespace. The text inside the block never holds block.end,
// and generation cannot end inside it (the grammar is not complete there).
// REQUIRES: !block.end.empty(); both tags valid UTF-8.
std::string GrammarAfterThinking(const std::string& grammar, const ThinkingBlock& block);

// The GBNF rules (named `name`, `name-1`, …) matching any text up to and
// including the first occurrence of `end` (a Knuth–Morris–Pratt automaton
// over its code points). Exposed for tests.
std::string UntilRules(const std::string& name, const std::string& end);

}  // namespace outpost::engine
