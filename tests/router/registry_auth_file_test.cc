// Registry credentials from docker / podman / oras auth files: the entry
// shapes they write, the keys registries are filed under, the first file
// that knows the registry winning, and a table of files that cannot be used.
#include "outpost/router/registry_auth_file.h"

#include <gtest/gtest.h>

#include "mocks/temp_file.h"
#include "outpost/util/base64.h"

namespace outpost::router {
namespace {

using outpost::testing::TempFile;

std::string Auth(const std::string& user_pass) {
  return util::Base64Encode(user_pass);
}

TEST(RegistryAuthFile, EntryShapesAndKeys) {
  const std::string docker = TempFile(R"({"auths": {
      "registry.site.local:5000": {"auth": ")" +
                                          Auth("edge:s3cret:with:colons") + R"("},
      "https://ghcr.io/v1/": {"auth": ")" +
                                          Auth("bot:ghp_x") + R"("},
      "https://index.docker.io/v1/": {"auth": ")" +
                                          Auth("hub:pw") + R"("},
      "quay.io": {"username": "robot", "password": "tok"}}})",
                                      ".json");
  auto c = FindRegistryCredentials("registry.site.local:5000", {docker});
  ASSERT_TRUE(c.ok() && c->has_value()) << c.status().ToString();
  EXPECT_EQ((*c)->username, "edge");
  EXPECT_EQ((*c)->password, "s3cret:with:colons");  // only the first colon splits
  EXPECT_EQ((*c)->file, docker);
  c = FindRegistryCredentials("ghcr.io", {docker});  // a scheme and a path on the key
  ASSERT_TRUE(c.ok() && c->has_value());
  EXPECT_EQ((*c)->username, "bot");
  c = FindRegistryCredentials("registry-1.docker.io", {docker});  // Docker Hub's names
  ASSERT_TRUE(c.ok() && c->has_value());
  EXPECT_EQ((*c)->username, "hub");
  c = FindRegistryCredentials("quay.io", {docker});
  ASSERT_TRUE(c.ok() && c->has_value());
  EXPECT_EQ((*c)->password, "tok");
  // Not there (another port is another registry): anonymous.
  c = FindRegistryCredentials("registry.site.local:5001", {docker});
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->has_value());
}

TEST(RegistryAuthFile, TheFirstFileThatKnowsTheRegistryWinsAndMissingFilesAreSkipped) {
  const std::string podman = TempFile(
      R"({"auths": {"a.example": {"auth": ")" + Auth("from-podman:1") + R"("}}})", ".json");
  const std::string docker =
      TempFile(R"({"auths": {"a.example": {"auth": ")" + Auth("from-docker:2") +
                   R"("}, "b.example": {"auth": ")" + Auth("only-docker:3") + R"("}}})",
               ".json");
  const std::vector<std::string> files = {"/nonexistent/auth.json", podman, docker};
  EXPECT_EQ((*FindRegistryCredentials("a.example", files))->username, "from-podman");
  EXPECT_EQ((*FindRegistryCredentials("b.example", files))->username, "only-docker");
  EXPECT_FALSE(FindRegistryCredentials("c.example", files)->has_value());
  EXPECT_FALSE(FindRegistryCredentials("a.example", {})->has_value());
}

TEST(RegistryAuthFile, FilesThatCannotBeUsedSayWhy) {
  const struct {
    const char* json;
    StatusCode code;
    const char* part;
  } kBad[] = {
      {"not json", StatusCode::kInvalidArgument, "is not a JSON object"},
      {R"({"auths": {"r.example": "x"}})", StatusCode::kInvalidArgument, "is not an object"},
      {R"({"auths": {"r.example": {"auth": "%%%"}}})", StatusCode::kInvalidArgument,
       "'auth' is not base64 of user:password"},
      {R"({"auths": {"r.example": {"auth": "bm9jb2xvbg=="}}})", StatusCode::kInvalidArgument,
       "'auth' is not base64 of user:password"},  // "nocolon"
      {R"({"auths": {"r.example": {"email": "a@b"}}})", StatusCode::kInvalidArgument,
       "neither 'auth' nor username and password"},
      {R"({"auths": {"r.example": {"identitytoken": "abc"}}})", StatusCode::kUnauthenticated,
       "identity token"},
      {R"({"auths": {"r.example": {}}, "credsStore": "desktop"})", StatusCode::kUnauthenticated,
       "credential helper docker-credential-desktop"},
      {R"({"credHelpers": {"r.example": "ecr-login"}})", StatusCode::kUnauthenticated,
       "credential helper docker-credential-ecr-login"},
  };
  for (const auto& b : kBad) {
    const std::string file = TempFile(b.json, ".json");
    auto c = FindRegistryCredentials("r.example", {file});
    ASSERT_FALSE(c.ok()) << b.json;
    EXPECT_EQ(c.status().code(), b.code) << b.json;
    EXPECT_NE(c.status().message().find(b.part), std::string::npos) << c.status().message();
    EXPECT_NE(c.status().message().find(file), std::string::npos) << c.status().message();
  }
  // A credsStore alone does not keep a registry it has no entry for.
  const std::string store = TempFile(R"({"auths": {}, "credsStore": "desktop"})", ".json");
  auto c = FindRegistryCredentials("r.example", {store});
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->has_value());
}

}  // namespace
}  // namespace outpost::router
