// The OCI reference grammar and the manifest shapes a GGUF is published in
// (models/oci_artifact.h): every shape picks its weight layer, and every bad
// reference or manifest is refused with a message naming what is wrong.
#include "outpost/models/oci_artifact.h"

#include <gtest/gtest.h>

#include <string>

namespace outpost::models {
namespace {

const std::string kA = "sha256:" + std::string(64, 'a');
const std::string kB = "sha256:" + std::string(64, 'b');
const std::string kC = "sha256:" + std::string(64, 'c');

std::string Layer(const std::string& type, const std::string& digest,
                  const std::string& title = "") {
  std::string l = R"({"mediaType":")" + type + R"(","digest":")" + digest + R"(","size":42)";
  if (!title.empty()) l += R"(,"annotations":{"org.opencontainers.image.title":")" + title + "\"}";
  return l + "}";
}

std::string Manifest(const std::string& config_type, const std::string& layers,
                     const std::string& artifact_type = "") {
  std::string m = R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",)";
  if (!artifact_type.empty()) m += R"("artifactType":")" + artifact_type + "\",";
  return m + R"("config":{"mediaType":")" + config_type + R"(","digest":")" + kC +
         R"(","size":2},"layers":[)" + layers + "]}";
}

TEST(OciReference, ParsesTagsDigestsAndPorts) {
  auto r = ParseOciReference("oci://registry.example.com:5000/team/models/qwen:1.5b-q4");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->registry, "registry.example.com:5000");
  EXPECT_EQ(r->repository, "team/models/qwen");
  EXPECT_EQ(r->tag, "1.5b-q4");
  EXPECT_EQ(r->reference(), "1.5b-q4");
  r = ParseOciReference("oci://localhost/smollm2");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tag, "latest");
  r = ParseOciReference("oci://127.0.0.1:5000/ai/smollm2@" + kA);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tag, "");
  EXPECT_EQ(r->reference(), kA);
  EXPECT_EQ(r->ToString(), "oci://127.0.0.1:5000/ai/smollm2@" + kA);
  r = ParseOciReference("oci://h/ai/smollm2:v2@" + kA);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tag, "v2");
  EXPECT_EQ(r->reference(), kA);  // the digest wins
}

TEST(OciReference, BadReferencesNameTheProblem) {
  const struct {
    const char* text;
    const char* says;
  } rows[] = {
      {"https://h/repo:tag", "starts with oci://"},
      {"oci://", "registry and a repository"},
      {"oci://host", "registry and a repository"},
      {"oci:///repo", "registry and a repository"},
      {"oci://ho st/repo", "not a registry host"},
      {"oci://h/Repo", "repository 'Repo'"},
      {"oci://h/repo//x", "repository"},
      {"oci://h/repo:", "tag ''"},
      {"oci://h/repo:-bad", "tag '-bad'"},
      {"oci://h/repo@sha256:abc", "64 lowercase hex"},
      {"oci://h/repo@md5:0123", "must be sha256:"},
  };
  for (const auto& row : rows) {
    auto r = ParseOciReference(row.text);
    ASSERT_FALSE(r.ok()) << row.text;
    EXPECT_NE(r.status().message().find(row.says), std::string::npos)
        << row.text << ": " << r.status().message();
    EXPECT_EQ(r.status().param(), "source") << row.text;
  }
}

TEST(ModelManifest, EveryPublishedShapeFindsItsGguf) {
  // ModelPack: the raw weight, not the docs beside it.
  auto a = ReadModelManifest(
      Manifest("application/vnd.cncf.model.config.v1+json",
               Layer("application/vnd.cncf.model.doc.v1.raw", kB, "README.md") + "," +
                   Layer("application/vnd.cncf.model.weight.v1.raw", kA, "model.gguf"),
               "application/vnd.cncf.model.manifest.v1+json"));
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->shape, "modelpack");
  ASSERT_EQ(a->layers.size(), 1u);
  EXPECT_EQ(a->layers[0].digest, kA);
  EXPECT_EQ(a->layers[0].size, 42u);
  // Docker Model Runner: shards in manifest order; the license and the
  // projector are not weights.
  a = ReadModelManifest(Manifest("application/vnd.docker.ai.model.config.v0.1+json",
                                 Layer("application/vnd.docker.ai.license", kC) + "," +
                                     Layer("application/vnd.docker.ai.gguf.v3", kB) + "," +
                                     Layer("application/vnd.docker.ai.mmproj", kC) + "," +
                                     Layer("application/vnd.docker.ai.gguf.v3", kA)));
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->shape, "docker-model-runner");
  ASSERT_EQ(a->layers.size(), 2u);
  EXPECT_EQ(a->layers[0].digest, kB);
  EXPECT_EQ(a->layers[1].digest, kA);
  // ORAS: whatever type, the layer titled *.gguf.
  a = ReadModelManifest(
      Manifest("application/vnd.oci.empty.v1+json",
               Layer("application/vnd.oci.image.layer.v1.tar", kB, "notes.txt") + "," +
                   Layer("application/vnd.oci.image.layer.v1.tar", kA, "m.gguf")));
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->shape, "oras");
  EXPECT_EQ(a->layers[0].digest, kA);
  EXPECT_EQ(a->layers[0].title, "m.gguf");
  // Ollama's layout.
  a = ReadModelManifest(Manifest("application/vnd.docker.container.image.v1+json",
                                 Layer("application/vnd.ollama.image.template", kB) + "," +
                                     Layer("application/vnd.ollama.image.model", kA)));
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->shape, "ollama");
  EXPECT_EQ(a->layers[0].digest, kA);
  // Preference: a ModelPack weight over a *.gguf title in the same manifest.
  a = ReadModelManifest(Manifest("x", Layer("application/octet-stream", kB, "other.gguf") + "," +
                                          Layer("application/vnd.cncf.model.weight.v1.raw", kA)));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->layers[0].digest, kA);
}

