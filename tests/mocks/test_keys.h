// Fresh Ed25519 key pairs as PEM files, for the tests of signatures (model
// files, the fleet's desired state): WHO.key (private) and WHO.pub.
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstdio>
#include <string>

namespace outpost::testing {

// Writes dir/WHO.key and dir/WHO.pub; false when OpenSSL cannot make a key.
inline bool WriteEd25519KeyPair(const std::string& dir, const std::string& who) {
  EVP_PKEY* k = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  if (k == nullptr) return false;
  FILE* f = std::fopen((dir + "/" + who + ".key").c_str(), "w");
  const bool priv =
      f != nullptr && PEM_write_PrivateKey(f, k, nullptr, nullptr, 0, nullptr, nullptr);
  if (f != nullptr) std::fclose(f);
  f = std::fopen((dir + "/" + who + ".pub").c_str(), "w");
  const bool pub = f != nullptr && PEM_write_PUBKEY(f, k);
  if (f != nullptr) std::fclose(f);
  EVP_PKEY_free(k);
  return priv && pub;
}

}  // namespace outpost::testing
