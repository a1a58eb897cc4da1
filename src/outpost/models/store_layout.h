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
// A signature kept with a version, as an OCI referrer of its manifest: an
// OpenSSF model-signing (Sigstore) bundle, or Outpost's bare DSSE envelope.
inline constexpr const char* kSigstoreBundleType = "application/vnd.dev.sigstore.bundle.v0.3+json";
inline constexpr const char* kDsseEnvelopeType = "application/vnd.dsse.envelope.v1+json";
inline constexpr const char* kEmptyType = "application/vnd.oci.empty.v1+json";
inline bool IsSignatureType(const std::string& t) {
  return t == kSigstoreBundleType || t == kDsseEnvelopeType;
}

// 64 lowercase hex digits.
inline bool IsHex64(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// An OCI repository name: components [a-z0-9]+([._-][a-z0-9]+)* joined by '/'.
// (No std::regex: GCC 12 warns inside it under the sanitizer builds.)
inline bool IsRepositoryName(const std::string& s) {
  if (s.empty() || s.size() > 200) return false;
  bool after_alnum = false;  // the previous character was [a-z0-9]
  for (char c : s) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (alnum) {
      after_alnum = true;
    } else if (c == '.' || c == '_' || c == '-' || c == '/') {
      if (!after_alnum) return false;  // leading or doubled separator
      after_alnum = false;
    } else {
      return false;
    }
  }
  return after_alnum;  // no trailing separator
}

// An OCI tag: [A-Za-z0-9_][A-Za-z0-9._-]{0,127}.
inline bool IsTag(const std::string& s) {
  if (s.empty() || s.size() > 128) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool word =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!word && (i == 0 || (c != '.' && c != '-'))) return false;
  }
  return true;
}

}  // namespace outpost::models::layout
