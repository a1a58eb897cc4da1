#include "outpost/router/model_source.h"

#include <spdlog/spdlog.h>

#include "outpost/models/oci_artifact.h"
#include "outpost/util/status_macros.h"

namespace outpost::router {

StatusOr<models::ModelVersion> PullModel(models::ModelStore* store, const PullRequest& request,
                                         const models::ModelStore::Progress& progress) {
  const std::string& src = request.source;
  if (src.rfind("oci://", 0) == 0) {
    models::OciReference ref;
    OUTPOST_ASSIGN_OR_RETURN(ref, models::ParseOciReference(src));
    RegistryClient registry(ref, request.registry);
    RegistryClient::Manifest manifest;
    OUTPOST_ASSIGN_OR_RETURN(manifest, registry.FetchManifest());
    auto artifact = models::ReadModelManifest(manifest.body);
    if (!artifact.ok()) {
      return Status::InvalidArgument(
          src + " (" + manifest.digest + "): " + artifact.status().message(), "source");
    }
    if (artifact->layers.size() > 1) {
      return Status::InvalidArgument(
          src + " is a " + artifact->shape + " model in " +
              std::to_string(artifact->layers.size()) +
              " GGUF shards; the store keeps one file per version (merge them with llama.cpp's "
              "gguf-split --merge and publish that)",
          "source");
    }
    const models::WeightLayer& layer = artifact->layers[0];
    if (!request.sha256.empty()) {
      const std::string want =
          request.sha256.rfind("sha256:", 0) == 0 ? request.sha256 : "sha256:" + request.sha256;
      if (want != layer.digest) {
        return Status::InvalidArgument("the pinned sha256 " + want + " is not the digest of " +
                                           src + "'s GGUF layer (" + layer.digest + ")",
                                       "sha256");
      }
    }
    models::OciReference pinned = ref;
    pinned.tag.clear();
    pinned.digest = manifest.digest;
    models::ModelStore::PullOptions po = request.pull;
    po.source = pinned.ToString();
    spdlog::info("pull {}: {} is a {} model, layer {} ({} bytes{}{})", request.ref, src,
                 artifact->shape, layer.digest, layer.size, layer.title.empty() ? "" : ", ",
                 layer.title);
    return store->Pull(registry.BlobUrl(layer.digest), request.ref, layer.digest, &registry, po,
                       progress);
  }
  if (src.rfind("https://", 0) == 0 || src.rfind("http://", 0) == 0) {
    HttpBlobSource http(request.registry.http);
    return store->Pull(src, request.ref, request.sha256, &http, request.pull, progress);
  }
  if (src.find("://") != std::string::npos && src.rfind("file://", 0) != 0) {
    return Status::InvalidArgument(
        "the source '" + src + "' must be a path, file://, http(s):// or oci://", "source");
  }
  const std::string path = src.rfind("file://", 0) == 0 ? src.substr(7) : src;
  return store->Import(path, request.ref, request.sha256, progress);
}

}  // namespace outpost::router
