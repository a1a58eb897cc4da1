// JsonSchemaToGrammar refuses, naming the place and the keyword, every bound
// llama.cpp's converter and grammar parser cannot keep: counts past 2000,
// minimums above maximums (which its parser took until the process was killed
// for memory), empty integer and number ranges (a grammar that dead-ends
// mid-answer), tuples it would read differently, and grammars its parser
// refuses; converts the schemas at the edge of each limit; gives bounded
// numbers Outpost's rule; and matches patterns against the JSON text.
#include "outpost/engine/json_schema_grammar.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/grammar_matcher.h"

#include <string>

namespace outpost::engine {
namespace {

constexpr const char* kParam = "response_format.json_schema.schema";

TEST(JsonSchemaGrammar, BoundsThatCannotBeKeptAreRefusedByName) {
  struct Case {
    const char* schema;
    const char* words;
  } cases[] = {
      {R"({"type":"string","minLength":5,"maxLength":2})",
       "at /: minLength 5 is above maxLength 2, which no output satisfies"},
      {R"({"type":"object","properties":{"a":{"type":"array","minItems":3,"maxItems":1}}})",
       "at /properties/a: minItems 3 is above maxItems 1"},
      {R"({"type":"string","minLength":2001})", "minLength 2001 is more than"},
      {R"({"type":"string","maxLength":5000})", "maxLength 5000 is more than"},
      {R"({"type":"array","items":{"type":"integer"},"maxItems":1000000})",
       "maxItems 1000000 is more than"},
      {R"({"type":"array","minItems":-1})", "minItems must be a non-negative integer, got -1"},
      {R"({"type":"array","minItems":"3"})", "minItems must be a non-negative integer, got \"3\""},
      {R"({"type":"string","maxLength":2.5})", "maxLength must be a non-negative integer, got 2.5"},
      {R"({"type":"string","maxLength":18446744073709551615})", "maxLength 18446744073709551615"},
      {R"({"minimum":0})", "with \"type\": \"integer\" or \"type\": \"number\" only"},
      {R"({"type":["integer","number"],"maximum":3})", "\"type\": \"number\" only"},
      {R"({"type":["number","null"],"maximum":3})", "use anyOf with {\"type\": \"null\"}"},
      {R"({"type":"number","minimum":1,"maximum":0.5})", "at /: no number lies within its bounds"},
      {R"({"type":"number","exclusiveMinimum":0,"exclusiveMaximum":0})", "no number lies"},
      {R"({"type":"number","minimum":1e16})", "a number bound must be below 10^15"},
      {R"({"type":"number","maximum":0.1234567890123456})", "at most 15 fraction digits"},
      {R"({"type":"number","minimum":0,"enum":[1,2]})", "give enum/const or bounds"},
      {R"({"type":"number","minimum":0,"exclusiveMinimum":1})",
       "give minimum or exclusiveMinimum, not both"},
      {R"({"const":"__outpost_number_0__"})", "holds the text __outpost_number_"},
      {R"({"type":"integer","minimum":10,"maximum":5})", "no integer lies within its bounds"},
      {R"({"type":"integer","exclusiveMinimum":5,"exclusiveMaximum":6})",
       "no integer lies within its bounds"},
      {R"({"type":"integer","minimum":5.5,"maximum":5.9})", "no integer lies within its bounds"},
      {R"({"type":"integer","minimum":1,"exclusiveMinimum":3})",
       "give minimum or exclusiveMinimum, not both"},
      {R"({"type":"integer","maximum":1,"exclusiveMaximum":3})",
       "give maximum or exclusiveMaximum, not both"},
      {R"({"type":"integer","maximum":"3"})", "maximum must be a number, got \"3\""},
      {R"({"type":"integer","minimum":1e300})", "minimum must be between -2^62 and 2^62"},
      {R"({"multipleOf":5})", "exclusiveMaximum and multipleOf can be enforced with"},
      {R"({"type":"number","multipleOf":"5"})", "multipleOf must be a number, got \"5\""},
      {R"({"type":"number","multipleOf":0})", "multipleOf must be a number above 0"},
      {R"({"type":"integer","multipleOf":5,"enum":[5,10]})", "give enum/const or multipleOf"},
      {R"({"properties":{"q":{"type":"integer","multipleOf":3,"maximum":4}}})",
       "at /properties/q: multipleOf 3 with these bounds"},
      {R"({"type":"number","multipleOf":0.3,"minimum":0.4,"maximum":0.5})",
       "no multipleOf 0.3 lies within its bounds"},
      {R"({"type":"integer","maximum":9223372036854775807})", "between -2^62 and 2^62"},
      {R"({"type":"array","prefixItems":[{"type":"integer"}],"items":{"type":"string"}})",
       "give prefixItems or items, not both"},
      {R"({"type":"array","prefixItems":[{"const":1}],"minItems":2})",
       "exactly the 1 items of prefixItems, which minItems does not allow"},
      {R"({"type":"array","items":[{"const":1},{"const":2}],"maxItems":1})",
       "exactly the 2 items of items, which maxItems does not allow"},
      {R"({"type":"string","pattern":"^a{5,2}$"})", "at least 5 and at most 2 times"},
      {R"({"type":"string","pattern":"^a{3000}$"})", "at least 3000 times"},
      {R"({"type":"string","pattern":"^a{0,3000}$"})", "at most 3000 times"},
      // Regular-expression syntax the converter would answer with "any string".
      {R"({"type":"string","pattern":"^(a)\\1$"})",
       "pattern \"^(a)\\\\1$\" uses regular-expression syntax"},
      {R"({"type":"string","pattern":"^(?=a)a$"})", "cannot enforce (supported:"},
      {R"({"type":"string","pattern":"\\bword\\b"})", "uses regular-expression syntax"},
      {R"({"type":"string","pattern":"^[\\D]$"})", "uses regular-expression syntax"},
      {R"({"type":"string","pattern":"^((a|b$"})", "cannot be used: JSON schema conversion failed"},
      {R"({"type":"string","pattern":5})", "pattern must be a string, got 5"},
      // Within the count limit, past the parser's rules-times-count limit: the
      // parser itself refuses it, now while the request is checked.
      {R"({"type":"array","items":{"type":"integer"},"maxItems":2000})",
       "a repeated item's rules times its count exceed 2000"},
  };
  for (const auto& c : cases) {
    auto g = JsonSchemaToGrammar(c.schema, kParam);
    ASSERT_FALSE(g.ok()) << c.schema;
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(g.status().param(), kParam);
    EXPECT_NE(g.status().message().find(c.words), std::string::npos)
        << c.schema << ": " << g.status().message();
  }
}

TEST(JsonSchemaGrammar, SchemasAtTheEdgeOfEachLimitConvert) {
  for (const char* schema : {
           R"({"type":"string","minLength":2000,"maxLength":2000})",
           R"({"type":"string","minLength":0,"maxLength":0})",
           R"({"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":2})",
           R"({"type":"array","items":{"type":"integer"},"maxItems":1999})",
           R"({"type":"integer","minimum":5,"maximum":5})",
           R"({"type":"integer","exclusiveMinimum":4,"exclusiveMaximum":6})",
           R"({"type":"integer","minimum":4.5,"maximum":5.5})",
           R"({"type":["integer","null"],"minimum":0,"maximum":100})",
           R"({"type":"integer","minimum":-4611686018427387000})",
           R"({"type":"array","prefixItems":[{"const":1},{"type":"string"}],"minItems":2})",
           R"({"type":"object","properties":{"minimum":{"type":"number"}}})",
           R"({"type":"string","pattern":"^a{2,5}b{2000}$"})",
       }) {
    auto g = JsonSchemaToGrammar(schema, kParam);
    EXPECT_TRUE(g.ok()) << schema << ": " << g.status().ToString();
    if (g.ok()) {
      EXPECT_NE(g->find("root ::="), std::string::npos) << *g;
    }
  }
}

// Patterns llama.cpp's converter would have answered with "any string" (it
// reads no \d, no \/, no unanchored pattern) are enforced.
TEST(JsonSchemaGrammar, CommonPatternsAreEnforcedNotDropped) {
  const std::string any = *JsonSchemaToGrammar(R"({"type":"string"})", kParam);
  struct Case {
    const char* schema;
    const char* rule;  // in the grammar
  } cases[] = {
      {R"({"type":"string","pattern":"^\\d{3}-\\d{4}$"})", "[0-9]"},
      {R"({"type":"string","pattern":"^https?:\\/\\/[a-z]+$"})", "\"://\""},
      {R"({"type":"string","pattern":"[A-Z]{2}"})", "[A-Z]"},
      {R"({"type":"object","properties":{"id":{"type":"string","pattern":"^\\w+$"}}})",
       "[a-zA-Z0-9_]+"},
  };
  for (const auto& c : cases) {
    auto g = JsonSchemaToGrammar(c.schema, kParam);
    ASSERT_TRUE(g.ok()) << c.schema << ": " << g.status().ToString();
    EXPECT_NE(*g, any) << c.schema;
    EXPECT_NE(g->find(c.rule), std::string::npos) << c.schema << "\n" << *g;
  }
}

// Properties keep the order given (the schema is rewritten as an ordered
// document before conversion).
TEST(JsonSchemaGrammar, PropertiesKeepTheirOrder) {
  auto g = JsonSchemaToGrammar(
      R"({"type":"object","properties":{"zeta":{"type":"integer"},"alpha":{"type":"string","pattern":"^\\d$"}},"required":["zeta","alpha"]})",
      kParam);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const size_t root = g->find("root ::=");
  ASSERT_NE(root, std::string::npos);
  const std::string line = g->substr(root, g->find('\n', root) - root);
  EXPECT_LT(line.find("zeta"), line.find("alpha")) << line;
}

// enum values and anyOf/oneOf branches count together across the schema;
// 1000 convert, one more is refused naming the count.
TEST(JsonSchemaGrammar, EnumValuesAndBranchesAreCountedTogether) {
  const auto values = [](int n, const char* prefix) {
    std::string out;
    for (int i = 0; i < n; ++i)
      out += (i ? ",\"" : "\"") + std::string(prefix) + std::to_string(i) + "\"";
    return out;
  };
  const auto schema = [&](int enum_a, int branches) {
    std::string any;
    for (int i = 0; i < branches; ++i)
      any += (i ? "," : "") + std::string(R"({"const":)") + std::to_string(i) + "}";
    return R"({"type":"object","properties":{"a":{"enum":[)" + values(enum_a, "a") +
           R"(]},"b":{"anyOf":[)" + any + "]}}}";
  };
  EXPECT_TRUE(JsonSchemaToGrammar(schema(600, 400), kParam).ok());
  auto g = JsonSchemaToGrammar(schema(600, 401), kParam);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find(
                "has 1001 enum values and anyOf/oneOf branches in all; at most 1000"),
            std::string::npos)
      << g.status().message();
}

// A bounded number (Pydantic's confloat, ge/le on a float) gets Outpost's
// own rule where the converter would have written any number, wherever it
// sits in the schema, each bounded number its own rule.
TEST(JsonSchemaGrammar, BoundedNumbersGetTheirOwnRules) {
  auto g = JsonSchemaToGrammar(R"({"type":"object","properties":{
      "score":{"type":"number","minimum":0,"maximum":1,"description":"0 to 1"},
      "temps":{"type":"array","items":{"type":"number","exclusiveMinimum":-273.15}},
      "maybe":{"anyOf":[{"type":"number","maximum":-1.5},{"type":"null"}]}},
      "required":["score","temps","maybe"]})",
                               kParam);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  for (const char* rule :
       {"outpost-number-0 ::= ", "outpost-number-1 ::= ", "outpost-number-2 ::= "}) {
    EXPECT_NE(g->find(rule), std::string::npos) << rule << "\n" << *g;
  }
  EXPECT_EQ(g->find("__outpost_number_"), std::string::npos) << *g;
  // score: 0 to 1, no exponent, no sign.
  EXPECT_NE(g->find(R"(outpost-number-0 ::= ("0" ("." [0-9]{1,15})? | "1" ("." "0")"),
            std::string::npos)
      << *g;
  // A bounded number alone is the root.
  auto alone = JsonSchemaToGrammar(R"({"type":"number","minimum":2.5})", kParam);
  ASSERT_TRUE(alone.ok()) << alone.status().ToString();
  EXPECT_NE(alone->find("root ::= outpost-number-0"), std::string::npos) << *alone;
  // Where the converter leaves the number out (properties on a string), so
  // does the grammar (the fuzzer's find: this was an Internal error).
  auto dropped = JsonSchemaToGrammar(
      R"({"type":"string","properties":{"s":{"type":"number","minimum":-2.5}}})", kParam);
  ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
  EXPECT_EQ(dropped->find("outpost-number"), std::string::npos) << *dropped;
}

