#include "outpost/router/registry_auth_file.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "outpost/util/base64.h"

namespace outpost::router {
namespace {

using nlohmann::json;

// "https://host:5000/v1/" → "host:5000"; Docker Hub's names → "docker.io".
std::string RegistryOfKey(std::string key) {
  for (const char* scheme : {"https://", "http://"}) {
    if (key.rfind(scheme, 0) == 0) key = key.substr(std::string(scheme).size());
  }
  if (const size_t slash = key.find('/'); slash != std::string::npos) key.resize(slash);
  if (key == "index.docker.io" || key == "registry-1.docker.io") return "docker.io";
  return key;
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

}  // namespace

std::vector<std::string> DefaultRegistryAuthFiles() {
  std::vector<std::string> files;
  if (const std::string f = Env("REGISTRY_AUTH_FILE"); !f.empty()) files.push_back(f);
  if (const std::string d = Env("XDG_RUNTIME_DIR"); !d.empty()) {
    files.push_back(d + "/containers/auth.json");
  }
  if (const std::string d = Env("DOCKER_CONFIG"); !d.empty()) {
    files.push_back(d + "/config.json");
  } else if (const std::string home = Env("HOME"); !home.empty()) {
    files.push_back(home + "/.docker/config.json");
  }
  return files;
}

StatusOr<std::optional<RegistryCredentials>> FindRegistryCredentials(
    const std::string& registry, const std::vector<std::string>& files) {
  const std::string want = RegistryOfKey(registry);
  for (const std::string& file : files) {
    std::ifstream in(file);
    if (!in) continue;
    std::stringstream text;
    text << in.rdbuf();
    const json doc = json::parse(text.str(), nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) {
      return Status::InvalidArgument("registry auth file " + file + " is not a JSON object");
    }
    // A helper named for this registry keeps its credentials.
    if (doc.contains("credHelpers") && doc["credHelpers"].is_object()) {
      for (const auto& [key, helper] : doc["credHelpers"].items()) {
        if (RegistryOfKey(key) == want && helper.is_string()) {
          return Status(
              StatusCode::kUnauthenticated,
              "the credentials for " + registry +
                  " are kept by the credential helper "
                  "docker-credential-" +
                  helper.get<std::string>() + " (" + file +
                  "), which Outpost does not run: give --username and $OUTPOST_REGISTRY_PASSWORD");
        }
      }
    }
    if (!doc.contains("auths") || !doc["auths"].is_object()) continue;
    for (const auto& [key, entry] : doc["auths"].items()) {
      if (RegistryOfKey(key) != want) continue;
      const std::string where = "registry auth file " + file + ", entry '" + key + "'";
      if (!entry.is_object()) return Status::InvalidArgument(where + " is not an object");
      RegistryCredentials c;
      c.file = file;
      if (entry.contains("auth") && entry["auth"].is_string() &&
          !entry["auth"].get<std::string>().empty()) {
        std::string decoded;
        const size_t colon = util::Base64Decode(entry["auth"].get<std::string>(), &decoded)
                                 ? decoded.find(':')
                                 : std::string::npos;
        if (colon == std::string::npos || colon == 0) {
          return Status::InvalidArgument(where + ": 'auth' is not base64 of user:password");
        }
        c.username = decoded.substr(0, colon);
        c.password = decoded.substr(colon + 1);
        return std::optional<RegistryCredentials>(std::move(c));
      }
      if (entry.contains("username") && entry["username"].is_string() &&
          entry.contains("password") && entry["password"].is_string()) {
        c.username = entry["username"].get<std::string>();
        c.password = entry["password"].get<std::string>();
        return std::optional<RegistryCredentials>(std::move(c));
      }
      if (entry.contains("identitytoken")) {
        return Status(
            StatusCode::kUnauthenticated,
            where +
                " holds an identity token (an OAuth refresh token), which Outpost does not "
                "use: give --username and $OUTPOST_REGISTRY_PASSWORD");
      }
      if (doc.contains("credsStore") && doc["credsStore"].is_string()) {
        return Status(
            StatusCode::kUnauthenticated,
            "the credentials for " + registry +
                " are kept by the credential helper "
                "docker-credential-" +
                doc["credsStore"].get<std::string>() + " (" + file +
                "), which Outpost does not run: give --username and $OUTPOST_REGISTRY_PASSWORD");
      }
      return Status::InvalidArgument(where + " has neither 'auth' nor username and password");
    }
  }
  return std::optional<RegistryCredentials>();
}

}  // namespace outpost::router
