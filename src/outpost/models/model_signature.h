// Model signatures: a DSSE envelope over an in-toto statement that names the
// model file's sha256, checked offline with OpenSSL against trusted public
// keys. Two envelopes are read:
//
//   OpenSSF model signing v1.0   a Sigstore bundle (mediaType
//                                application/vnd.dev.sigstore.bundle.v0.3+json)
//                                holding the dsseEnvelope; key mode (ECDSA
//                                P-256/384), as `model_signing sign key` writes
//   Outpost's own                a bare DSSE envelope, the same statement,
//                                signed with Ed25519 (`outpost model sign`)
//
// The statement: _type https://in-toto.io/Statement/v1, predicateType
// https://model_signing/signature/v1.0, predicate.resources[] of
// {name, algorithm: sha256, digest}; a signature vouches for a file when one
// resource's digest is the file's. The signature is over
// PAE(payloadType, payload) = "DSSEv1 <len> <type> <len> <payload>".
//
// A policy says what a missing or bad signature does: off (nothing is
// checked), warn (logged, the model is taken), enforce (refused).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "outpost/models/dsse.h"
#include "outpost/util/status.h"

namespace outpost::models {

struct SignatureCheck {
  std::string format;  // "model-signing" | "dsse"
  std::string key_id;  // the trusted key that verified it
  std::string name;    // the resource name the statement gives the file
};

// Verifies `signature_json` for a file whose digest is `file_digest`
// ("sha256:<hex>"). Errors: PermissionDenied naming what failed (not an
// envelope, no trusted key verifies it, the statement names other bytes).
StatusOr<SignatureCheck> VerifyModelSignature(const std::string& signature_json,
                                              const std::string& file_digest,
                                              const std::vector<TrustedKey>& keys);

// Outpost's own signature over a file: a DSSE envelope of the statement
// above, signed with the Ed25519 private key in `private_key_pem_path`.
// Errors: InvalidArgument (no such key, not Ed25519).
StatusOr<std::string> SignModel(const std::string& private_key_pem_path, const std::string& name,
                                const std::string& file_digest);
// Over several files (a split model's shards): one resource per file, as
// {name, "sha256:<hex>"} in order; the subject's digest covers them all.
StatusOr<std::string> SignModel(const std::string& private_key_pem_path,
                                const std::vector<std::pair<std::string, std::string>>& files);

enum class SignaturePolicy { kOff, kWarn, kEnforce };
// "off" | "warn" | "enforce". Errors: InvalidArgument naming the value.
StatusOr<SignaturePolicy> ParseSignaturePolicy(const std::string& text);
const char* SignaturePolicyName(SignaturePolicy p);

// Policies per source: "enforce" (one for all), or comma-separated
// PREFIX=POLICY pairs where the longest matching prefix of the source wins
// and "*" is the rest, e.g.
// "oci://registry.corp/=enforce,https://models.corp/=warn,*=off".
struct SignaturePolicies {
  SignaturePolicy fallback = SignaturePolicy::kWarn;
  std::vector<std::pair<std::string, SignaturePolicy>> by_prefix;
  SignaturePolicy For(const std::string& source) const;
};
// Errors: InvalidArgument naming the entry (field "signature_policy").
StatusOr<SignaturePolicies> ParseSignaturePolicies(const std::string& text);

// The policy's verdict on a signature (`signature_json` "" = none found)
// for a model in the files with these digests (one GGUF, or a split model's
// shards: the signature must vouch for every one). OK with `*note` saying
// what was found (for the version's record and the log), or
// PermissionDenied under enforce.
Status ApplySignaturePolicy(SignaturePolicy policy, const std::string& signature_json,
                            const std::vector<std::string>& file_digests,
                            const std::vector<TrustedKey>& keys, std::string* note);

}  // namespace outpost::models
