// PullModel — one entry point for `outpost model pull` and POST
// /admin/models/pull: a model from wherever it is published into the store.
//
//   /path/file.gguf, file:///…   copied in (ModelStore::Import)
//   https://…, http://…          downloaded, checked against the sha256
//                                the caller pins (ModelStore::Pull)
//   oci://host/repo:tag|@sha256  the registry's manifest is resolved, its
//                                GGUF layer (models::ReadModelManifest)
//                                downloaded as a blob and checked against
//                                the layer's digest; a sha256 the caller
//                                gives must be that digest. The version
//                                records the source pinned by manifest
//                                digest (oci://host/repo@sha256:…).
//
// The signature is checked under the request's policy before a download
// starts (the digest it must vouch for is known from the pin or the
// manifest), after the copy for a local file (which a refusal leaves
// "failed"). What was found is kept with the version (ModelVersion::signature).
#pragma once

#include <string>
#include <vector>

#include "outpost/models/model_signature.h"
#include "outpost/models/model_store.h"
#include "outpost/router/http_blob_source.h"
#include "outpost/router/registry_client.h"

namespace outpost::router {

struct PullRequest {
  std::string source;  // a path, an http(s) URL or an oci:// reference
  std::string ref;     // NAME:VERSION in the store
  std::string sha256;  // required for http(s); optional pin otherwise
  models::ModelStore::PullOptions pull;
  RegistryOptions registry;  // its `http` also serves plain http(s) sources
  // Without registry.username, an oci:// pull takes the credentials `docker
  // login` & co. saved (router/registry_auth_file.h) from these files; empty:
  // never. A file that cannot be used is warned about; the pull goes on
  // anonymously.
  std::vector<std::string> registry_auth_files;
  // Signatures (models/model_signature.h): the policy, the keys, and a
  // signature file given by hand ("" = look for one: <path>.sig or
  // model.sig beside a file, <url>.sig for https, the registry's
  // sha256-<manifest digest> referrers tag for oci).
  models::SignaturePolicy signature_policy = models::SignaturePolicy::kWarn;
  std::vector<models::TrustedKey> trusted_keys;
  std::string signature_path;
};

// Errors: as ModelStore::Import / Pull, and RegistryClient's (NotFound,
// Unauthenticated, InvalidArgument naming the manifest's problem — several
// GGUF shards are refused: the store keeps one file per version).
StatusOr<models::ModelVersion> PullModel(models::ModelStore* store, const PullRequest& request,
                                         const models::ModelStore::Progress& progress = nullptr);

}  // namespace outpost::router
