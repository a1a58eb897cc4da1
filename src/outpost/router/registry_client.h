// RegistryClient — the OCI distribution API, enough to pull a model:
// resolve a reference to its manifest (following an index to the model's
// manifest), and read blobs as a models::BlobSource, so ModelStore::Pull
// resumes, throttles and checks them as any other download.
//
// Auth as registries ask for it: anonymous first; on 401 the
// WWW-Authenticate challenge says Basic (the configured user and password)
// or Bearer (a token from the challenge's realm for
// "repository:<repo>:pull", with the user and password when set, else
// anonymous). A token that expires during a long blob download is asked for
// again once. Credentials never leave the registry's host: a blob
// redirected to storage elsewhere is fetched without them. Plain HTTP when
// `plain_http` is set, or for a loopback host whose HTTPS does not answer
// (as Docker does); HTTPS otherwise, against the system's CAs or `ca_file`.
// Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "outpost/models/blob_source.h"
#include "outpost/models/oci_artifact.h"
#include "outpost/router/http_blob_source.h"
#include "outpost/util/status.h"

namespace outpost::router {

struct RegistryOptions {
  std::string username;  // "" = anonymous
  std::string password;
  bool plain_http = false;
  BlobSourceOptions http;  // CA file, timeouts (its token fields are ignored)
  // A manifest fetch that got no answer, or 429 / 5xx, is tried again (a
  // thin, flaky link) up to this many times in all, after a backoff that
  // starts here and doubles (Retry-After when the registry gives one).
  int manifest_attempts = 5;
  int64_t retry_initial_ms = 500;
};

class RegistryClient final : public models::BlobSource {
 public:
  RegistryClient(models::OciReference ref, RegistryOptions options);

  struct Manifest {
    std::string digest;      // sha256:… of the bytes (checked against a pinned digest)
    std::string media_type;  // of the manifest itself
    std::string body;
  };
  // The model's manifest for the reference: an index is followed to the
  // entry models::PickFromIndex chooses. Errors: NotFound (no such
  // repository or tag), Unauthenticated (credentials refused or missing),
  // InvalidArgument (a digest mismatch, an unusable answer), Unavailable
  // (the registry did not answer).
  StatusOr<Manifest> FetchManifest();

  // A Sigstore bundle attached to the manifest `digest`, found through the
  // referrers fallback tag "sha256-<hex>" (an index of referrers, or one
  // referrer manifest) whose artifactType is a Sigstore bundle; "" when
  // there is none. Errors: as FetchManifest, but a missing tag is "".
  StatusOr<std::string> FetchSignature(const std::string& digest);

  // The URL of a blob, for ModelStore::Pull.
  std::string BlobUrl(const std::string& digest) const;

  Status Get(const std::string& url, uint64_t offset, const std::string& validator,
             const std::function<bool(const Head&)>& on_head,
             const std::function<bool(const char* data, size_t n)>& on_data) override;

 private:
  struct Answer {
    int status = 0;
    std::string body, content_type, digest, challenge, retry_after;
  };
  // GET `path` on the registry with the current credentials; once more
  // after answering a 401's challenge.
  StatusOr<Answer> GetWithAuth(const std::string& path, const std::string& accept);
  StatusOr<Answer> GetOnce(const std::string& path, const std::string& accept);
  // Answers a WWW-Authenticate challenge: sets authorization_.
  Status Authorize(const std::string& challenge);
  // With retries (RegistryOptions::manifest_attempts), and one attempt.
  StatusOr<Manifest> FetchManifestAt(const std::string& reference);
  StatusOr<Manifest> FetchManifestOnce(const std::string& reference, int64_t* retry_after_ms);
  std::string Base() const;

  const models::OciReference ref_;
  const RegistryOptions options_;
  mutable std::mutex mu_;
  std::string authorization_;  // the Authorization header value, "" = none yet
  std::string challenge_;      // the last challenge, to ask for a fresh token
  bool plain_http_;
};

}  // namespace outpost::router
