// Model signatures (models/model_signature.h): a bundle the reference
// OpenSSF model-signing tool wrote verifies; Outpost's own Ed25519 envelopes
// round-trip; every way a signature can be wrong is refused with a message
// naming it; the policies decide as documented.
#include "outpost/models/model_signature.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "mocks/test_keys.h"

namespace outpost::models {
namespace {

const std::string kData = std::string(OUTPOST_TEST_DATA) + "/signatures/";
const std::string kTinyDigest =
    "sha256:17a81a1df53a4d24709c86ed076b7453e4f55843cc0b2f2e3de6febcb1cad8f6";
const std::string kOtherDigest = "sha256:" + std::string(64, 'e');

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fresh Ed25519 key pair as PEM files in a temporary directory.
class Keys : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("outpost_sig_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    for (const char* who : {"a", "b"}) {
      ASSERT_TRUE(outpost::testing::WriteEd25519KeyPair(dir_.string(), who));
    }
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  std::vector<TrustedKey> Trust(const std::vector<std::string>& names) {
    std::vector<std::string> paths;
    for (const auto& n : names) paths.push_back(n.find('/') == std::string::npos ? Path(n) : n);
    auto keys = LoadTrustedKeys(paths);
    EXPECT_TRUE(keys.ok()) << keys.status().message();
    return keys.ok() ? *keys : std::vector<TrustedKey>{};
  }
  std::filesystem::path dir_;
};

TEST_F(Keys, TheReferenceToolsBundleVerifies) {
  const auto keys = Trust({kData + "oms-p256.pub"});
  auto c = VerifyModelSignature(Read(kData + "oms-p256.sig"), kTinyDigest, keys);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->format, "model-signing");
  EXPECT_EQ(c->name, "tiny.gguf");
  EXPECT_EQ(c->key_id, keys[0].id);
  EXPECT_EQ(c->key_id.size(), 16u);
  // The same bundle says nothing about other bytes, nor for another key.
  auto other = VerifyModelSignature(Read(kData + "oms-p256.sig"), kOtherDigest, keys);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("for other bytes"), std::string::npos);
  auto untrusted =
      VerifyModelSignature(Read(kData + "oms-p256.sig"), kTinyDigest, Trust({"a.pub"}));
  ASSERT_FALSE(untrusted.ok());
  EXPECT_NE(untrusted.status().message().find("no trusted key"), std::string::npos);
  EXPECT_EQ(untrusted.status().code(), StatusCode::kPermissionDenied);
}

TEST_F(Keys, OutpostsOwnEnvelopeRoundTrips) {
  auto env = SignModel(Path("a.key"), "model.gguf", kTinyDigest);
  ASSERT_TRUE(env.ok()) << env.status().message();
  auto c = VerifyModelSignature(*env, kTinyDigest, Trust({"b.pub", "a.pub"}));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->format, "dsse");
  EXPECT_EQ(c->name, "model.gguf");
  EXPECT_EQ(c->key_id, Trust({"a.pub"})[0].id);
  EXPECT_FALSE(VerifyModelSignature(*env, kTinyDigest, Trust({"b.pub"})).ok());
  EXPECT_FALSE(VerifyModelSignature(*env, kOtherDigest, Trust({"a.pub"})).ok());
  // Signing takes only an Ed25519 private key.
  EXPECT_FALSE(SignModel(Path("a.pub"), "m", kTinyDigest).ok());
  EXPECT_FALSE(SignModel(Path("missing.key"), "m", kTinyDigest).ok());
}

TEST_F(Keys, TamperedEnvelopesNameWhatIsWrong) {
  const std::string good = *SignModel(Path("a.key"), "model.gguf", kTinyDigest);
  const auto keys = Trust({"a.pub"});
  auto mutate = [&](const std::function<void(nlohmann::json&)>& f) {
    nlohmann::json j = nlohmann::json::parse(good);
    f(j);
    return j.dump();
  };
  // The payload re-encoded to name other bytes: the signature no longer holds.
  const std::string swapped = mutate([](nlohmann::json& j) {
    std::string p = j["payload"];
    p[10] = p[10] == 'A' ? 'B' : 'A';
    j["payload"] = p;
  });
  const struct {
    std::string text;
    const char* says;
  } rows[] = {
      {"", "not JSON"},
      {"[]", "not JSON"},
      {R"({"mediaType":"application/x-other","dsseEnvelope":{}})", "not a Sigstore bundle"},
      {mutate([](nlohmann::json& j) { j.erase("payload"); }), "needs payload"},
      {mutate([](nlohmann::json& j) { j["signatures"] = nlohmann::json::array(); }),
       "needs payload"},
      {mutate([](nlohmann::json& j) { j["payloadType"] = "text/plain"; }), "payloadType"},
      {mutate([](nlohmann::json& j) { j["payload"] = "not base64!"; }), "not base64"},
      {mutate([](nlohmann::json& j) { j["signatures"][0]["sig"] = "AAAA"; }), "no trusted key"},
      {swapped, "no trusted key"},
      // Copied whole before it is read, a deep enough document overflowed the stack.
      {R"({"payload":"x","signatures":)" + std::string(200000, '[') + std::string(200000, ']') +
           "}",
       "more than 128 levels deep"},
  };
  for (const auto& row : rows) {
    auto c = VerifyModelSignature(row.text, kTinyDigest, keys);
    ASSERT_FALSE(c.ok()) << row.text;
    EXPECT_NE(c.status().message().find(row.says), std::string::npos)
        << row.text << ": " << c.status().message();
    EXPECT_EQ(c.status().param(), "signature");
  }
  auto none = VerifyModelSignature(good, kTinyDigest, {});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no trusted keys are configured"), std::string::npos);
}

