// libFuzzer: the routing file loader (router/routing_config.h) on arbitrary
// YAML: every outcome is a RoutingConfig or an error naming the key.
#include <cstddef>
#include <cstdint>

#include "fuzz_file.h"
#include "outpost/router/routing_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)outpost::router::LoadRoutingConfig(outpost::fuzz::WriteInput(data, size, ".yaml"));
  return 0;
}
