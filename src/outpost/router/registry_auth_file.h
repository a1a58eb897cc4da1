// Registry credentials from the files that `docker login`, `podman login`,
// `skopeo login` and `oras login` write, so that a box whose operator logged
// in once pulls with the same credentials, as those tools do.
//
// Files, first that names the registry wins: $REGISTRY_AUTH_FILE,
// $XDG_RUNTIME_DIR/containers/auth.json (podman, skopeo),
// $DOCKER_CONFIG/config.json, else ~/.docker/config.json (docker, oras).
// Each is {"auths": {KEY: {"auth": base64("user:password")} or
// {"username", "password"}}}, KEY being the registry as host[:port], with
// or without a scheme and a path ("https://host/v1/"); Docker Hub is
// "https://index.docker.io/v1/". Credential helpers (credsStore,
// credHelpers) and identity tokens are programs and flows Outpost does not
// run: an entry kept by one is reported, not used.
//
// Pure but for reading the files; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "outpost/util/status.h"

namespace outpost::router {

struct RegistryCredentials {
  std::string username;
  std::string password;
  std::string file;  // where they were found
};

// The default files, in order, from the environment (absent variables are
// skipped; files need not exist).
std::vector<std::string> DefaultRegistryAuthFiles();

// The credentials for `registry` (host[:port]) in the first of `files` that
// has an entry for it; nullopt when none has (a missing file is skipped).
// Errors: InvalidArgument naming the file for one that is not JSON or an
// entry that does not decode; Unauthenticated naming the helper for an
// entry kept by a credential helper or holding only an identity token.
StatusOr<std::optional<RegistryCredentials>> FindRegistryCredentials(
    const std::string& registry, const std::vector<std::string>& files);

}  // namespace outpost::router