// multipleOf (Pydantic's multiple_of): a price in cents, a quantity by the
// dozen, a percentage in steps of 5, each in llama.cpp's grammar engine on
// whole answers.
TEST(JsonSchemaGrammar, MultiplesAreKeptWithTheirBounds) {
  auto g = JsonSchemaToGrammar(R"({"type":"object","properties":{
      "price":{"type":"number","multipleOf":0.01,"minimum":0},
      "dozens":{"type":"integer","multipleOf":12,"exclusiveMinimum":0},
      "percent":{"type":"integer","multipleOf":5,"minimum":0,"maximum":100}},
      "required":["price","dozens","percent"],"additionalProperties":false})",
                               kParam);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  testing::Matcher m(*g);
  const auto answer = [](const char* price, const char* dozens, const char* percent) {
    return std::string(R"({"price": )") + price + R"(, "dozens": )" + dozens + R"(, "percent": )" +
           percent + "}";
  };
  EXPECT_TRUE(m(answer("19.99", "24", "35")));
  EXPECT_TRUE(m(answer("0", "12", "100")));
  EXPECT_FALSE(m(answer("19.999", "24", "35")));  // a tenth of a cent
  EXPECT_FALSE(m(answer("-1", "24", "35")));
  EXPECT_FALSE(m(answer("19.99", "0", "35")));  // not above 0
  EXPECT_FALSE(m(answer("19.99", "30", "35")));
  EXPECT_FALSE(m(answer("19.99", "24", "33")));
  EXPECT_FALSE(m(answer("19.99", "24", "105")));
  // In a tool's parameters too (the schema readied for llama.cpp's chat code).
  auto ready = ReadyJsonSchema(R"({"type":"object","properties":{"n":{"type":"integer",
      "multipleOf":2}}})",
                               "tools[0].function.parameters");
  ASSERT_TRUE(ready.ok()) << ready.status().ToString();
  EXPECT_EQ(ready->number_rules.size(), 1u);
}

