#include "outpost/router/registry_client.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "outpost/util/base64.h"
#include "outpost/util/sha256.h"
#include "outpost/util/status_macros.h"

namespace outpost::router {
namespace {

using nlohmann::json;

constexpr const char* kAccept =
    "application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json, "
    "application/vnd.docker.distribution.manifest.v2+json, "
    "application/vnd.docker.distribution.manifest.list.v2+json";
constexpr size_t kMaxManifestBytes = 4 << 20;

std::string UrlEncode(const std::string& s) {
  static const char* d = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == ':' || c == '/') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += d[c >> 4];
      out += d[c & 15];
    }
  }
  return out;
}

// `Bearer realm="https://auth/token",service="reg",scope="repository:x:pull"`
// → scheme "bearer" and its parameters.
std::string ParseChallenge(const std::string& header, std::map<std::string, std::string>* params) {
  size_t i = header.find(' ');
  std::string scheme = header.substr(0, i);
  for (auto& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  while (i != std::string::npos && i < header.size()) {
    while (i < header.size() && (header[i] == ' ' || header[i] == ',')) ++i;
    const size_t eq = header.find('=', i);
    if (eq == std::string::npos) break;
    const std::string key = header.substr(i, eq - i);
    std::string value;
    size_t j = eq + 1;
    if (j < header.size() && header[j] == '"') {
      const size_t close = header.find('"', j + 1);
      if (close == std::string::npos) break;
      value = header.substr(j + 1, close - j - 1);
      i = close + 1;
    } else {
      const size_t comma = header.find(',', j);
      value = header.substr(j, comma == std::string::npos ? std::string::npos : comma - j);
      i = comma;
    }
    (*params)[key] = value;
  }
  return scheme;
}

bool IsLoopback(const std::string& host_port) {
  const std::string host =
      host_port.substr(0, host_port.rfind(':') == std::string::npos || host_port.back() == ']'
                              ? std::string::npos
                              : host_port.rfind(':'));
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "[::1]";
}

void Configure(httplib::Client* cli, const BlobSourceOptions& o) {
  cli->set_connection_timeout(std::chrono::milliseconds(o.connect_timeout_ms));
  cli->set_read_timeout(std::chrono::milliseconds(o.stall_timeout_ms));
  cli->set_keep_alive(false);
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
  if (!o.ca_file.empty()) cli->set_ca_cert_path(o.ca_file);
#endif
}

}  // namespace

RegistryClient::RegistryClient(models::OciReference ref, RegistryOptions options)
    : ref_(std::move(ref)), options_(std::move(options)), plain_http_(options_.plain_http) {}

std::string RegistryClient::Base() const {
  std::lock_guard<std::mutex> lock(mu_);
  return (plain_http_ ? "http://" : "https://") + ref_.registry;
}

std::string RegistryClient::BlobUrl(const std::string& digest) const {
  return Base() + "/v2/" + ref_.repository + "/blobs/" + digest;
}

