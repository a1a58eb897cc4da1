#include "outpost/router/model_source.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>

#include "outpost/models/oci_artifact.h"
#include "outpost/router/registry_auth_file.h"
#include "outpost/util/status_macros.h"

namespace outpost::router {
namespace {

constexpr size_t kMaxSignatureBytes = 1 << 20;

StatusOr<std::string> ReadSmallFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::InvalidArgument("cannot read the signature " + path, "signature");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.size() > kMaxSignatureBytes) {
    return Status::InvalidArgument("the signature " + path + " is over 1 MiB", "signature");
  }
  return text;
}

// <url>.sig over http(s); "" when the server has none (404).
StatusOr<std::string> FetchBeside(const std::string& url, const BlobSourceOptions& options) {
  HttpBlobSource http(options);
  std::string body;
  Status st = http.Get(
      url, 0, "", [](const models::BlobSource::Head&) { return true; },
      [&](const char* data, size_t n) {
        body.append(data, n);
        return body.size() <= kMaxSignatureBytes;
      });
  if (!st.ok()) {
    if (st.message().find("HTTP 404") != std::string::npos) return std::string();
    return st;
  }
  return body;
}

// A signature looked for but not fetched (the link, the registry): under
// enforce that refuses the model; otherwise the pull goes on, and the note
// says why nothing was checked.
Status Fetched(const PullRequest& r, StatusOr<std::string> fetched, std::string* signature,
               std::string* fetch_error) {
  if (fetched.ok()) {
    *signature = std::move(*fetched);
    return Status::Ok();
  }
  if (r.signature_policy == models::SignaturePolicy::kEnforce) {
    return Status(StatusCode::kPermissionDenied,
                  "signature: could not be fetched (" + fetched.status().message() + ")",
                  "signature");
  }
  *fetch_error = fetched.status().message();
  return Status::Ok();
}

// Applies the policy; notes the result in *note and the log.
Status Check(const PullRequest& r, const std::string& signature,
             const std::vector<std::string>& digests, const std::string& fetch_error,
             std::string* note) {
  Status st =
      models::ApplySignaturePolicy(r.signature_policy, signature, digests, r.trusted_keys, note);
  if (st.ok() && !fetch_error.empty()) {
    *note = "not checked: the signature could not be fetched (" + fetch_error + ")";
  }
  if (!st.ok()) {
    spdlog::error("pull {}: signature refused: {}", r.ref, st.message());
  } else if (note->rfind("verified", 0) == 0) {
    spdlog::info("pull {}: signature {}", r.ref, *note);
  } else if (r.signature_policy != models::SignaturePolicy::kOff) {
    spdlog::warn("pull {}: signature {}", r.ref, *note);
  }
  return st;
}

// Records what the check found and keeps the signature itself (for export
// and for the check at activation).
StatusOr<models::ModelVersion> Signed(models::ModelStore* store, StatusOr<models::ModelVersion> v,
                                      const std::string& note, const std::string& signature) {
  if (!v.ok()) return v;
  OUTPOST_RETURN_IF_ERROR(store->MarkSigned(v->ref(), note));
  v->signature = note;
  if (!signature.empty()) {
    OUTPOST_RETURN_IF_ERROR(store->KeepSignature(v->ref(), signature));
    auto kept = store->Get(v->ref());
    if (kept.ok()) v->signature_blob = kept->signature_blob;
  }
  return v;
}

}  // namespace

