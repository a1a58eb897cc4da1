#include "outpost/api/kept_request.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "outpost/api/api_keys.h"

namespace outpost::api {
namespace {

using nlohmann::json;

HttpRequest WithHeaders(std::initializer_list<std::pair<std::string, std::string>> headers) {
  HttpRequest req;
  for (const auto& [name, value] : headers) req.headers.emplace_back(name, value);
  return req;
}

std::map<std::string, std::string> HeadersOf(const HttpRequest& req) {
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : req.headers) out[name] = value;
  return out;
}

TEST(KeptRequest, TheKeyIsKeptAsItsIdAndOnlyTheNamedHeaders) {
  const HttpRequest req = WithHeaders({{"Authorization", "Bearer sk-secret"},
                                       {"X-Data-Class", "restricted"},
                                       {"X-Session-Id", "s1"},
                                       {"Cookie", "c=1"}});
  const json kept = KeepHeaders(req, {"Authorization", "X-Data-Class", "X-Outpost-Tier"});
  EXPECT_EQ(kept,
            json({{"X-Outpost-Key-Id", ApiKeyId("sk-secret")}, {"X-Data-Class", "restricted"}}))
      << kept.dump();
  EXPECT_EQ(kept.dump().find("sk-secret"), std::string::npos);
  EXPECT_EQ(ApiKeyId("sk-secret").size(), 12u);
  // No key, nothing kept for it.
  EXPECT_EQ(KeepHeaders(WithHeaders({}), {"Authorization"}), json::object());
}

TEST(KeptRequest, AClientCannotPassAsAKeyBySendingItsId) {
  // The id header is not among what is kept; the client's own key is.
  const HttpRequest req = WithHeaders(
      {{"Authorization", "Bearer mine"}, {"X-Outpost-Key-Id", ApiKeyId("someone-else")}});
  const json kept = KeepHeaders(req, {"Authorization", "X-Data-Class"});
  EXPECT_EQ(kept, json({{"X-Outpost-Key-Id", ApiKeyId("mine")}}));
  EXPECT_EQ(KeepHeaders(WithHeaders({{"X-Outpost-Key-Id", ApiKeyId("someone-else")}}),
                        {"Authorization", "X-Data-Class"}),
            json::object());
}

TEST(KeptRequest, TheKeyComesBackOnlyWhileAKeyWithItsIdIsKnown) {
  const ApiKeys keys({"alpha", "beta"});
  const KeyLookup lookup = [&](const std::string& id) { return keys.KeyWithId(id); };
  const json kept = {{"X-Outpost-Key-Id", ApiKeyId("beta")}, {"X-Data-Class", "internal"}};
  HttpRequest req;
  RestoreHeaders(kept, lookup, &req);
  EXPECT_EQ(HeadersOf(req), (std::map<std::string, std::string>{{"Authorization", "Bearer beta"},
                                                                {"X-Data-Class", "internal"}}));
  EXPECT_TRUE(keys.Check(req.header("Authorization")).ok());
  // Revoked: the request has no key (and no id header either).
  const ApiKeys now({"alpha"});
  HttpRequest revoked;
  RestoreHeaders(
      kept, [&](const std::string& id) { return now.KeyWithId(id); }, &revoked);
  EXPECT_EQ(HeadersOf(revoked), (std::map<std::string, std::string>{{"X-Data-Class", "internal"}}));
  EXPECT_EQ(now.KeyWithId(""), "");
  EXPECT_EQ(now.KeyWithId(ApiKeyId("beta")), "");
}

TEST(KeptRequest, AnOlderKeptRequestWithItsHeaderIsRestoredAsItIs) {
  HttpRequest req;
  RestoreHeaders(json({{"Authorization", "Bearer old"}, {"X-Session-Id", 7}}), nullptr, &req);
  EXPECT_EQ(HeadersOf(req), (std::map<std::string, std::string>{{"Authorization", "Bearer old"}}));
  HttpRequest damaged;
  RestoreHeaders(json("not an object"), nullptr, &damaged);
  EXPECT_TRUE(damaged.headers.empty());
}

}  // namespace
}  // namespace outpost::api