TEST_F(Keys, TrustedKeysMustBePublicAndUsable) {
  std::ofstream(Path("junk.pem")) << "-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----\n";
  const struct {
    std::string path;
    const char* says;
  } rows[] = {
      {Path("a.key"), "is a private key"},
      {Path("junk.pem"), "not a PEM public key"},
      {Path("missing.pub"), "cannot be read"},
  };
  for (const auto& row : rows) {
    auto k = LoadTrustedKeys({row.path});
    ASSERT_FALSE(k.ok()) << row.path;
    EXPECT_NE(k.status().message().find(row.says), std::string::npos) << k.status().message();
    EXPECT_EQ(k.status().param(), "trusted_keys");
  }
}

TEST_F(Keys, PoliciesDecideAsDocumented) {
  const std::string good = *SignModel(Path("a.key"), "model.gguf", kTinyDigest);
  const std::string bad = *SignModel(Path("b.key"), "model.gguf", kTinyDigest);
  const auto keys = Trust({"a.pub"});
  const struct {
    SignaturePolicy policy;
    std::string signature;
    bool ok;
    const char* note;
  } rows[] = {
      {SignaturePolicy::kOff, "", true, "not checked"},
      {SignaturePolicy::kOff, bad, true, "not checked"},
      {SignaturePolicy::kWarn, "", true, "unsigned (policy warn)"},
      {SignaturePolicy::kWarn, bad, true, "bad: signature: no trusted key"},
      {SignaturePolicy::kWarn, good, true, "verified: dsse, key "},
      {SignaturePolicy::kEnforce, "", false, "unsigned (policy enforce)"},
      {SignaturePolicy::kEnforce, bad, false, "bad: "},
      {SignaturePolicy::kEnforce, good, true, "verified: dsse"},
  };
  for (const auto& row : rows) {
    std::string note;
    Status st = ApplySignaturePolicy(row.policy, row.signature, {kTinyDigest}, keys, &note);
    EXPECT_EQ(st.ok(), row.ok) << SignaturePolicyName(row.policy) << " " << note;
    EXPECT_NE(note.find(row.note), std::string::npos) << note;
    if (!st.ok()) {
      EXPECT_EQ(st.code(), StatusCode::kPermissionDenied);
    }
  }
}

TEST_F(Keys, ASplitModelsSignatureMustVouchForEveryShard) {
  const std::string third = "sha256:" + std::string(64, 'c');
  const std::string both = *SignModel(Path("a.key"), {{"model-00001-of-00002.gguf", kTinyDigest},
                                                      {"model-00002-of-00002.gguf", kOtherDigest}});
  const auto keys = Trust({"a.pub"});
  std::string note;
  EXPECT_TRUE(ApplySignaturePolicy(SignaturePolicy::kEnforce, both, {kTinyDigest, kOtherDigest},
                                   keys, &note)
                  .ok())
      << note;
  EXPECT_EQ(note.rfind("verified: dsse", 0), 0u) << note;
  Status st =
      ApplySignaturePolicy(SignaturePolicy::kEnforce, both, {kTinyDigest, third}, keys, &note);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("shard 2 of 2"), std::string::npos) << st.message();
  // A one-file signature does not cover a model split in two.
  const std::string one = *SignModel(Path("a.key"), "model.gguf", kTinyDigest);
  EXPECT_FALSE(
      ApplySignaturePolicy(SignaturePolicy::kEnforce, one, {kTinyDigest, kOtherDigest}, keys, &note)
          .ok());
  EXPECT_FALSE(SignModel(Path("a.key"), {{"x.gguf", "sha256:nothex"}}).ok());
}

TEST(SignaturePolicies, OneForAllOrLongestPrefix) {
  auto p = ParseSignaturePolicies("enforce");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->For("oci://anything/x:1"), SignaturePolicy::kEnforce);
  p = ParseSignaturePolicies("oci://registry.corp/=enforce,oci://registry.corp/lab/=warn,*=off");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->For("oci://registry.corp/models/a:1"), SignaturePolicy::kEnforce);
  EXPECT_EQ(p->For("oci://registry.corp/lab/a:1"), SignaturePolicy::kWarn);
  EXPECT_EQ(p->For("https://elsewhere/a.gguf"), SignaturePolicy::kOff);
  p = ParseSignaturePolicies("https://models.corp/=enforce");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->For("/var/lib/m.gguf"), SignaturePolicy::kWarn);  // the default rest
  for (const char* bad : {"strict", "", "=enforce", "oci://x/=maybe", "oci://x/=enforce,,"}) {
    auto b = ParseSignaturePolicies(bad);
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_EQ(b.status().param(), "signature_policy") << bad;
  }
}

}  // namespace
}  // namespace outpost::models
