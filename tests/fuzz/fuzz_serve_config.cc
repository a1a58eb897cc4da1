// libFuzzer: the serve config loader (app/config.h) on arbitrary YAML.
#include <cstddef>
#include <cstdint>

#include "fuzz_file.h"
#include "outpost/app/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  outpost::app::ServeConfig cfg;
  (void)outpost::app::LoadConfigFile(outpost::fuzz::WriteInput(data, size, ".yaml"), &cfg);
  return 0;
}
