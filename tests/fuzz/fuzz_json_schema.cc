// libFuzzer: a request's JSON schema (response_format, a tool's parameters)
// through engine::JsonSchemaToGrammar — Outpost's checks, llama.cpp's
// converter and its grammar parser. Whatever the schema, the answer is a
// grammar or an InvalidArgument, in bounded time and memory (libFuzzer's
// -rss_limit_mb and -timeout catch the parser expanding a repetition
// without end, as a minimum above its maximum once made it).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "outpost/engine/json_schema_grammar.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  auto g = outpost::engine::JsonSchemaToGrammar(in, "schema");
  if (!g.ok() && g.status().code() != outpost::StatusCode::kInvalidArgument) std::abort();
  if (g.ok() && g->find("root ::=") == std::string::npos) std::abort();
  return 0;
}
