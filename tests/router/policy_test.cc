// The routing table: for each combination of data class, model, difficulty,
// load and link state, the route taken and the reason.
#include "outpost/router/policy.h"

#include <gtest/gtest.h>

namespace outpost::router {
namespace {

struct Row {
  const char* name;
  RouteInput in;
  bool peer_up, central_up;
  const char* scope;                 // "node" or "site"
  std::vector<std::string> targets;  // expected; empty = rejected
  const char* reason;
  StatusCode reject = StatusCode::kOk;
};

void PrintTo(const Row& r, std::ostream* os) {
  *os << r.name;
}

RouteInput In(const char* cls, const char* model = "local-model", bool local = true) {
  RouteInput in;
  in.data_class = *ParseDataClass(cls);
  in.model = model;
  in.local_serves_model = local;
  in.prompt_tokens = 100;
  return in;
}

RouteInput With(RouteInput in, void (*f)(RouteInput&)) {
  f(in);
  return in;
}

class RoutingTable : public ::testing::TestWithParam<Row> {};

TEST_P(RoutingTable, RouteAndReason) {
  const Row& row = GetParam();
  PolicyConfig p;
  p.restricted_scope = *ParseRestrictedScope(row.scope);
  p.aliases["large"] = "hq";
  p.max_local_prompt_tokens = 2000;
  p.max_local_max_tokens = 1000;
  p.default_latency_budget_ms = 0;
  std::vector<UpstreamView> ups = {
      {0, "box-b", UpstreamKind::kPeer, {"local-model"}, row.peer_up},
      {1, "hq", UpstreamKind::kCentral, {"big-70b", "local-model"}, row.central_up},
  };
  const RouteDecision d = Decide(row.in, p, ups);
  std::vector<std::string> targets;
  for (const Target& t : d.targets) targets.push_back(t.local() ? "local" : ups[t.upstream].name);
  EXPECT_EQ(targets, row.targets);
  EXPECT_EQ(d.reason.ToString(), row.reason);
  if (row.targets.empty()) {
    EXPECT_EQ(d.reject.code(), row.reject) << d.reject.message();
  }
}

const std::vector<std::string> kLocal = {"local"};

INSTANTIATE_TEST_SUITE_P(
    Policy, RoutingTable,
    ::testing::Values(Row{"internal_local_model_stays_local", In("internal"), true, true, "node",
                          kLocal, "default"},
                      Row{"restricted_local_model_stays_local", In("restricted"), true, true,
                          "node", kLocal, "data_class:restricted"},
                      Row{"central_only_model_goes_central",
                          In("internal", "big-70b", false),
                          true,
                          true,
                          "node",
                          {"hq"},
                          "model"},
                      Row{"restricted_central_only_model_refused_403",
                          In("restricted", "big-70b", false),
                          true,
                          true,
                          "node",
                          {},
                          "data_class:restricted",
                          StatusCode::kPermissionDenied},
                      Row{"alias_large_goes_central",
                          In("public", "large", false),
                          true,
                          true,
                          "node",
                          {"hq"},
                          "model:alias"},
                      Row{"restricted_alias_refused",
                          In("restricted", "large", false),
                          true,
                          true,
                          "node",
                          {},
                          "data_class:restricted",
                          StatusCode::kPermissionDenied},
                      Row{"alias_with_central_down_503",
                          In("public", "large", false),
                          true,
                          false,
                          "node",
                          {},
                          "link_down",
                          StatusCode::kUnavailable},
                      Row{"central_only_model_link_down_503",
                          In("internal", "big-70b", false),
                          true,
                          false,
                          "node",
                          {},
                          "link_down",
                          StatusCode::kUnavailable},
                      Row{"unknown_model_404",
                          In("internal", "nope", false),
                          true,
                          true,
                          "node",
                          {},
                          "model",
                          StatusCode::kNotFound},
                      Row{"long_prompt_goes_central_with_local_fallback",
                          With(In("internal"), [](RouteInput& i) { i.prompt_tokens = 5000; }),
                          true,
                          true,
                          "node",
                          {"hq", "local"},
                          "difficulty:prompt_tokens"},
                      Row{"big_max_tokens_goes_central",
                          With(In("internal"), [](RouteInput& i) { i.max_tokens = 4000; }),
                          true,
                          true,
                          "node",
                          {"hq", "local"},
                          "difficulty:max_tokens"},
                      Row{"tools_go_central",
                          With(In("internal"), [](RouteInput& i) { i.wants_tools = true; }),
                          true,
                          true,
                          "node",
                          {"hq", "local"},
                          "difficulty:tools"},
                      Row{"tier_header_central",
                          With(In("internal"), [](RouteInput& i) { i.tier = Tier::kCentral; }),
                          true,
                          true,
                          "node",
                          {"hq", "local"},
                          "difficulty:tier"},
                      Row{"tier_header_local_overrides_difficulty",
                          With(In("internal"),
                               [](RouteInput& i) {
                                 i.tier = Tier::kLocal;
                                 i.prompt_tokens = 5000;
                               }),
                          true, true, "node", kLocal, "default"},
                      Row{"difficult_but_restricted_kept_local",
                          With(In("restricted"), [](RouteInput& i) { i.prompt_tokens = 5000; }),
                          true, true, "node", kLocal,
                          "difficulty:prompt_tokens;data_class:restricted;kept_local"},
                      Row{"difficult_with_central_down_falls_back_local",
                          With(In("internal"), [](RouteInput& i) { i.prompt_tokens = 5000; }), true,
                          false, "node", kLocal,
                          "difficulty:prompt_tokens;link_down;local_fallback"},
                      Row{"over_budget_tries_peer_then_central_then_local",
                          With(In("internal"),
                               [](RouteInput& i) {
                                 i.local_wait_ms = 5000;
                                 i.latency_budget_ms = 1000;
                               }),
                          true,
                          true,
                          "node",
                          {"box-b", "hq", "local"},
                          "load:over_budget"},
                      Row{"local_full_peer_then_central_no_local",
                          With(In("internal"), [](RouteInput& i) { i.local_full = true; }),
                          true,
                          true,
                          "node",
                          {"box-b", "hq"},
                          "load:local_full"},
                      Row{"over_budget_peer_down_central_then_local",
                          With(In("internal"),
                               [](RouteInput& i) {
                                 i.local_wait_ms = 5000;
                                 i.latency_budget_ms = 1000;
                               }),
                          false,
                          true,
                          "node",
                          {"hq", "local"},
                          "load:over_budget"},
                      Row{"over_budget_restricted_node_scope_queues_locally",
                          With(In("restricted"),
                               [](RouteInput& i) {
                                 i.local_wait_ms = 5000;
                                 i.latency_budget_ms = 1000;
                               }),
                          true, true, "node", kLocal, "load:over_budget"},
                      Row{"over_budget_restricted_site_scope_may_use_peer",
                          With(In("restricted"),
                               [](RouteInput& i) {
                                 i.local_wait_ms = 5000;
                                 i.latency_budget_ms = 1000;
                               }),
                          true,
                          true,
                          "site",
                          {"box-b", "local"},
                          "load:over_budget"},
                      Row{"local_full_restricted_nowhere_503",
                          With(In("restricted"), [](RouteInput& i) { i.local_full = true; }),
                          true,
                          true,
                          "node",
                          {},
                          "load:no_capacity",
                          StatusCode::kResourceExhausted},
                      Row{"local_full_everything_down_503",
                          With(In("internal"), [](RouteInput& i) { i.local_full = true; }),
                          false,
                          false,
                          "node",
                          {},
                          "load:no_capacity",
                          StatusCode::kResourceExhausted},
                      Row{"within_budget_stays_local",
                          With(In("internal"),
                               [](RouteInput& i) {
                                 i.local_wait_ms = 500;
                                 i.latency_budget_ms = 1000;
                               }),
                          true, true, "node", kLocal, "default"},
                      Row{"central_down_local_traffic_unaffected", In("public"), true, false,
                          "node", kLocal, "default"},
                      Row{"restricted_site_scope_central_only_model_refused",
                          In("restricted", "big-70b", false),
                          true,
                          true,
                          "site",
                          {},
                          "data_class:restricted",
                          StatusCode::kPermissionDenied}),
    [](const auto& info) { return std::string(info.param.name); });

// Under both settings' limits (2,000 prompt tokens, 1,000 max_tokens) but past
// what one local session holds: this node could only refuse such a request.
RouteInput Past(const char* cls, int32_t prompt, int32_t max_tokens, Tier tier = Tier::kAny) {
  RouteInput in = In(cls);
  in.prompt_tokens = prompt;
  in.max_tokens = max_tokens;
  in.local_context = 1024;
  in.tier = tier;
  return in;
}

INSTANTIATE_TEST_SUITE_P(
    LocalContext, RoutingTable,
    ::testing::Values(Row{"prompt_filling_the_session_goes_central",
                          Past("internal", 1024, 0),
                          true,
                          true,
                          "node",
                          {"hq", "local"},
                          "difficulty:prompt_tokens"},
                      Row{"prompt_plus_max_tokens_past_the_session_goes_central",
                          Past("internal", 600, 425),
                          true,
                          true,
                          "node",
                          {"hq", "local"},
                          "difficulty:max_tokens"},
                      Row{"exactly_filling_the_session_stays_local", Past("internal", 600, 424),
                          true, true, "node", kLocal, "default"},
                      Row{"room_for_one_token_stays_local", Past("internal", 1023, 0), true, true,
                          "node", kLocal, "default"},
                      Row{"restricted_kept_local", Past("restricted", 1500, 0), true, true, "node",
                          kLocal, "difficulty:prompt_tokens;data_class:restricted;kept_local"},
                      Row{"tier_local_stays_local", Past("internal", 1500, 0, Tier::kLocal), true,
                          true, "node", kLocal, "default"},
                      Row{"central_down_falls_back_local", Past("internal", 1500, 0), true, false,
                          "node", kLocal, "difficulty:prompt_tokens;link_down;local_fallback"},
                      Row{"unknown_context_stays_local",
                          [] {
                            RouteInput in = Past("internal", 1500, 0);
                            in.local_context = 0;
                            return in;
                          }(),
                          true, true, "node", kLocal, "default"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Cascade, OfferedForLocalNonStreamingAnswersWhenCentralIsAllowedAndUp) {
  PolicyConfig p;
  p.cascade = true;
  std::vector<UpstreamView> ups = {{0, "hq", UpstreamKind::kCentral, {"*"}, true}};
  EXPECT_EQ(Decide(In("internal"), p, ups).cascade_to, 0);
  RouteInput streaming = In("internal");
  streaming.stream = true;
  EXPECT_EQ(Decide(streaming, p, ups).cascade_to, std::nullopt);
  EXPECT_EQ(Decide(In("restricted"), p, ups).cascade_to, std::nullopt);  // never leaves the node
  RouteInput pinned = In("internal");
  pinned.tier = Tier::kLocal;
  EXPECT_EQ(Decide(pinned, p, ups).cascade_to, std::nullopt);
  ups[0].available = false;
  EXPECT_EQ(Decide(In("internal"), p, ups).cascade_to, std::nullopt);  // link down: no cascade
  p.cascade = false;
  ups[0].available = true;
  EXPECT_EQ(Decide(In("internal"), p, ups).cascade_to, std::nullopt);
}

}  // namespace
}  // namespace outpost::router
