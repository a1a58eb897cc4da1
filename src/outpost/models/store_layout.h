// The model store's OCI vocabulary and small helpers, shared by
// model_store.cc (the store) and model_archive.cc (export/import as a tar).
// Internal to models/.
#pragma once

#include <cstddef>
#include <string>

namespace outpost::models::layout {

inline constexpr const char* kManifestType = "application/vnd.oci.image.manifest.v1+json";
inline constexpr const char* kArtifactType = "application/vnd.cncf.model.manifest.v1+json";
inline constexpr const char* kConfigType = "application/vnd.cncf.model.config.v1+json";
inline constexpr const char* kWeightType = "application/vnd.cncf.model.weight.v1.raw";
inline constexpr const char* kRefAnnotation = "org.opencontainers.image.ref.name";

inline std::string Hex(const unsigned char* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    s[2 * i] = d[p[i] >> 4];
    s[2 * i + 1] = d[p[i] & 15];
  }
  return s;
}

}  // namespace outpost::models::layout
