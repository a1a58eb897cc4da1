// The audit log's cryptography, on OpenSSL: SHA-256 for the hash chain and
// Ed25519 for the checkpoints' signatures. Pure functions and a key holder;
// thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "outpost/util/status.h"

namespace outpost::audit {

// The chain's link: SHA-256(prev_hex's 32 bytes ‖ record) in hex. An invalid
// prev (not 64 hex digits) hashes as 32 zero bytes.
std::string ChainHash(const std::string& prev_hex, std::string_view record);

// 64 zeros: the `prev` of the first record.
const std::string& GenesisHash();

// An Ed25519 signing key kept in a PEM file (0600) with its public half
// beside it (<path>.pub, PEM).
class SigningKey {
 public:
  // Loads the key at `path`, or creates both files when there is none.
  // Errors: Unavailable naming the file and OpenSSL's reason.
  static StatusOr<std::unique_ptr<SigningKey>> LoadOrCreate(const std::string& path);
  ~SigningKey();
  // Base64 signature over `message`.
  std::string Sign(std::string_view message) const;
  const std::string& public_pem() const { return public_pem_; }
  // The first 16 hex digits of SHA-256 over the public key's PEM.
  const std::string& key_id() const { return key_id_; }

 private:
  SigningKey(void* pkey, std::string public_pem);
  void* const pkey_;  // EVP_PKEY*
  const std::string public_pem_;
  const std::string key_id_;
};

// True when `signature_b64` is `public_pem`'s signature over `message`.
bool VerifySignature(const std::string& public_pem, std::string_view message,
                     const std::string& signature_b64);

}  // namespace outpost::audit
