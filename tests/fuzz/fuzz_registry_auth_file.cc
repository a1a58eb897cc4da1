// libFuzzer: registry auth files as docker, podman and oras write them
// (router/registry_auth_file.h), looked up for a host with a port and for
// Docker Hub. Every outcome is credentials, none, or an error naming the file.
#include <cstddef>
#include <cstdint>

#include "fuzz_file.h"
#include "outpost/router/registry_auth_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = outpost::fuzz::WriteInput(data, size, ".json");
  (void)outpost::router::FindRegistryCredentials("registry.site.local:5000", {path});
  (void)outpost::router::FindRegistryCredentials("docker.io", {path});
  return 0;
}
