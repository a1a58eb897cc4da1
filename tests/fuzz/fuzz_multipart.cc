// libFuzzer: the multipart/form-data parser (api/multipart.h) that reads
// /v1/files uploads. The first line is the Content-Type, the rest the body.
#include <cstddef>
#include <cstdint>
#include <string>

#include "outpost/api/multipart.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  const size_t nl = in.find('\n');
  const std::string type = nl == std::string::npos ? in : in.substr(0, nl);
  const std::string body = nl == std::string::npos ? std::string() : in.substr(nl + 1);
  auto parts = outpost::api::ParseMultipart(type, body);
  if (parts.ok()) {
    size_t total = 0;
    for (const auto& p : *parts) total += p.data.size();
    if (total > body.size()) __builtin_trap();  // parts are pieces of the body
  }
  return 0;
}
