#include "outpost/models/oci_artifact.h"

#include <nlohmann/json.hpp>

#include "outpost/models/store_layout.h"
#include "outpost/util/json_text.h"
#include "outpost/util/status_macros.h"

namespace outpost::models {
namespace {

using nlohmann::json;

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// host, host:port, [v6]:port; letters, digits, '.', '-'.
bool IsRegistryHost(const std::string& h) {
  if (h.empty() || h.size() > 255) return false;
  for (char c : h) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '-' || c == ':' || c == '[' || c == ']';
    if (!ok) return false;
  }
  return true;
}

// desc[key] when desc is an object and that member a string, else `fallback`:
// a manifest from a registry may hold any JSON where a string belongs.
std::string Str(const json& desc, const char* key, const char* fallback = "") {
  if (!desc.is_object()) return fallback;
  const auto it = desc.find(key);
  return it != desc.end() && it->is_string() ? it->get<std::string>() : fallback;
}

std::string Annotation(const json& desc, const char* key) {
  if (!desc.contains("annotations") || !desc["annotations"].is_object()) return "";
  const auto& a = desc["annotations"];
  return a.contains(key) && a[key].is_string() ? a[key].get<std::string>() : "";
}

WeightLayer LayerOf(const json& l) {
  WeightLayer w;
  w.digest = Str(l, "digest", "");
  w.size = l.contains("size") && l["size"].is_number_unsigned() ? l["size"].get<uint64_t>() : 0;
  w.title = Annotation(l, "org.opencontainers.image.title");
  if (w.title.empty()) w.title = Annotation(l, "org.cncf.model.filepath");
  return w;
}

}  // namespace

std::string OciReference::ToString() const {
  std::string s = "oci://" + registry + "/" + repository;
  if (!tag.empty()) s += ":" + tag;
  if (!digest.empty()) s += "@" + digest;
  return s;
}

StatusOr<OciReference> ParseOciReference(const std::string& text) {
  const std::string scheme = "oci://";
  if (text.rfind(scheme, 0) != 0) {
    return Status::InvalidArgument("an OCI reference starts with oci://, got '" + text + "'",
                                   "source");
  }
  std::string rest = text.substr(scheme.size());
  OciReference r;
  const size_t slash = rest.find('/');
  if (slash == std::string::npos || slash == 0) {
    return Status::InvalidArgument(
        "'" + text + "' needs a registry and a repository: oci://HOST[:PORT]/REPO[:TAG]", "source");
  }
  r.registry = rest.substr(0, slash);
  if (!IsRegistryHost(r.registry)) {
    return Status::InvalidArgument("'" + r.registry + "' is not a registry host[:port]", "source");
  }
  rest = rest.substr(slash + 1);
  if (const size_t at = rest.find('@'); at != std::string::npos) {
    r.digest = rest.substr(at + 1);
    rest = rest.substr(0, at);
    if (r.digest.rfind("sha256:", 0) != 0 || !layout::IsHex64(r.digest.substr(7))) {
      return Status::InvalidArgument(
          "the digest in '" + text + "' must be sha256: and 64 lowercase hex digits", "source");
    }
  }
  // A ':' after the last '/' separates the tag (a ':' before it is a port).
  const size_t last_slash = rest.rfind('/');
  const size_t colon = rest.rfind(':');
  if (colon != std::string::npos && (last_slash == std::string::npos || colon > last_slash)) {
    r.tag = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
    if (!layout::IsTag(r.tag)) {
      return Status::InvalidArgument(
          "the tag '" + r.tag + "' must be [A-Za-z0-9_][A-Za-z0-9._-]{0,127}", "source");
    }
  } else if (r.digest.empty()) {
    r.tag = "latest";
  }
  r.repository = rest;
  if (!layout::IsRepositoryName(r.repository)) {
    return Status::InvalidArgument("the repository '" + r.repository +
                                       "' must be lowercase [a-z0-9] parts joined by '.', '_', "
                                       "'-' or '/'",
                                   "source");
  }
  return r;
}

bool IsIndexMediaType(const std::string& media_type) {
  return media_type == "application/vnd.oci.image.index.v1+json" ||
         media_type == "application/vnd.docker.distribution.manifest.list.v2+json";
}

