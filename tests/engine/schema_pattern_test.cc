// RewriteSchemaPattern: the regular-expression shorthands llama.cpp's schema
// converter does not read (and would answer with "any string") become what it
// does read; unanchored patterns get JSON schema's "contains" meaning; what
// cannot be rewritten is left for the caller to refuse.
#include "outpost/engine/schema_pattern.h"

#include <gtest/gtest.h>

#include <string>

namespace outpost::engine {
namespace {

TEST(SchemaPattern, ShorthandsEscapesAndAnchorsAreRewritten) {
  struct Case {
    const char* in;
    const char* out;
  } cases[] = {
      {R"(^\d+$)", R"(^[0-9]+$)"},
      {R"(^\d{3}-\d{4}$)", R"(^[0-9]{3}-[0-9]{4}$)"},
      // A class's whitespace: the space as it is, the rest as JSON escapes them.
      {R"(^[\d\s]+$)", R"(^(?:[\x200-9]|\\t|\\n|\\u000b|\\f|\\r)+$)"},
      {R"(^\w\W\S\D$)",
       R"(^[a-zA-Z0-9_][^a-zA-Z0-9_"\\\x00-\x1F][^ \t\n\r\x0B\x0C"\\\x00-\x1F][^0-9"\\\x00-\x1F]$)"},
      {R"(^https?:\/\/[a-z.]+$)", R"(^https?://[\x2Ea-z]+$)"},
      {R"(^a.b[^x]$)", R"(^a[^"\\\x00-\x1F]b[^x"\\\x00-\x1F]$)"},
      {R"(^a\:b\#c\@d$)", R"(^a:b#c@d$)"},
      {R"(^\.\*\(\)\[\]\{\}\|\?\+\^\$$)", R"(^\.\*\(\)\[\]\{\}\|\?\+\^\$$)"},
      {R"(^[\.\-\]\/]$)", R"(^[\x2D-\x2F\x5D]$)"},
      // Characters a JSON string escapes, as the answer's text holds them.
      {R"(^\t\n\x41\u00e9\\\"$)", R"(^\\t\\n\x41\u00e9\\\\\\"$)"},
      {R"(^["']\s?$)", R"(^(?:[\x27]|\\")(?:[\x20]|\\t|\\n|\\u000b|\\f|\\r)?$)"},
      {R"(^[ -~]$)", R"(^(?:[\x20-\x21\x23-\x5B\x5D-\x7E]|\\"|\\\\)$)"},
      {"^a\tb\"$", R"(^a\\tb\\"$)"},
      {R"([A-Z]{3})", R"(^[^"\\\x00-\x1F]*(?:[A-Z]{3})[^"\\\x00-\x1F]*$)"},
      {R"(^abc)", R"(^(?:abc)[^"\\\x00-\x1F]*$)"},
      {R"(abc$)", R"(^[^"\\\x00-\x1F]*(?:abc)$)"},
      {R"(abc\$)", R"(^[^"\\\x00-\x1F]*(?:abc\$)[^"\\\x00-\x1F]*$)"},
      {R"(^abc\\$)", R"(^abc\\\\$)"},
      {"", R"(^[^"\\\x00-\x1F]*$)"},
      // Left as they are, for the caller to refuse.
      {R"(^(a)\1$)", R"(^(a)\1$)"},
      {R"(^\bword\b$)", R"(^\bword\b$)"},
      {R"(^[\D]$)", R"(^[\D]$)"},
      {R"(^\p{L}$)", R"(^\p{L}$)"},
  };
  for (const auto& c : cases) EXPECT_EQ(RewriteSchemaPattern(c.in), c.out) << c.in;
}

}  // namespace
}  // namespace outpost::engine
