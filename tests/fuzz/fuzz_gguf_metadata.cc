// libFuzzer: the GGUF metadata reader (engine/model_info.h) that plans a
// model before llama.cpp loads it, on arbitrary files.
#include <cstddef>
#include <cstdint>

#include "fuzz_file.h"
#include "outpost/engine/model_info.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)outpost::engine::ReadModelInfo(outpost::fuzz::WriteInput(data, size, ".gguf"));
  return 0;
}
