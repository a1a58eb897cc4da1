// CheckGrammarText on GBNF text: every {m}, {m,} and {m,n} is found
// outside literals, classes and comments, and those llama.cpp's parser would
// take until the process is killed (a minimum above the maximum) or would
// refuse or silently unbound (counts past 2000) are refused by name.
#include "outpost/engine/grammar_limits.h"

#include <gtest/gtest.h>
#include <llama-grammar.h>  // the grammar engine itself, for its bounds
#include <llama.h>

#include <chrono>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "mocks/test_model.h"
#include "outpost/engine/model.h"

namespace outpost::engine {
namespace {

TEST(GrammarLimits, GrammarsWithinTheLimitsPass) {
  for (const char* g : {
           R"(root ::= "a")",
           R"(root ::= "a"{0,2000} [0-9]{4} "b"{2000} "c"{7,})",
           R"(root ::= "{5,2}" [{9,1}] # {3000}
)",
           R"(root ::= "\"{5,2}\"" "x"{ 2 , 3 })",
           R"(space ::= | " " | "\n"{1,2} [ \t]{0,20})",
           // Malformed repetitions are the parser's to report, not this check's.
           R"(root ::= "a"{)",
           R"(root ::= "a"{x})",
       }) {
    EXPECT_TRUE(CheckGrammarText(g, "p").ok()) << g;
  }
}

TEST(GrammarLimits, RepetitionsThatCannotBeParsedAreRefusedByName) {
  struct Case {
    const char* grammar;
    const char* words;
  } cases[] = {
      {R"(root ::= "a"{5,2})", "at least 5 and at most 2 times, which no output satisfies"},
      {R"(root ::= "\"" char{5,2} "\"")", "at least 5 and at most 2"},
      {R"(root ::= ("x" | "y"){ 3 , 1 })", "at least 3 and at most 1"},
      {R"(root ::= "a"{2001})", "at least 2001 times; the grammar engine expands at most 2000"},
      {R"(root ::= "a"{2001,})", "at least 2001 times"},
      {R"(root ::= "a"{0,2001})", "at most 2001 times; the grammar engine enforces at most 2000"},
      {R"(root ::= "a"{99999999999999999999999999})", "at least 18446744073709551615 times"},
      {"root ::= \"}\" # {\n x ::= [a]{4,3}", "at least 4 and at most 3"},
      // Read as llama.cpp's parser reads them (fuzz_gbnf's second find): a
      // UTF-8 lead byte takes the quote after it, so `[a]{2,1}` is outside
      // any literal; a comment ends at a carriage return.
      {"root ::= \"\xd0\" \"[a]{2,1}\"x\"", "at least 2 and at most 1"},
      {"root ::= (\"a\" # c\r x{5,2})\nx ::= \"x\"", "at least 5 and at most 2"},
  };
  for (const auto& c : cases) {
    const Status st = CheckGrammarText(c.grammar, "response_format.json_schema.schema");
    ASSERT_FALSE(st.ok()) << c.grammar;
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(st.param(), "response_format.json_schema.schema");
    EXPECT_NE(st.message().find(c.words), std::string::npos) << c.grammar << ": " << st.message();
  }
}

// Groups nested past kMaxGrammarNesting are refused before the parser,
// which recurses once per level: 20,000 levels (40 KB) overflowed a server
// thread's stack.
TEST(GrammarLimits, DeepNestingIsRefusedBeforeTheParserRecurses) {
  auto nested = [](int depth) {
    return "root ::= " + std::string(static_cast<size_t>(depth), '(') + "\"a\"" +
           std::string(static_cast<size_t>(depth), ')');
  };
  EXPECT_TRUE(ParseGrammar(nested(kMaxGrammarNesting), nullptr, "grammar").ok());
  for (int depth : {kMaxGrammarNesting + 1, 20000, 200000}) {
    const Status st = ParseGrammar(nested(depth), nullptr, "grammar");
    ASSERT_FALSE(st.ok()) << depth;
    EXPECT_EQ(st.param(), "grammar");
    EXPECT_NE(st.message().find("nests groups `( ... )` more than 1000 deep"), std::string::npos)
        << st.message();
  }
  // Parentheses in literals, classes and comments are text, not groups.
  const std::string text =
      "root ::= \"" + std::string(5000, '(') + "\" [(] # " + std::string(5000, '(') + "\n";
  EXPECT_TRUE(CheckGrammarText(text, "grammar").ok());
  // Closing groups ends their depth: many shallow groups pass.
  std::string flat = "root ::= ";
  for (int i = 0; i < 3000; ++i) flat += "(\"a\") ";
  EXPECT_TRUE(ParseGrammar(flat, nullptr, "grammar").ok());
}