StatusOr<RegistryClient::Answer> RegistryClient::GetOnce(const std::string& path,
                                                         const std::string& accept) {
  for (int attempt = 0;; ++attempt) {
    const std::string base = Base();
    httplib::Client cli(base);
    Configure(&cli, options_.http);
    httplib::Headers headers{{"Accept", accept}};
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!authorization_.empty()) headers.emplace("Authorization", authorization_);
    }
    Answer a;
    bool too_big = false;
    auto res = cli.Get(
        path, headers,
        [&](const httplib::Response& r) {
          a.status = r.status;
          a.content_type = r.get_header_value("Content-Type");
          a.digest = r.get_header_value("Docker-Content-Digest");
          a.challenge = r.get_header_value("WWW-Authenticate");
          a.retry_after = r.get_header_value("Retry-After");
          return true;
        },
        [&](const char* data, size_t n) {
          if (a.body.size() + n > kMaxManifestBytes) {
            too_big = true;
            return false;
          }
          a.body.append(data, n);
          return true;
        });
    if (too_big) {
      return Status::InvalidArgument("GET " + base + path + ": the answer is over " +
                                         std::to_string(kMaxManifestBytes) +
                                         " bytes, too big for a manifest",
                                     "source");
    }
    if (!res) {
      bool retry_plain = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        // Only a handshake that failed (the server speaks plain HTTP), not a
        // certificate that did not verify: that is an answer to report.
        if (attempt == 0 && !plain_http_ && IsLoopback(ref_.registry) &&
            res.error() == httplib::Error::SSLConnection) {
          plain_http_ = true;  // a loopback registry without TLS, as Docker allows
          retry_plain = true;
        }
      }
      if (retry_plain) continue;
      if (res.error() == httplib::Error::SSLServerVerification) {
        return Status::InvalidArgument("GET " + base + path +
                                           ": the registry's TLS certificate did not verify "
                                           "(its CA goes in --ca-file)",
                                       "source");
      }
      if (res.error() == httplib::Error::Connection) {
        return Status::Unavailable("GET " + base + path +
                                   ": could not connect (nothing listening there, or no route)");
      }
      return Status::Unavailable("GET " + base + path + ": " + httplib::to_string(res.error()));
    }
    return a;
  }
}

Status RegistryClient::Authorize(const std::string& challenge) {
  std::map<std::string, std::string> p;
  const std::string scheme = ParseChallenge(challenge, &p);
  if (scheme == "basic") {
    if (options_.username.empty()) {
      return Status(StatusCode::kUnauthenticated,
                    "registry " + ref_.registry +
                        " asks for a user and password (--username and "
                        "$OUTPOST_REGISTRY_PASSWORD)",
                    "source");
    }
    std::lock_guard<std::mutex> lock(mu_);
    authorization_ = "Basic " + util::Base64Encode(options_.username + ":" + options_.password);
    challenge_ = challenge;
    return Status::Ok();
  }
  if (scheme != "bearer" || p["realm"].empty()) {
    return Status(StatusCode::kUnauthenticated,
                  "registry " + ref_.registry +
                      " asks for an authentication Outpost does not "
                      "speak: '" +
                      challenge + "'",
                  "source");
  }
  const std::string realm = p["realm"];
  const size_t scheme_end = realm.find("://");
  const size_t path_start =
      scheme_end == std::string::npos ? std::string::npos : realm.find('/', scheme_end + 3);
  if (scheme_end == std::string::npos) {
    return Status::InvalidArgument(
        "registry " + ref_.registry + " names a token realm '" + realm + "' that is not a URL",
        "source");
  }
  const std::string scope =
      p.count("scope") != 0 ? p["scope"] : "repository:" + ref_.repository + ":pull";
  std::string query = "?scope=" + UrlEncode(scope);
  if (p.count("service") != 0) query += "&service=" + UrlEncode(p["service"]);
  httplib::Client cli(realm.substr(0, path_start));
  Configure(&cli, options_.http);
  httplib::Headers headers;
  if (!options_.username.empty()) {
    headers.emplace("Authorization",
                    "Basic " + util::Base64Encode(options_.username + ":" + options_.password));
  }
  const std::string path = path_start == std::string::npos ? "/" : realm.substr(path_start);
  auto res = cli.Get(path + query, headers);
  if (!res) {
    return Status::Unavailable("token from " + realm + ": " + httplib::to_string(res.error()));
  }
  if (res->status == 401 || res->status == 403) {
    return Status(StatusCode::kUnauthenticated,
                  "the token service " + realm + " refused " +
                      (options_.username.empty() ? std::string("an anonymous pull")
                                                 : "user '" + options_.username + "'") +
                      " (HTTP " + std::to_string(res->status) + ")",
                  "source");
  }
  const json body = json::parse(res->body, nullptr, false);
  std::string token;
  if (body.is_object()) {
    token = body.value("token", "");
    if (token.empty()) token = body.value("access_token", "");
  }
  if (res->status != 200 || token.empty()) {
    return Status::InvalidArgument("the token service " + realm + " answered HTTP " +
                                       std::to_string(res->status) + " without a token",
                                   "source");
  }
  std::lock_guard<std::mutex> lock(mu_);
  authorization_ = "Bearer " + token;
  challenge_ = challenge;
  return Status::Ok();
}