// A pattern names characters of the string; the answer is JSON text, where
// a quote, a backslash or a control character is written escaped. Checked
// with llama.cpp's grammar engine on strings as nlohmann writes them: the
// pattern's quote, backslash, \s and [ -~] match their escaped forms, and a
// raw control character (invalid JSON) never matches.
TEST(JsonSchemaGrammar, APatternMatchesTheStringAsJsonWritesIt) {
  struct Case {
    const char* pattern;
    std::vector<std::string> match, no_match;
  } cases[] = {
      {R"(^["']\w+["']$)", {"\"abc'", "'x'", "\"q\""}, {"abc", "`abc`", "\"a c\""}},
      {R"(^a\sb$)", {"a b", "a\tb", "a\nb", "a\vb", "a\rb", "a\fb"}, {"ab", "a_b", "a\"b"}},
      {R"(^[ -~]+$)", {R"(he said "hi" \o/)", "~"}, {"tab\there", "caf\xC3\xA9"}},
      {R"(^C:\\Users\\\w+$)", {R"(C:\Users\bob)"}, {"C:/Users/bob", R"(C:\Users\)"}},
      {"^x\"y$", {"x\"y"}, {"xy", "x'y"}},
  };
  for (const auto& c : cases) {
    const std::string schema = nlohmann::json{{"type", "string"}, {"pattern", c.pattern}}.dump();
    auto g = JsonSchemaToGrammar(schema, kParam);
    ASSERT_TRUE(g.ok()) << c.pattern << ": " << g.status().ToString();
    testing::Matcher matches(*g);
    for (const auto& m : c.match) {
      EXPECT_TRUE(matches(nlohmann::json(m).dump()))
          << c.pattern << " " << nlohmann::json(m).dump() << "\n"
          << *g;
    }
    for (const auto& m : c.no_match) {
      EXPECT_FALSE(matches(nlohmann::json(m).dump()))
          << c.pattern << " " << nlohmann::json(m).dump();
    }
  }
  // A raw tab inside the string is not JSON: never matched.
  auto ws = JsonSchemaToGrammar(R"({"type":"string","pattern":"^a\\sb$"})", kParam);
  ASSERT_TRUE(ws.ok());
  EXPECT_FALSE(testing::Matcher(*ws)("\"a\tb\""));
}

TEST(JsonSchemaGrammar, AnIntegerRangeBecomesTheGrammarsDigits) {
  auto g = JsonSchemaToGrammar(R"({"type":"integer","minimum":3,"maximum":7})", kParam);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_NE(g->find("[3-7]"), std::string::npos) << *g;
}

}  // namespace
}  // namespace outpost::engine
