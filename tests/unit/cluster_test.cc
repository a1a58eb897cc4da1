// Cluster bookkeeping without a network: circuit breaker limits and outlier
// ejection (passive health), as the policy sees them through View().
#include "outpost/router/cluster.h"

#include <gtest/gtest.h>

namespace outpost::router {
namespace {

UpstreamConfig Up(const std::string& name, int max_requests, int failures) {
  UpstreamConfig u;
  u.name = name;
  u.base_url = "http://127.0.0.1:9";  // never contacted: the health thread is not started
  u.max_requests = max_requests;
  u.outlier.consecutive_failures = failures;
  u.outlier.base_ejection_ms = 60000;
  return u;
}

TEST(Cluster, UnknownHealthIsUnavailableUntilTheFirstCheckPasses) {
  Cluster c({Up("hq", 4, 3)});
  ASSERT_EQ(c.View().size(), 1u);
  EXPECT_FALSE(c.View()[0].available);
  EXPECT_EQ(c.StatusJson()[0]["health_flags"][0], "failed_active_health_check");
}

TEST(Cluster, CircuitBreakerCapsConcurrentRequests) {
  Cluster c({Up("hq", 2, 3)});
  EXPECT_TRUE(c.TryAcquire("hq"));
  EXPECT_TRUE(c.TryAcquire("hq"));
  EXPECT_FALSE(c.TryAcquire("hq"));  // third concurrent request refused
  EXPECT_EQ(c.StatusJson()[0]["active_requests"], 2);
  c.Release("hq");
  EXPECT_TRUE(c.TryAcquire("hq"));
  EXPECT_FALSE(c.TryAcquire("nope"));
}

TEST(Cluster, ConsecutiveFailuresEjectAndSuccessResetsTheCount) {
  Cluster c({Up("hq", 8, 3)});
  c.ReportFailure("hq");
  c.ReportFailure("hq");
  c.ReportSuccess("hq");  // resets: two more failures do not eject
  c.ReportFailure("hq");
  c.ReportFailure("hq");
  EXPECT_EQ(c.StatusJson()[0]["ejections"], 0);
  c.ReportFailure("hq");  // third in a row
  EXPECT_EQ(c.StatusJson()[0]["ejections"], 1);
  const nlohmann::json status = c.StatusJson();  // keep it alive while iterating
  bool ejected = false;
  for (const auto& f : status[0]["health_flags"]) ejected = ejected || f == "outlier_ejected";
  EXPECT_TRUE(ejected);
}

}  // namespace
}  // namespace outpost::router
