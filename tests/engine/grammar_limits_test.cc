// CheckGrammarRepetitions on GBNF text: every {m}, {m,} and {m,n} is found
// outside literals, classes and comments, and those llama.cpp's parser would
// take until the process is killed (a minimum above the maximum) or would
// refuse or silently unbound (counts past 2000) are refused by name.
#include "outpost/engine/grammar_limits.h"

#include <gtest/gtest.h>

#include <string>

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
    EXPECT_TRUE(CheckGrammarRepetitions(g, "p").ok()) << g;
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
  };
  for (const auto& c : cases) {
    const Status st = CheckGrammarRepetitions(c.grammar, "response_format.json_schema.schema");
    ASSERT_FALSE(st.ok()) << c.grammar;
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(st.param(), "response_format.json_schema.schema");
    EXPECT_NE(st.message().find(c.words), std::string::npos) << c.grammar << ": " << st.message();
  }
}

}  // namespace
}  // namespace outpost::engine