TEST(ModelManifest, BadManifestsNameTheProblem) {
  const struct {
    std::string text;
    const char* says;
  } rows[] = {
      {"not json", "not a JSON object"},
      {"[1,2]", "not a JSON object"},
      {R"({"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]})", "an index"},
      {R"({"schemaVersion":2,"layers":[]})", "no layers"},
      {R"({"schemaVersion":2})", "no layers"},
      {Manifest("x", Layer("application/vnd.cncf.model.weight.v1.tar", kA)), "packed in a tar"},
      {Manifest("x", Layer("application/vnd.kitops.modelkit.model.v1.tar+gzip", kA)),
       "packed in a tar"},
      {Manifest("application/vnd.oci.image.config.v1+json",
                Layer("application/vnd.oci.image.layer.v1.tar+gzip", kA)),
       "no layer of the manifest holds a GGUF"},
      {Manifest("x", Layer("application/vnd.docker.ai.gguf.v3", "sha256:1234")),
       "not sha256:<64 hex>"},
      {Manifest("x", Layer("application/vnd.docker.ai.gguf.v3", "md5:" + std::string(64, 'a'))),
       "not sha256:<64 hex>"},
      {R"({"layers":)" + std::string(200000, '[') + std::string(200000, ']') + "}",
       "the manifest nests arrays and objects more than 128 levels deep"},
  };
  for (const auto& row : rows) {
    auto a = ReadModelManifest(row.text);
    ASSERT_FALSE(a.ok()) << row.text;
    EXPECT_NE(a.status().message().find(row.says), std::string::npos)
        << row.text << ": " << a.status().message();
  }
}

TEST(ModelIndex, PicksTheModelNotAPlatformImage) {
  auto d = PickFromIndex(R"({"manifests":[{"digest":")" + kA + R"("}]})");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, kA);
  d = PickFromIndex(R"({"manifests":[{"digest":")" + kB +
                    R"(","mediaType":"application/vnd.docker.distribution.manifest.v2+json"},)" +
                    R"({"digest":")" + kA +
                    R"(","artifactType":"application/vnd.cncf.model.manifest.v1+json"}]})");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, kA);
  d = PickFromIndex(R"({"manifests":[{"digest":")" + kB +
                    R"(","platform":{"os":"linux","architecture":"amd64"}},{"digest":")" + kA +
                    R"("}]})");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, kA);
  d = PickFromIndex(R"({"manifests":[{"digest":")" + kB +
                    R"(","platform":{"os":"linux","architecture":"amd64"}},{"digest":")" + kA +
                    R"(","platform":{"os":"linux","architecture":"arm64"}}]})");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(PickFromIndex(R"({"manifests":)" + std::string(200000, '[') + "}").status().message(),
            "the index nests arrays and objects more than 128 levels deep");
  EXPECT_NE(d.status().message().find("linux/arm64"), std::string::npos) << d.status().message();
  EXPECT_FALSE(PickFromIndex(R"({"manifests":[]})").ok());
  EXPECT_FALSE(PickFromIndex("nope").ok());
  EXPECT_TRUE(IsIndexMediaType("application/vnd.oci.image.index.v1+json"));
  EXPECT_TRUE(IsIndexMediaType("application/vnd.docker.distribution.manifest.list.v2+json"));
  EXPECT_FALSE(IsIndexMediaType("application/vnd.oci.image.manifest.v1+json"));
}

}  // namespace
}  // namespace outpost::models