StatusOr<ModelArtifact> ReadModelManifest(const std::string& manifest_json) {
  OUTPOST_RETURN_IF_ERROR(util::CheckJsonDepth(manifest_json, "the manifest", "manifest"));
  const json m = json::parse(manifest_json, nullptr, false);
  if (!m.is_object())
    return Status::InvalidArgument("the manifest is not a JSON object", "manifest");
  if (IsIndexMediaType(Str(m, "mediaType", ""))) {
    return Status::InvalidArgument("the manifest is an index, not a model's manifest", "manifest");
  }
  if (!m.contains("layers") || !m["layers"].is_array() || m["layers"].empty()) {
    return Status::InvalidArgument("the manifest has no layers", "manifest");
  }
  std::string config_type;
  if (m.contains("config") && m["config"].is_object()) {
    config_type = Str(m["config"], "mediaType", "");
  }
  const std::string artifact_type = Str(m, "artifactType", "");
  std::vector<WeightLayer> modelpack, dmr, oras, ollama;
  std::string packed;  // a tar-packed weight's media type
  for (const auto& l : m["layers"]) {
    if (!l.is_object()) continue;
    const std::string type = Str(l, "mediaType", "");
    const std::string digest = Str(l, "digest", "");
    if (digest.rfind("sha256:", 0) != 0 || !layout::IsHex64(digest.substr(7))) {
      return Status::InvalidArgument("a layer's digest '" + digest + "' is not sha256:<64 hex>",
                                     "manifest");
    }
    const WeightLayer w = LayerOf(l);
    if (type == layout::kWeightType || type == "application/vnd.cncf.model.weight.v1.gguf") {
      modelpack.push_back(w);
    } else if (type == "application/vnd.docker.ai.gguf.v3") {
      dmr.push_back(w);
    } else if (type == "application/vnd.ollama.image.model") {
      ollama.push_back(w);
    } else if (type.rfind("application/vnd.cncf.model.weight.v1.tar", 0) == 0 ||
               type.rfind("application/vnd.kitops.modelkit.model", 0) == 0) {
      packed = type;
    } else if (EndsWith(w.title, ".gguf") && type.find("mmproj") == std::string::npos &&
               type.find("lora") == std::string::npos) {
      oras.push_back(w);
    }
  }
  ModelArtifact a;
  if (!modelpack.empty()) {
    a.shape = "modelpack";
    a.layers = modelpack;
  } else if (!dmr.empty()) {
    a.shape = "docker-model-runner";
    a.layers = dmr;
  } else if (!oras.empty()) {
    a.shape = "oras";
    a.layers = oras;
  } else if (!ollama.empty()) {
    a.shape = "ollama";
    a.layers = ollama;
  } else if (!packed.empty()) {
    return Status::InvalidArgument("the weights are packed in a tar layer (" + packed +
                                       "); Outpost reads raw GGUF layers (ModelPack "
                                       "….weight.v1.raw, Docker Model Runner gguf.v3, or a "
                                       "file titled *.gguf)",
                                   "manifest");
  } else {
    return Status::InvalidArgument(
        "no layer of the manifest holds a GGUF file (artifactType '" + artifact_type +
            "', config '" + config_type +
            "'): expected a ModelPack weight.v1.raw, a Docker Model Runner gguf.v3 layer or a "
            "layer titled *.gguf",
        "manifest");
  }
  return a;
}

StatusOr<std::string> PickFromIndex(const std::string& index_json) {
  OUTPOST_RETURN_IF_ERROR(util::CheckJsonDepth(index_json, "the index", "manifest"));
  const json idx = json::parse(index_json, nullptr, false);
  if (!idx.is_object() || !idx.contains("manifests") || !idx["manifests"].is_array() ||
      idx["manifests"].empty()) {
    return Status::InvalidArgument("the index lists no manifests", "manifest");
  }
  const auto& list = idx["manifests"];
  if (list.size() == 1) return Str(list[0], "digest", "");
  std::string listing;
  for (const auto& e : list) {
    if (Str(e, "artifactType", "") == layout::kArtifactType) return Str(e, "digest", "");
  }
  for (const auto& e : list) {
    if (!e.contains("platform")) return Str(e, "digest", "");
    const auto& p = e["platform"];
    listing += std::string(listing.empty() ? "" : ", ") + Str(e, "digest", "").substr(0, 19) +
               " (" + Str(p, "os", "?") + "/" + Str(p, "architecture", "?") + ")";
  }
  return Status::InvalidArgument(
      "the index lists " + std::to_string(list.size()) +
          " platform images and no model: name the model's manifest by digest (" + listing + ")",
      "manifest");
}

}  // namespace outpost::models