// A chain of rules each starting with the next is walked by llama.cpp's
// left-recursion check one call deeper per rule: 260,000 of them (3.6 MB,
// within the body limit) overflowed the engine thread's stack.
TEST(GrammarLimits, LongRuleChainsAreRefusedBeforeLlamaCppRecursesThroughThem) {
  auto chain = [](size_t rules) {
    std::string g = "root ::= r1\n";
    for (size_t i = 1; i + 1 < rules; ++i) {
      g += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + " \"x\"?\n";
    }
    return g + "r" + std::to_string(rules - 1) + " ::= \"a\"\n";
  };
  EXPECT_TRUE(ParseGrammar(chain(kMaxGrammarRuleChain), nullptr, "grammar").ok());
  for (size_t n : {kMaxGrammarRuleChain + 1, size_t{100000}}) {
    const Status st = ParseGrammar(chain(n), nullptr, "grammar");
    ASSERT_FALSE(st.ok()) << n;
    EXPECT_NE(st.message().find("a chain of " + std::to_string(n) + " rules each starting with"),
              std::string::npos)
        << st.message();
  }
  // Through rules that can match nothing (`ws ::= " "?`), as the check goes.
  std::string g = "root ::= ws r1\nws ::= \" \"?\n";
  for (int i = 1; i < 10001; ++i) {
    g += "r" + std::to_string(i) + " ::= ws r" + std::to_string(i + 1) + "\n";
  }
  g += "r10001 ::= \"a\"\n";
  EXPECT_NE(ParseGrammar(g, nullptr, "grammar").message().find("rules each starting with"),
            std::string::npos);
}

