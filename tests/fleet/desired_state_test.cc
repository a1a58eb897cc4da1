// The fleet's desired-state document (fleet/desired_state.h): a signed
// document round-trips through `sign` and verify; every way a document can
// be wrong is refused naming the entry and field; selectors pick per model
// name the first entry that matches the node.
#include "outpost/fleet/desired_state.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mocks/test_keys.h"

namespace outpost::fleet {
namespace {

const std::string kHex(64, 'a');

class SignedDocument : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("outpost_fleet_doc_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    for (const char* who : {"a", "b"}) {
      ASSERT_TRUE(outpost::testing::WriteEd25519KeyPair(dir_.string(), who));
    }
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  std::vector<models::TrustedKey> Trust(const std::string& name) {
    auto keys = models::LoadTrustedKeys({Path(name)});
    EXPECT_TRUE(keys.ok());
    return keys.ok() ? *keys : std::vector<models::TrustedKey>{};
  }
  std::string Sign(const std::string& who, const std::string& payload,
                   const std::string& type = kDesiredStateType) {
    auto env = models::SignDsse(Path(who + ".key"), type, payload);
    EXPECT_TRUE(env.ok()) << env.status().message();
    return env.ok() ? *env : "";
  }
  std::filesystem::path dir_;
};

nlohmann::json Entry() {
  return {{"name", "default"}, {"source", "https://models.corp/m.gguf"}, {"sha256", kHex}};
}

TEST_F(SignedDocument, ASignedDocumentVerifiesAndParses) {
  const nlohmann::json doc = {
      {"generation", 3},
      {"models",
       {{{"name", "default"},
         {"version", "v2"},
         {"source", "oci://reg.corp/models/m@sha256:" + std::string(64, 'b')},
         {"sites", {"plant-3"}},
         {"labels", {{"line", "a"}}},
         {"signature_policy", "enforce"},
         {"canary", {{"steps", {5, 25}}, {"bake", "2m"}, {"min_requests", 10}}}},
        Entry()}}};
  auto s = VerifyDesiredState(Sign("a", doc.dump()), Trust("a.pub"));
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->generation, 3);
  ASSERT_EQ(s->models.size(), 2u);
  EXPECT_EQ(s->models[0].Ref(), "default:v2");
  EXPECT_EQ(s->models[0].sha256, "");
  ASSERT_TRUE(s->models[0].canary.has_value());
  EXPECT_EQ(s->models[0].canary->steps, (std::vector<int32_t>{5, 25}));
  EXPECT_EQ(s->models[0].canary->bake_ms, 120000);
  EXPECT_EQ(s->models[0].canary->min_requests, 10);
  // Without a version, the pin names it.
  EXPECT_EQ(s->models[1].Ref(), "default:sha256-" + kHex.substr(0, 12));
  EXPECT_FALSE(s->models[1].canary.has_value());
  EXPECT_EQ(s->key_id, Trust("a.pub")[0].id);
}

TEST_F(SignedDocument, AnythingButATrustedSignatureIsRefused) {
  const std::string payload = nlohmann::json{{"generation", 1}, {"models", {Entry()}}}.dump();
  struct Case {
    std::string what, envelope, expect;
    StatusCode code;
  };
  std::string tampered = Sign("a", payload);
  const std::string b64 = nlohmann::json::parse(tampered)["payload"];
  auto j = nlohmann::json::parse(tampered);
  j["payload"] = b64.substr(0, b64.size() - 4) + "AAAA";
  const std::vector<Case> cases = {
      {"another key", Sign("b", payload), "no trusted key", StatusCode::kPermissionDenied},
      {"a model signature's type", Sign("a", payload, "application/vnd.in-toto+json"),
       "payloadType", StatusCode::kPermissionDenied},
      {"a tampered payload", j.dump(), "no trusted key", StatusCode::kPermissionDenied},
      {"the bare document", payload, "needs payload", StatusCode::kPermissionDenied},
      {"not JSON", "generation: 1", "not a JSON DSSE envelope", StatusCode::kInvalidArgument},
  };
  for (const auto& c : cases) {
    auto s = VerifyDesiredState(c.envelope, Trust("a.pub"));
    ASSERT_FALSE(s.ok()) << c.what;
    EXPECT_EQ(s.status().code(), c.code) << c.what << ": " << s.status().message();
    EXPECT_NE(s.status().message().find(c.expect), std::string::npos)
        << c.what << ": " << s.status().message();
  }
  EXPECT_FALSE(VerifyDesiredState(Sign("a", payload), {}).ok());  // no keys: nothing trusted
}

