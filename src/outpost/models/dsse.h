// DSSE (Dead Simple Signing Envelope, secure-systems-lab/dsse v1) with the
// keys Outpost trusts: an envelope {payloadType, payload (base64),
// signatures[{keyid, sig (base64)}]} whose signature is over
// PAE(payloadType, payload) = "DSSEv1 <len> <type> <len> <payload>".
// Ed25519 signs PAE itself; ECDSA (P-256/384/521) a SHA-256 of it.
//
// Two users: model signatures (model_signature.h, an in-toto statement as
// payload) and the fleet's desired-state document (fleet/desired_state.h).
// Offline, OpenSSL only.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "outpost/util/status.h"

namespace outpost::models {

struct TrustedKey {
  std::string id;    // the first 16 hex digits of SHA-256 over the key's DER
  std::string pem;   // SubjectPublicKeyInfo PEM (Ed25519 or EC)
  std::string path;  // where it was read from
};

// Reads PEM public keys (a private key file is refused: it must not be on
// the box). Errors: InvalidArgument naming the file and the problem (field
// "trusted_keys").
StatusOr<std::vector<TrustedKey>> LoadTrustedKeys(const std::vector<std::string>& paths);

struct DsseVerified {
  std::string payload;  // decoded
  std::string key_id;   // the trusted key that verified it
};

// Checks `envelope` (a parsed JSON object) against `keys`: its payloadType
// must be `payload_type`, and one signature must verify with one key.
// Errors: PermissionDenied, field "signature", "signature: " + what failed
// (not an envelope, another payload type, bad base64, no keys configured,
// no trusted key verifies it — naming the keys' ids).
StatusOr<DsseVerified> VerifyDsse(const nlohmann::json& envelope, const std::string& payload_type,
                                  const std::vector<TrustedKey>& keys);

// An envelope of `payload` signed with the Ed25519 private key in
// `private_key_pem_path` (pretty-printed JSON, newline-terminated). Errors:
// InvalidArgument (field "key": no such file, not an Ed25519 private key).
StatusOr<std::string> SignDsse(const std::string& private_key_pem_path,
                               const std::string& payload_type, const std::string& payload);

}  // namespace outpost::models
