// ModelStore::Export and ModelStore::ImportArchive: a version as one
// OCI-layout tar (model_store.h), for sites without a network.
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "outpost/models/model_store.h"
#include "outpost/models/oci_artifact.h"
#include "outpost/models/store_layout.h"
#include "outpost/models/tar_file.h"
#include "outpost/util/json_text.h"
#include "outpost/util/sha256.h"
#include "outpost/util/status_macros.h"

namespace outpost::models {

namespace fs = std::filesystem;
using layout::IsHex64;
using layout::kArtifactType;
using layout::kManifestType;
using layout::kRefAnnotation;
using nlohmann::json;

namespace {}  // namespace

Status ModelStore::Export(const std::string& ref, const std::string& tar_path,
                          const Progress& progress) {
  ModelVersion v;
  OUTPOST_ASSIGN_OR_RETURN(v, Get(ref));
  if (v.manifest_digest.empty() || v.state == "failed") {
    return Status::InvalidArgument(ref + " is " + v.state + "; only a verified version exports");
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::ifstream in(BlobPath(v.manifest_digest), std::ios::binary);
  const std::string manifest_text((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
  const json manifest = json::parse(manifest_text, nullptr, false);
  if (!manifest.is_object()) return Status::Internal("the manifest of " + ref + " is unreadable");
  const std::string tmp = tar_path + ".partial";
  auto created = TarWriter::Create(tmp);
  if (!created.ok()) return created.status();
  TarWriter tar = std::move(created).value();
  json index = {{"schemaVersion", 2},
                {"mediaType", "application/vnd.oci.image.index.v1+json"},
                {"manifests", json::array({{{"mediaType", kManifestType},
                                            {"artifactType", kArtifactType},
                                            {"digest", v.manifest_digest},
                                            {"size", manifest_text.size()},
                                            {"annotations", {{kRefAnnotation, ref}}}}})}};
  // The kept signature goes along as an OCI 1.1 referrer of the manifest
  // (its `subject`), as registries carry signatures.
  std::string signature, referrer;
  if (!v.signature_blob.empty()) {
    std::ifstream sin(BlobPath(v.signature_blob), std::ios::binary);
    signature.assign(std::istreambuf_iterator<char>(sin), std::istreambuf_iterator<char>());
    const std::string type = signature.find("\"dsseEnvelope\"") != std::string::npos
                                 ? layout::kSigstoreBundleType
                                 : layout::kDsseEnvelopeType;
    referrer = json{{"schemaVersion", 2},
                    {"mediaType", kManifestType},
                    {"artifactType", type},
                    {"config",
                     {{"mediaType", layout::kEmptyType},
                      {"digest", util::Sha256Digest("{}")},
                      {"size", 2}}},
                    {"layers", json::array({{{"mediaType", type},
                                             {"digest", v.signature_blob},
                                             {"size", signature.size()}}})},
                    {"subject",
                     {{"mediaType", kManifestType},
                      {"digest", v.manifest_digest},
                      {"size", manifest_text.size()}}}}
                   .dump();
    index["manifests"].push_back({{"mediaType", kManifestType},
                                  {"artifactType", type},
                                  {"digest", util::Sha256Digest(referrer)},
                                  {"size", referrer.size()}});
  }
  auto blob_name = [](const std::string& d) { return "blobs/sha256/" + d.substr(7); };
  Status st = tar.AddBytes("oci-layout", R"({"imageLayoutVersion":"1.0.0"})");
  if (st.ok()) st = tar.AddBytes("index.json", index.dump());
  if (st.ok() && !referrer.empty()) {
    st = tar.AddBytes(blob_name(util::Sha256Digest(referrer)), referrer);
    if (st.ok()) st = tar.AddBytes(blob_name(util::Sha256Digest("{}")), "{}");
    if (st.ok()) st = tar.AddBytes(blob_name(v.signature_blob), signature);
  }
  if (st.ok()) st = tar.AddBytes(blob_name(v.manifest_digest), manifest_text);
  if (st.ok()) {
    const std::string config = manifest["config"].value("digest", "");
    std::ifstream cin(BlobPath(config), std::ios::binary);
    st = tar.AddBytes(blob_name(config), std::string((std::istreambuf_iterator<char>(cin)),
                                                     std::istreambuf_iterator<char>()));
  }
  uint64_t done = 0;
  for (const auto& layer : manifest["layers"]) {
    if (!st.ok()) break;
    const std::string d = layer.value("digest", "");
    st = tar.AddFile(blob_name(d), BlobPath(d), [&](uint64_t n) {
      done += n;
      if (progress && (done % (64u << 20) < n || done == v.size)) progress(done, v.size);
    });
  }
  if (st.ok()) st = tar.Finish();
  std::error_code ec;
  if (!st.ok()) {
    fs::remove(tmp, ec);
    return st;
  }
  fs::rename(tmp, tar_path, ec);
  if (ec) return Status::Internal("cannot rename " + tmp + " to " + tar_path);
  return Status::Ok();
}

StatusOr<ModelVersion> ModelStore::ImportArchive(const std::string& tar_path,
                                                 const std::string& ref_arg,
                                                 const Progress& progress) {
  std::error_code ec;
  const auto archive_size = fs::file_size(tar_path, ec);
  if (ec) return Status::NotFound("no archive at " + tar_path);
  OUTPOST_RETURN_IF_ERROR(CheckDisk(tar_path, archive_size));
  auto opened = TarReader::Open(tar_path);
  if (!opened.ok()) return opened.status();
  TarReader tar = std::move(opened).value();
  std::lock_guard<std::mutex> lock(mu_);
  // Every blob into a partial file, hashed against its name; small ones kept.
  std::map<std::string, std::string> partials;  // digest → partial path
  std::map<std::string, std::string> small;     // digest → bytes (manifests, configs)
  std::string index_text;
  auto cleanup = [&] {
    for (const auto& [d, p] : partials) fs::remove(p, ec);
  };
  uint64_t done = 0;
  for (;;) {
    std::string name;
    uint64_t size = 0;
    auto more = tar.Next(&name, &size);
    if (!more.ok()) {
      cleanup();
      return more.status();
    }
    if (!*more) break;
    if (name == "index.json") {
      Status st = tar.Read([&](const char* d, size_t n) {
        index_text.append(d, n);
        return index_text.size() > (1u << 20) ? Status::InvalidArgument("index.json too large")
                                              : Status::Ok();
      });
      if (!st.ok()) {
        cleanup();
        return st;
      }
      continue;
    }
    const std::string prefix = "blobs/sha256/";
    if (name.rfind(prefix, 0) != 0 || !IsHex64(name.substr(prefix.size()))) {
      continue;  // oci-layout, anything else
    }
    const std::string digest = "sha256:" + name.substr(prefix.size());
    const std::string partial = PartialPath();
    std::ofstream out(partial, std::ios::binary);
    util::Sha256Stream hash;
    std::string keep;
    Status st = tar.Read([&](const char* d, size_t n) {
      hash.Update(d, n);
      out.write(d, static_cast<std::streamsize>(n));
      if (size <= (1u << 20)) keep.append(d, n);
      done += n;
      if (progress && done % (64u << 20) < n) progress(done, archive_size);
      return out ? Status::Ok() : Status::ResourceExhausted("writing " + partial + " (disk full?)");
    });
    const std::string got = "sha256:" + hash.Finish();
    out.flush();
    out.close();
    partials[digest] = partial;
    if (!st.ok()) {
      cleanup();
      return st;
    }
    if (got != digest) {
      cleanup();
      return Status::InvalidArgument("archive " + tar_path + ": blob " + name +
                                         " does not match its digest (it is " + got + ")",
                                     "archive");
    }
    if (!keep.empty()) small[digest] = keep;
  }
  if (progress) progress(archive_size, archive_size);
  // Which manifest, and its one GGUF layer.
  if (Status st =
          util::CheckJsonDepth(index_text, "archive " + tar_path + "'s index.json", "archive");
      !st.ok()) {
    cleanup();
    return st;
  }
  const json index = json::parse(index_text, nullptr, false);
  if (!index.is_object() || !index.contains("manifests") || !index["manifests"].is_array()) {
    cleanup();
    return Status::InvalidArgument("archive " + tar_path + " has no OCI index.json", "archive");
  }
  std::vector<std::pair<std::string, std::string>> named;  // ref → manifest digest
  std::vector<std::string> referrers;                      // signature manifests' digests
  for (const auto& e : index["manifests"]) {
    if (!e.is_object()) continue;
    if (e.contains("artifactType") && e["artifactType"].is_string() &&
        layout::IsSignatureType(e["artifactType"].get<std::string>())) {
      referrers.push_back(e.value("digest", ""));
      continue;
    }
    std::string r;
    if (e.contains("annotations") && e["annotations"].is_object()) {
      r = e["annotations"].value(kRefAnnotation, "");
    }
    named.emplace_back(r, e.value("digest", ""));
  }
  std::string ref = ref_arg, manifest_digest;
  if (ref.empty()) {
    if (named.size() != 1 || named[0].first.find(':') == std::string::npos) {
      cleanup();
      return Status::InvalidArgument("archive " + tar_path + " holds " +
                                         std::to_string(named.size()) +
                                         " manifest(s): name the version (NAME:VERSION)",
                                     "ref");
    }
    ref = named[0].first;
    manifest_digest = named[0].second;
  } else {
    for (const auto& [r, d] : named) {
      if (r == ref || named.size() == 1) manifest_digest = d;
    }
  }
  std::string name, version;
  if (Status st = ParseModelRef(ref, &name, &version); !st.ok()) {
    cleanup();
    return st;
  }
  if (manifest_digest.empty()) {
    cleanup();
    return Status::InvalidArgument("archive " + tar_path + " has no version named " + ref, "ref");
  }
  const std::string manifest_text = small.count(manifest_digest) != 0 ? small[manifest_digest] : "";
  const json manifest = json::parse(manifest_text, nullptr, false);
  std::string config_digest;
  if (manifest.is_object() && manifest.contains("config") && manifest["config"].is_object()) {
    config_digest = manifest["config"].value("digest", "");
  }
  auto artifact = ReadModelManifest(manifest_text);
  if (!artifact.ok()) {
    cleanup();
    return Status::InvalidArgument(
        "archive " + tar_path + ": the manifest of " + ref + ": " + artifact.status().message(),
        "archive");
  }
  std::vector<std::string> files;
  std::set<std::string> needed = {manifest_digest, config_digest};
  uint64_t size = 0;
  for (const WeightLayer& l : artifact->layers) {
    files.push_back(l.digest);
    needed.insert(l.digest);
    size += partials.count(l.digest) != 0 ? fs::file_size(partials[l.digest], ec) : 0;
  }
  bool complete = partials.count(config_digest) != 0;
  for (const WeightLayer& l : artifact->layers)
    complete = complete && partials.count(l.digest) != 0;
  if (!complete) {
    cleanup();
    return Status::InvalidArgument(
        "archive " + tar_path + ": the manifest of " + ref +
            " needs its GGUF layer(s) and its config, present in the archive",
        "archive");
  }
  if (Status st = Begin(name, version, tar_path, size); !st.ok()) {
    cleanup();
    return st;
  }
  // Publish the blobs the manifest names; drop the rest.
  for (const auto& [d, p] : partials) {
    if (needed.count(d) == 0) {
      fs::remove(p, ec);
      continue;
    }
    const int fd = open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      fsync(fd);
      close(fd);
    }
    if (Status st = Commit(p, d); !st.ok()) {
      SetState(name, version, "failed", st.message());
      return st;
    }
  }
  // A signature the archive carries for this manifest is kept with the
  // version (the importer applies its policy to it).
  std::string signature;
  for (const auto& d : referrers) {
    const json r = json::parse(small.count(d) != 0 ? small[d] : "", nullptr, false);
    if (!r.is_object() || !r.contains("subject") || !r["subject"].is_object() ||
        r["subject"].value("digest", "") != manifest_digest || !r.contains("layers") ||
        !r["layers"].is_array() || r["layers"].empty() || !r["layers"][0].is_object()) {
      continue;
    }
    const std::string layer = r["layers"][0].value("digest", "");
    if (small.count(layer) != 0) signature = small[layer];
  }
  ModelVersion v;
  OUTPOST_ASSIGN_OR_RETURN(v, Finish(name, version, files, size, manifest_digest));
  if (!signature.empty()) {
    std::string digest;
    OUTPOST_ASSIGN_OR_RETURN(digest, PutBlob(signature));
    OUTPOST_RETURN_IF_ERROR(SetText(
        v, "UPDATE versions SET signature_blob = ? WHERE name = ? AND version = ?", digest));
    v.signature_blob = digest;
  }
  return v;
}

}  // namespace outpost::models
