// libFuzzer: GBNF text a client wrote (chat and completions' `grammar`)
// through engine::ParseGrammar — llama.cpp's parser run without its stderr
// print, then the checks llama.cpp's sampler makes. Whatever the text, the
// answer is OK or an InvalidArgument, in bounded time and memory; and a
// grammar it lets through is one llama.cpp's own sampler takes (else the
// request would fail later, with the grammar printed to stderr), or one its
// grammar engine stops at its bounds as too ambiguous. The other
// direction, that nothing llama.cpp takes is refused, is
// tests/engine/grammar_limits_test.cc's.
#include <llama.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>

#include "outpost/engine/grammar_limits.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  const outpost::Status st = outpost::engine::ParseGrammar(in, /*vocab=*/nullptr, "grammar");
  if (!st.ok() && (st.code() != outpost::StatusCode::kInvalidArgument || st.param() != "grammar")) {
    std::abort();
  }
  if (st.ok()) {
    llama_sampler* s = nullptr;
    try {
      s = llama_sampler_init_grammar(/*vocab=*/nullptr, in.c_str(), "root");
    } catch (const std::exception& e) {
      // An ambiguous grammar stopped at the engine's bounds (Outpost's patch
      // to llama.cpp) is a runtime limit, not a disagreement; the request
      // gets engine::GrammarTooAmbiguous. Anything else thrown is a finding.
      if (outpost::engine::IsGrammarTooAmbiguous(e)) return 0;
      std::abort();
    }
    if (s == nullptr) std::abort();
    llama_sampler_free(s);
  }
  return 0;
}