StatusOr<RegistryClient::Answer> RegistryClient::GetWithAuth(const std::string& path,
                                                             const std::string& accept) {
  Answer a;
  OUTPOST_ASSIGN_OR_RETURN(a, GetOnce(path, accept));
  if (a.status != 401 || a.challenge.empty()) return a;
  OUTPOST_RETURN_IF_ERROR(Authorize(a.challenge));
  OUTPOST_ASSIGN_OR_RETURN(a, GetOnce(path, accept));
  if (a.status == 401 || a.status == 403) {
    return Status(StatusCode::kUnauthenticated,
                  "registry " + ref_.registry + " refused " +
                      (options_.username.empty() ? std::string("an anonymous pull")
                                                 : "user '" + options_.username + "'") +
                      " of " + ref_.repository + " (HTTP " + std::to_string(a.status) + ")",
                  "source");
  }
  return a;
}

StatusOr<RegistryClient::Manifest> RegistryClient::FetchManifestAt(const std::string& reference) {
  int64_t backoff_ms = std::max<int64_t>(1, options_.retry_initial_ms);
  const int attempts = std::max(1, options_.manifest_attempts);
  for (int attempt = 1;; ++attempt) {
    int64_t retry_after_ms = -1;
    auto m = FetchManifestOnce(reference, &retry_after_ms);
    if (m.ok() || m.status().code() != StatusCode::kUnavailable) return m;
    if (attempt >= attempts) {
      return Status::Unavailable(m.status().message() + " (" + std::to_string(attempt) +
                                 " attempt" + (attempt == 1 ? "" : "s") + ")");
    }
    const int64_t wait =
        retry_after_ms >= 0 ? std::min<int64_t>(retry_after_ms, 60'000) : backoff_ms;
    spdlog::warn("{}; trying again in {} ms (attempt {} of {})", m.status().message(), wait,
                 attempt + 1, attempts);
    std::this_thread::sleep_for(std::chrono::milliseconds(wait));
    backoff_ms = std::min<int64_t>(backoff_ms * 2, 30'000);
  }
}

StatusOr<RegistryClient::Manifest> RegistryClient::FetchManifestOnce(const std::string& reference,
                                                                     int64_t* retry_after_ms) {
  const std::string path = "/v2/" + ref_.repository + "/manifests/" + reference;
  Answer a;
  OUTPOST_ASSIGN_OR_RETURN(a, GetWithAuth(path, kAccept));
  const std::string where = "oci://" + ref_.registry + "/" + ref_.repository +
                            (reference.rfind("sha256:", 0) == 0 ? "@" : ":") + reference;
  if (a.status == 404) {
    return Status::NotFound(where + ": no such manifest (is the repository or tag right?)",
                            "source");
  }
  if (a.status == 401 || a.status == 403) {
    return Status(StatusCode::kUnauthenticated,
                  where + ": the registry refused (HTTP " + std::to_string(a.status) + ")",
                  "source");
  }
  if (a.status == 429 || a.status >= 500) {
    // Retry-After in seconds (an HTTP date is left to the backoff).
    if (!a.retry_after.empty() &&
        a.retry_after.find_first_not_of("0123456789") == std::string::npos &&
        a.retry_after.size() < 7) {
      *retry_after_ms = std::stoll(a.retry_after) * 1000;
    }
    return Status::Unavailable(where + ": the registry answered HTTP " + std::to_string(a.status));
  }
  if (a.status != 200) {
    return Status::InvalidArgument(
        where + ": the registry answered HTTP " + std::to_string(a.status), "source");
  }
  Manifest m;
  m.body = std::move(a.body);
  m.digest = util::Sha256Digest(m.body);
  if (reference.rfind("sha256:", 0) == 0 && m.digest != reference) {
    return Status::InvalidArgument(where + ": the manifest the registry sent hashes to " + m.digest,
                                   "source");
  }
  const json j = json::parse(m.body, nullptr, false);
  m.media_type = j.is_object() ? j.value("mediaType", "") : "";
  if (m.media_type.empty()) m.media_type = a.content_type.substr(0, a.content_type.find(';'));
  return m;
}

StatusOr<RegistryClient::Manifest> RegistryClient::FetchManifest() {
  Manifest m;
  OUTPOST_ASSIGN_OR_RETURN(m, FetchManifestAt(ref_.reference()));
  if (!models::IsIndexMediaType(m.media_type)) return m;
  std::string child;
  OUTPOST_ASSIGN_OR_RETURN(child, models::PickFromIndex(m.body));
  if (child.rfind("sha256:", 0) != 0) {
    return Status::InvalidArgument("the index names a manifest without a sha256 digest", "source");
  }
  OUTPOST_ASSIGN_OR_RETURN(m, FetchManifestAt(child));
  if (models::IsIndexMediaType(m.media_type)) {
    return Status::InvalidArgument("the index points at another index; name the model's manifest",
                                   "source");
  }
  return m;
}

StatusOr<std::string> RegistryClient::FetchSignature(const std::string& digest) {
  constexpr const char* kBundle = "application/vnd.dev.sigstore.bundle";
  auto tag = FetchManifestAt("sha256-" + digest.substr(digest.find(':') + 1));
  if (!tag.ok()) {
    if (tag.status().code() == StatusCode::kNotFound) return std::string();
    return tag.status();
  }
  // An index of referrers: the first that is a bundle.
  json m = json::parse(tag->body, nullptr, false);
  if (models::IsIndexMediaType(tag->media_type) && m.is_object() && m.contains("manifests")) {
    std::string child;
    for (const auto& e : m["manifests"]) {
      if (e.value("artifactType", "").rfind(kBundle, 0) == 0) child = e.value("digest", "");
    }
    if (child.empty()) return std::string();
    Manifest c;
    OUTPOST_ASSIGN_OR_RETURN(c, FetchManifestAt(child));
    m = json::parse(c.body, nullptr, false);
  }
  if (!m.is_object() || m.value("artifactType", "").rfind(kBundle, 0) != 0 ||
      !m.contains("layers") || !m["layers"].is_array() || m["layers"].empty()) {
    return std::string();
  }
  const std::string layer = m["layers"][0].value("digest", "");
  std::string body;
  OUTPOST_RETURN_IF_ERROR(Get(
      BlobUrl(layer), 0, "", [](const Head&) { return true; },
      [&](const char* data, size_t n) {
        body.append(data, n);
        return body.size() <= kMaxManifestBytes;
      }));
  if (body.size() > kMaxManifestBytes) {
    return Status::InvalidArgument("the signature blob " + layer + " is too big", "signature");
  }
  if (util::Sha256Digest(body) != layer) {
    return Status::InvalidArgument("the signature blob does not match its digest " + layer,
                                   "signature");
  }
  return body;
}

Status RegistryClient::Get(const std::string& url, uint64_t offset, const std::string& validator,
                           const std::function<bool(const Head&)>& on_head,
                           const std::function<bool(const char* data, size_t n)>& on_data) {
  for (int attempt = 0;; ++attempt) {
    BlobSourceOptions o = options_.http;
    o.bearer_token.clear();
    std::string challenge;
    {
      std::lock_guard<std::mutex> lock(mu_);
      o.authorization = authorization_;
      challenge = challenge_;
    }
    HttpBlobSource http(o);
    Status st = http.Get(url, offset, validator, on_head, on_data);
    if (st.code() != StatusCode::kUnauthenticated || attempt > 0 || challenge.empty()) return st;
    // A token that expired during a long download: ask for a fresh one.
    OUTPOST_RETURN_IF_ERROR(Authorize(challenge));
  }
}

}  // namespace outpost::router