StatusOr<models::ModelVersion> PullModel(models::ModelStore* store, const PullRequest& request,
                                         const models::ModelStore::Progress& progress) {
  const std::string& src = request.source;
  std::string name, version;  // the ref first: nothing is fetched for a bad one
  OUTPOST_RETURN_IF_ERROR(models::ParseModelRef(request.ref, &name, &version));
  if (src.rfind("oci://", 0) == 0) {
    models::OciReference ref;
    OUTPOST_ASSIGN_OR_RETURN(ref, models::ParseOciReference(src));
    RegistryOptions options = request.registry;
    options.manifest_attempts = request.pull.max_attempts;  // --attempts counts for manifests too
    if (options.username.empty() && !request.registry_auth_files.empty()) {
      // As docker, podman, skopeo and oras do: credentials their login saved.
      auto found = FindRegistryCredentials(ref.registry, request.registry_auth_files);
      if (!found.ok()) {
        spdlog::warn("pull {}: {}; pulling anonymously", request.ref, found.status().message());
      } else if (found->has_value()) {
        spdlog::info("pull {}: user '{}' for {} from {}", request.ref, (*found)->username,
                     ref.registry, (*found)->file);
        options.username = (*found)->username;
        options.password = (*found)->password;
      }
    }
    RegistryClient registry(ref, options);
    RegistryClient::Manifest manifest;
    OUTPOST_ASSIGN_OR_RETURN(manifest, registry.FetchManifest());
    auto artifact = models::ReadModelManifest(manifest.body);
    if (!artifact.ok()) {
      return Status::InvalidArgument(
          src + " (" + manifest.digest + "): " + artifact.status().message(), "source");
    }
    const models::WeightLayer& layer = artifact->layers[0];
    std::vector<std::string> digests;
    std::vector<models::ModelStore::Layer> layers;
    for (const models::WeightLayer& l : artifact->layers) {
      digests.push_back(l.digest);
      layers.push_back({registry.BlobUrl(l.digest), l.digest, l.size});
    }
    if (!request.sha256.empty()) {
      const std::string want =
          request.sha256.rfind("sha256:", 0) == 0 ? request.sha256 : "sha256:" + request.sha256;
      if (layers.size() > 1) {
        return Status::InvalidArgument(
            "--sha256 pins one file, and " + src + " is a model in " +
                std::to_string(layers.size()) +
                " shards; pin the artifact by its manifest digest instead (oci://…@sha256:…)",
            "sha256");
      }
      if (want != layer.digest) {
        return Status::InvalidArgument("the pinned sha256 " + want + " is not the digest of " +
                                           src + "'s GGUF layer (" + layer.digest + ")",
                                       "sha256");
      }
    }
    std::string signature, note, fetch_error;
    if (!request.signature_path.empty()) {
      OUTPOST_ASSIGN_OR_RETURN(signature, ReadSmallFile(request.signature_path));
    } else if (request.signature_policy != models::SignaturePolicy::kOff) {
      OUTPOST_RETURN_IF_ERROR(
          Fetched(request, registry.FetchSignature(manifest.digest), &signature, &fetch_error));
    }
    OUTPOST_RETURN_IF_ERROR(Check(request, signature, digests, fetch_error, &note));
    models::OciReference pinned = ref;
    pinned.tag.clear();
    pinned.digest = manifest.digest;
    models::ModelStore::PullOptions po = request.pull;
    po.source = pinned.ToString();
    if (layers.size() > 1) {
      spdlog::info("pull {}: {} is a {} model in {} shards, first {} ({} bytes{}{})", request.ref,
                   src, artifact->shape, layers.size(), layer.digest, layer.size,
                   layer.title.empty() ? "" : ", ", layer.title);
    } else {
      spdlog::info("pull {}: {} is a {} model, layer {} ({} bytes{}{})", request.ref, src,
                   artifact->shape, layer.digest, layer.size, layer.title.empty() ? "" : ", ",
                   layer.title);
    }
    return Signed(store, store->PullLayers(layers, request.ref, &registry, po, progress), note,
                  signature);
  }
  if (src.rfind("https://", 0) == 0 || src.rfind("http://", 0) == 0) {
    HttpBlobSource http(request.registry.http);
    const std::string want =
        request.sha256.rfind("sha256:", 0) == 0 ? request.sha256 : "sha256:" + request.sha256;
    if (want.size() != 71 || want.find_first_not_of("0123456789abcdef", 7) != std::string::npos) {
      // Pull refuses it, naming the field.
      return store->Pull(src, request.ref, request.sha256, &http, request.pull, progress);
    }
    std::string signature, note, fetch_error;
    if (!request.signature_path.empty()) {
      OUTPOST_ASSIGN_OR_RETURN(signature, ReadSmallFile(request.signature_path));
    } else if (request.signature_policy != models::SignaturePolicy::kOff) {
      OUTPOST_RETURN_IF_ERROR(Fetched(request, FetchBeside(src + ".sig", request.registry.http),
                                      &signature, &fetch_error));
    }
    OUTPOST_RETURN_IF_ERROR(Check(request, signature, {want}, fetch_error, &note));
    return Signed(store,
                  store->Pull(src, request.ref, request.sha256, &http, request.pull, progress),
                  note, signature);
  }
  if (src.find("://") != std::string::npos && src.rfind("file://", 0) != 0) {
    return Status::InvalidArgument(
        "the source '" + src + "' must be a path, file://, an http:// or https:// URL, or oci://",
        "source");
  }
  const std::string path = src.rfind("file://", 0) == 0 ? src.substr(7) : src;
  std::string signature;
  if (!request.signature_path.empty()) {
    OUTPOST_ASSIGN_OR_RETURN(signature, ReadSmallFile(request.signature_path));
  } else if (request.signature_policy != models::SignaturePolicy::kOff) {
    const std::string dir = std::filesystem::path(path).parent_path().string();
    for (const std::string& beside : {path + ".sig", (dir.empty() ? "." : dir) + "/model.sig"}) {
      std::error_code ec;
      if (std::filesystem::exists(beside, ec)) {
        OUTPOST_ASSIGN_OR_RETURN(signature, ReadSmallFile(beside));
        break;
      }
    }
  }
  models::ModelVersion v;
  OUTPOST_ASSIGN_OR_RETURN(v, store->Import(path, request.ref, request.sha256, progress));
  std::string note;
  if (Status st = Check(request, signature, v.files(), "", &note); !st.ok()) {
    store->MarkFailed(v.ref(), st.message());  // copied, but never to be served
    return st;
  }
  return Signed(store, v, note, signature);
}

}  // namespace outpost::router