TEST(DesiredState, BadDocumentsAreRefusedNamingTheField) {
  struct Case {
    std::string what;
    nlohmann::json doc;
    std::string field;
  };
  auto with = [](const char* k, nlohmann::json v) {
    nlohmann::json e = Entry();
    e[k] = std::move(v);
    return nlohmann::json{{"generation", 1}, {"models", {e}}};
  };
  auto without = [](const char* k) {
    nlohmann::json e = Entry();
    e.erase(k);
    return nlohmann::json{{"generation", 1}, {"models", {e}}};
  };
  const std::vector<Case> cases = {
      {"no generation", {{"models", nlohmann::json::array()}}, "generation"},
      {"generation 0", {{"generation", 0}, {"models", nlohmann::json::array()}}, "generation"},
      {"generation text", {{"generation", "7"}, {"models", nlohmann::json::array()}}, "generation"},
      {"no models", {{"generation", 1}}, "models"},
      {"models an object", {{"generation", 1}, {"models", {{"a", 1}}}}, "models"},
      {"unknown top key", {{"generation", 1}, {"models", nlohmann::json::array()}, {"x", 1}}, "x"},
      {"entry not an object", {{"generation", 1}, {"models", {1}}}, "models[0]"},
      {"unknown entry key", with("model", "x"), "models[0].model"},
      {"no name", without("name"), "models[0].name"},
      {"no source", without("source"), "models[0].source"},
      {"name a number", with("name", 3), "models[0].name"},
      {"bad name", with("name", "Default!"), "models[0].name"},
      {"bad version", with("version", "-v"), "models[0].version"},
      {"ftp source", with("source", "ftp://x/m.gguf"), "models[0].source"},
      {"relative path", with("source", "models/m.gguf"), "models[0].source"},
      {"unpinned https", without("sha256"), "models[0].sha256"},
      {"short sha256", with("sha256", "abc"), "models[0].sha256"},
      {"upper-case sha256", with("sha256", std::string(64, 'A')), "models[0].sha256"},
      {"oci by tag, no sha256",
       [] {
         nlohmann::json e = Entry();
         e.erase("sha256");
         e["source"] = "oci://reg/m:latest";
         return nlohmann::json{{"generation", 1}, {"models", {e}}};
       }(),
       "models[0].sha256"},
      {"sites a string", with("sites", "plant-3"), "models[0].sites"},
      {"empty site", with("sites", {""}), "models[0].sites"},
      {"labels a list", with("labels", {"a"}), "models[0].labels"},
      {"label a number", with("labels", {{"line", 1}}), "models[0].labels.line"},
      {"bad policy", with("signature_policy", "strict"), "models[0].signature_policy"},
      {"canary a list", with("canary", {5, 25}), "models[0].canary"},
      {"canary unknown key", with("canary", {{"step", {5}}}), "models[0].canary.step"},
      {"canary steps empty", with("canary", {{"steps", nlohmann::json::array()}}),
       "models[0].canary.steps"},
      {"canary steps falling", with("canary", {{"steps", {25, 5}}}), "models[0].canary.steps"},
      {"canary step 100", with("canary", {{"steps", {5, 100}}}), "models[0].canary.steps"},
      {"canary bake", with("canary", {{"bake", "soon"}}), "models[0].canary.bake"},
      {"canary min_requests 0", with("canary", {{"min_requests", 0}}),
       "models[0].canary.min_requests"},
      {"canary ratio", with("canary", {{"max_ttft_ratio", 0.5}}),
       "models[0].canary.max_ttft_ratio"},
      {"canary shadow 200", with("canary", {{"shadow", 200}}), "models[0].canary.shadow"},
      {"canary decode ratio", with("canary", {{"min_decode_ratio", -0.5}}),
       "models[0].canary.min_decode_ratio"},
      {"canary shadow a string", with("canary", {{"shadow", "10%"}}), "models[0].canary.shadow"},
  };
  for (const auto& c : cases) {
    auto s = ParseDesiredState(c.doc.dump());
    ASSERT_FALSE(s.ok()) << c.what;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << c.what;
    EXPECT_EQ(s.status().param(), c.field) << c.what << ": " << s.status().message();
    EXPECT_NE(s.status().message().find(c.field), std::string::npos)
        << c.what << ": " << s.status().message();
  }
  EXPECT_FALSE(ParseDesiredState("{").ok());
  EXPECT_FALSE(ParseDesiredState("[]").ok());
  EXPECT_TRUE(ParseDesiredState(R"({"generation": 1, "models": []})").ok());
  const auto deep = ParseDesiredState(R"({"generation": 1, "models": )" + std::string(200000, '[') +
                                      std::string(200000, ']') + "}");
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().message().find("more than 128 levels deep"), std::string::npos);
  EXPECT_EQ(deep.status().param(), "payload");
}

TEST(DesiredState, TheFirstMatchingEntryPerNameWins) {
  nlohmann::json site = Entry(), line = Entry(), all = Entry(), other = Entry();
  site["version"] = "site";
  site["sites"] = {"plant-3"};
  line["version"] = "line";
  line["labels"] = {{"line", "a"}, {"tier", "gold"}};
  all["version"] = "all";
  other["name"] = "embedder";
  other["labels"] = {{"gpu", "yes"}};
  auto s = ParseDesiredState(
      nlohmann::json{{"generation", 1}, {"models", {site, line, all, other}}}.dump());
  ASSERT_TRUE(s.ok()) << s.status().message();
  auto pick = [&](NodeIdentity node) {
    std::string out;
    for (const auto& m : SelectFor(*s, node)) out += m.Ref() + " ";
    return out;
  };
  EXPECT_EQ(pick({"plant-3", {{"line", "a"}, {"tier", "gold"}}}), "default:site ");
  EXPECT_EQ(pick({"plant-4", {{"line", "a"}, {"tier", "gold"}}}), "default:line ");
  EXPECT_EQ(pick({"plant-4", {{"line", "a"}}}), "default:all ");  // every label must match
  EXPECT_EQ(pick({"plant-4", {{"gpu", "yes"}}}),
            "default:all embedder:sha256-" + kHex.substr(0, 12) + " ");
}

TEST(DesiredState, LabelsParse) {
  auto l = ParseLabels("line=a,tier=gold", "fleet_labels");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->at("line"), "a");
  EXPECT_EQ(l->at("tier"), "gold");
  EXPECT_TRUE(ParseLabels("", "fleet_labels")->empty());
  for (const char* bad : {"line", "=a", "line=a,tier"}) {
    auto r = ParseLabels(bad, "fleet_labels");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().param(), "fleet_labels");
  }
}

}  // namespace
}  // namespace outpost::fleet