// The grammar engine's bounds (Outpost's patch to llama.cpp): an ambiguous
// grammar whose parse stacks double with each step is stopped with an error
// that IsGrammarTooAmbiguous recognises, in the sampler's init and in its
// accept, at the bound kMaxGrammarStacks names; an unambiguous one of the
// same size runs. Without the patch these calls do not return.
TEST(GrammarEngineBounds, AnAmbiguousGrammarStopsAtTheBound) {
  // n rules, n - 1 of them `r ::= s | s "b"`: 2^(n-1) ways to go on before
  // any text.
  auto chain = [](int n, const char* alternative) {
    std::string g = "root ::= r1\n";
    for (int i = 1; i < n; ++i) {
      g += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + " | r" +
           std::to_string(i + 1) + alternative + "\n";
    }
    return g + "r" + std::to_string(n) + " ::= \"a\"\n";
  };
  auto init = [](const std::string& g) {
    return llama_grammar_init_impl(nullptr, g.c_str(), "root", false, nullptr, 0, nullptr, 0);
  };
  // 2^10 = kMaxGrammarStacks: allowed.
  llama_grammar* at_bound = init(chain(11, " \"b\""));
  ASSERT_NE(at_bound, nullptr);
  EXPECT_EQ(llama_grammar_get_stacks(at_bound).size(), kMaxGrammarStacks);
  llama_grammar_free_impl(at_bound);
  const auto start = std::chrono::steady_clock::now();
  for (int n : {12, 40}) {
    try {
      llama_grammar* g = init(chain(n, " \"b\""));
      llama_grammar_free_impl(g);
      ADD_FAILURE() << n << " rules: no error";
    } catch (const std::exception& e) {
      EXPECT_TRUE(IsGrammarTooAmbiguous(e)) << e.what();
    }
  }
  // Shared sub-rules whose stacks are all the same (`r ::= s | s`): one way
  // to go on. llama.cpp's left-recursion check walked them once per path
  // (2^60 here) before the patch.
  llama_grammar* shared = init(chain(60, ""));
  ASSERT_NE(shared, nullptr);
  EXPECT_EQ(llama_grammar_get_stacks(shared).size(), 1u);
  llama_grammar_free_impl(shared);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));

  // Accepting text: each "x" doubles the ways (`"y"` or `"z"` to close).
  llama_grammar* g = init("root ::= e\ne ::= \"x\" e \"y\" | \"x\" e \"z\" | \"w\"\n");
  ASSERT_NE(g, nullptr);
  llama_grammar_accept_str(*g, "xxxxxxxx");  // 3 * 2^8 stacks
  EXPECT_EQ(llama_grammar_get_stacks(g).size(), 3u * 256u);
  try {
    llama_grammar_accept_str(*g, "x");
    ADD_FAILURE() << "no error at " << 3 * 512 << " stacks";
  } catch (const std::exception& e) {
    EXPECT_TRUE(IsGrammarTooAmbiguous(e)) << e.what();
  }
  llama_grammar_free_impl(g);

  // The parser on its own (without Outpost's checks in front): a minimum
  // above its maximum, and nesting past the bound, are errors, not a process
  // killed for memory or a stack overflow.
  for (const std::string& text :
       {std::string("root ::= [a]{5,2}"), std::string("root ::= \"\xd0\" \"[a]{2,1}\"x\""),
        "root ::= " + std::string(20000, '(') + "\"a\"" + std::string(20000, ')')}) {
    ::testing::internal::CaptureStderr();
    llama_grammar* bad = init(text);
    ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(bad, nullptr) << text.substr(0, 40);
    if (bad != nullptr) llama_grammar_free_impl(bad);
  }

  const Status st = GrammarTooAmbiguous("response_format");
  EXPECT_EQ(st.param(), "response_format");
  EXPECT_NE(st.message().find("more than 1024 ways to go on"), std::string::npos) << st.message();
}

// llama.cpp's own verdict on a grammar: its sampler built from it (stderr,
// where its parser prints a grammar it refuses, captured and dropped).
bool LlamaTakes(const std::string& gbnf) {
  ::testing::internal::CaptureStderr();
  llama_sampler* s = nullptr;
  try {
    s = llama_sampler_init_grammar(/*vocab=*/nullptr, gbnf.c_str(), "root");
  } catch (const std::exception& e) {
    ::testing::internal::GetCapturedStderr();
    ADD_FAILURE() << "llama.cpp threw " << e.what() << " for\n" << gbnf;
    return false;
  }
  ::testing::internal::GetCapturedStderr();
  if (s != nullptr) llama_sampler_free(s);
  return s != nullptr;
}

