// libFuzzer: what a registry or a model's publisher sends, before a byte of
// the model is fetched (models/oci_artifact.h, models/model_signature.h): the
// first line as an oci:// reference, the rest as a manifest, as an image
// index and as a signature (an OpenSSF model-signing bundle or an Outpost
// DSSE envelope) checked against the test fixture's key. Every outcome is a
// value or an error; no crash, no leak.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "outpost/models/model_signature.h"
#include "outpost/models/oci_artifact.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<outpost::models::TrustedKey> keys = [] {
    auto k = outpost::models::LoadTrustedKeys({"tests/data/signatures/oms-p256.pub"});
    return k.ok() ? *k : std::vector<outpost::models::TrustedKey>{};
  }();
  const std::string in(reinterpret_cast<const char*>(data), size);
  const size_t nl = in.find('\n');
  (void)outpost::models::ParseOciReference(in.substr(0, nl));
  const std::string body = nl == std::string::npos ? in : in.substr(nl + 1);
  (void)outpost::models::ReadModelManifest(body);
  (void)outpost::models::PickFromIndex(body);
  (void)outpost::models::VerifyModelSignature(body, "sha256:" + std::string(64, '0'), keys);
  return 0;
}
