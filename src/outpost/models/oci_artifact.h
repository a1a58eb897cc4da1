// OCI artifacts that carry a GGUF model: a registry reference
// ("oci://host[:port]/repository[:tag|@sha256:hex]") and which layers of a
// manifest hold the weights, for the shapes people publish GGUF in:
//
//   CNCF ModelPack   artifactType application/vnd.cncf.model.manifest.v1+json,
//                    weights application/vnd.cncf.model.weight.v1.raw
//                    (DMR's extension ….weight.v1.gguf too)
//   Docker Model     config application/vnd.docker.ai.model.config.*,
//   Runner           layers application/vnd.docker.ai.gguf.v3 (several =
//                    shards, in manifest order)
//   ORAS generic     any layer titled "*.gguf" (org.opencontainers.image.title)
//   Ollama           application/vnd.ollama.image.model (best effort)
//
// In that order of preference. Weights packed in a tar (ModelPack ….tar*,
// KitOps) are refused by name: their layer digest is not the file's sha256.
// Pure functions: no I/O, so the registry client (router/) and the archive
// import share them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "outpost/util/status.h"

namespace outpost::models {

struct OciReference {
  std::string registry;    // host[:port]
  std::string repository;  // e.g. "models/qwen"
  std::string tag;         // "" when pinned by digest only
  std::string digest;      // "sha256:<hex>" or ""
  // What the distribution API's manifests endpoint takes: the digest when
  // pinned, else the tag.
  std::string reference() const { return digest.empty() ? tag : digest; }
  // "oci://host/repo:tag", "oci://host/repo@sha256:…" (both when both).
  std::string ToString() const;
};

// Parses "oci://host[:port]/repo[:tag][@sha256:hex]"; the tag defaults to
// "latest". Errors: InvalidArgument naming the part and the rule.
StatusOr<OciReference> ParseOciReference(const std::string& text);

struct WeightLayer {
  std::string digest;  // "sha256:<hex>" = the file's sha256 (raw layers)
  uint64_t size = 0;
  std::string title;  // the file name the manifest gives, or ""
};

struct ModelArtifact {
  std::string shape;                // "modelpack", "docker-model-runner", "oras", "ollama"
  std::vector<WeightLayer> layers;  // the GGUF file, or its shards in order
};

// The manifest's weight layers. Errors: InvalidArgument naming what the
// manifest lacks (not JSON, no layers, only tar-packed weights, no GGUF).
StatusOr<ModelArtifact> ReadModelManifest(const std::string& manifest_json);

// True for an image index / Docker manifest list media type.
bool IsIndexMediaType(const std::string& media_type);

// Which manifest of an index carries the model: the only one, else the one
// whose artifactType is ModelPack's, else the first without a platform (a
// model is not an image for an OS). Errors: InvalidArgument listing the
// entries when none or several qualify.
StatusOr<std::string> PickFromIndex(const std::string& index_json);

}  // namespace outpost::models