TEST(ParseGrammar, SaysWhatIsWrongAndWhere) {
  struct Case {
    std::string grammar;
    const char* words;
  } cases[] = {
      {"root ::= \"a\" | (\"b\"", "expecting ')' at line 1, column 20 (the end of the grammar)"},
      {"root ::= \"a\"\nbad line here", "expecting ::= at line 2, column 5: `line here`"},
      {"root ::= item\n", "the rule 'item' is used but never defined"},
      {"rot ::= \"a\"", "it defines no 'root' rule"},
      {"root ::= root \"a\" | \"b\"", "the rule 'root' is left-recursive"},
      {"root ::= expr\nexpr ::= term \"+\" | x\nx ::= ws expr\nws ::= \" \"?\nterm ::= [0-9]",
       "is left-recursive"},
      {"root ::= [a-", "unexpected end of input"},
      {"root ::= \"\\x4\"", "expecting 2 hex chars at line 1, column 13"},
      {"root ::= <think>", "no vocab to parse token at line 1, column 10: `<think>`"},
      {"root ::= \"a\"{3", "expecting ',' at line 1, column 15 (the end of the grammar)"},
      {"root ::= \"a\"{2,3 x", "expecting '}' at line 1, column 18: `x`"},
      {"root ::= * \"a\"", "expecting preceding item to */+/?/{ at line 1, column 12"},
      {"root ::= \"a\"{99999999999999999999999}", "at least 18446744073709551615 times"},
      {"root ::= <[99999999999999999999999]>", "a repetition count or token id is too large"},
      {"root ::= (\"a\" \"b\" | \"c\" (\"d\")?){1500}", "rules times its count exceed 2000"},
      {std::string("root ::= \"a\"\0 | \"b\"", 19), "NUL byte"},
      // Left recursion through a rule that can match nothing, which
      // llama.cpp's own check misses (its engine would then grow its stacks
      // without end).
      {"root ::= expr\nexpr ::= x | \"a\"\nx ::= ws expr \"z\"\nws ::= \" \"?",
       "is left-recursive"},
      {"", "it defines no rule"},
      // fuzz_gbnf's first find: a minimum above its maximum, which the parser
      // would expand without end, is refused before it runs.
      {"root ::= item{4,3} \"2.\"\nitem ::= [a-z]", "at least 4 and at most 3"},
      {"# only a comment\n", "it defines no rule"},
      {"root ::= \"" + std::string(100, 'x') + "\n", "unexpected end of input"},
  };
  for (const auto& c : cases) {
    const Status st = ParseGrammar(c.grammar, nullptr, "grammar");
    ASSERT_FALSE(st.ok()) << c.grammar;
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(st.param(), "grammar");
    // llama.cpp's verdicts, or the repetition limits checked before it runs.
    EXPECT_TRUE(st.message().find("'grammar' is not a grammar llama.cpp can use: ") == 0 ||
                st.message().find("'grammar': the grammar built from it repeats") == 0)
        << st.message();
    EXPECT_NE(st.message().find(c.words), std::string::npos) << c.grammar << ": " << st.message();
    // The message names the place; it does not carry the rest of the grammar.
    EXPECT_LT(st.message().size(), 400u) << st.message();
  }
}

// Every grammar here and thousands of random ones: refused when llama.cpp's
// sampler refuses it, and otherwise only for left recursion its check
// misses (such a grammar is not handed to llama.cpp here: it may not
// return). fuzz_gbnf checks the first direction on arbitrary bytes; this
// checks both on text near the grammar's syntax.
TEST(ParseGrammar, AgreesWithLlamaCppsSampler) {
  std::vector<std::string> grammars = {
      "root ::= \"yes\" | \"no\"",
      "root ::= object\nobject ::= \"{\" ws (string \":\" ws value (\",\" ws string \":\" ws "
      "value)*)? \"}\"\nvalue ::= object | string | [0-9]+\nstring ::= \"\\\"\" [^\"\\\\]* "
      "\"\\\"\"\nws ::= [ \\t\\n]*",
      "# comment\nroot ::= item{1,3} \".\" # trailing\nitem ::= [a-z] | \"\\x41\" | .\n",
      "root ::= expr\nexpr ::= expr \"+\" term | term\nterm ::= [0-9]",
      "root ::= a\na ::= b | \"x\"\nb ::= c? a\nc ::= \"c\"",
      "root ::= a b\na ::= \"a\"?\nb ::= root | \"b\"",
      "root ::= \"a\"\r\nb ::= \"b\"\r\n",
      "root::=\"a\"",
      "root ::= [^\\]]+ \"\\u00e9\\U0001F642\"",
      "root ::= (\n  \"a\"\n  | \"b\"\n)",
      "root ::= \"a\" \n  \"b\"",
      "root ::= <[12]> !<[13]>",
  };
  std::mt19937 rng(12345);
  // Grammars built from the syntax (rules a and b refer to each other, so
  // some are left-recursive), a third of them then damaged by one edit...
  std::function<std::string(int)> sequence = [&](int depth) {
    std::string out;
    for (int k = 0, n = 1 + static_cast<int>(rng() % 3); k < n; ++k) {
      switch (rng() % (depth > 2 ? 4 : 6)) {
        case 0:
          out += "\"" + std::string(1, static_cast<char>('a' + rng() % 3)) + "\"";
          break;
        case 1:
          out += "[a-c]";
          break;
        case 2:
          out += rng() % 2 ? "a" : "b";
          break;
        case 3:
          out += ".";
          break;
        case 4:
          out += "(" + sequence(depth + 1) + " | " + sequence(depth + 1) + ")";
          break;
        default:
          out += "(" + sequence(depth + 1) + ")";
          break;
      }
      const char* const postfix[] = {"*", "+", "?", "{1,2}", "", "", ""};
      out += postfix[rng() % std::size(postfix)];
      out += " ";
    }
    return out;
  };
  const char* const pieces[] = {"root", " ::= ", "::=", "a",     "b",  "x-y", " ",    "\n",
                                "|",    "(",     ")",   "*",     "+",  "?",   "{2}",  "{1,3}",
                                "{0,}", "\"z\"", "\"",  "[a-c]", "[^", "]",   ".",    "# c\n",
                                "\\",   "<[5]>", "!",   "{",     "}",  ",",   "\r\n", "\t"};
  for (int i = 0; i < 2000; ++i) {
    std::string g = "root ::= " + sequence(0) + "\na ::= " + sequence(0) + "| " + sequence(0) +
                    "\nb ::= " + sequence(0) + "\n";
    if (rng() % 3 == 0) {
      const size_t at = rng() % g.size();
      if (rng() % 2) {
        g.insert(at, pieces[rng() % std::size(pieces)]);
      } else {
        g.erase(at, 1);
      }
    }
    grammars.push_back(std::move(g));
  }
  // ... and strings of the syntax's pieces in any order.
  for (int i = 0; i < 1000; ++i) {
    std::string g = rng() % 2 ? "root ::= " : "";
    const int n = 1 + static_cast<int>(rng() % 14);
    for (int k = 0; k < n; ++k) g += pieces[rng() % std::size(pieces)];
    grammars.push_back(std::move(g));
  }
  int taken = 0, left_recursive = 0;
  for (const auto& g : grammars) {
    const Status st = ParseGrammar(g, nullptr, "grammar");
    if (!st.ok() && st.message().find("is left-recursive") != std::string::npos) {
      ++left_recursive;
      continue;
    }
    ASSERT_EQ(st.ok(), LlamaTakes(g)) << "grammar:\n" << g << "\nours: " << st.message();
    taken += st.ok();
  }
  // All kinds were tried.
  EXPECT_GT(taken, 100);
  EXPECT_LT(taken + left_recursive, static_cast<int>(grammars.size()) - 100);
  EXPECT_GT(left_recursive, 10);
}

// Token references need the model's vocabulary: with it, a control token's
// text is one token; text that is not one token is refused by name.
TEST(ParseGrammar, TokenReferencesReadWithTheModelsVocabulary) {
  const std::string path = outpost::testing::ModelPath();
  if (path.empty()) {
    if (outpost::testing::ModelRequired()) FAIL() << "OUTPOST_MODEL is missing";
    GTEST_SKIP() << "OUTPOST_MODEL not set";
  }
  InstallLlamaLogger(false);
  ModelOptions o;
  o.path = path;
  auto m = Model::Load(o);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE((*m)->CheckGrammar("root ::= <|im_end|> | \"x\" !<|im_start|>", "grammar").ok());
  const Status st = (*m)->CheckGrammar("root ::= <not-a-token>", "grammar");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("invalid token '<not-a-token>'"), std::string::npos) << st.message();
  // The repetition limits come first, as for a schema's grammar.
  EXPECT_NE((*m)->CheckGrammar("root ::= \"a\"{5,2}", "grammar").message().find("at least 5"),
            std::string::npos);
}

}  // namespace
}  // namespace outpost::engine
