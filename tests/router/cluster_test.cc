// Cluster bookkeeping without a network: circuit breaker limits, outlier
// ejection (passive health) and active health checks, as the policy sees
// them through View(). Time is simulated: a clock the test advances and a
// probe whose answers the test scripts.
#include "outpost/router/cluster.h"

#include "mocks/sim_clock.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <atomic>
#include <thread>

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
  EXPECT_EQ(c.Status()[0].health_flags.at(0), "failed_active_health_check");
}

TEST(Cluster, CircuitBreakerCapsConcurrentRequests) {
  Cluster c({Up("hq", 2, 3)});
  EXPECT_TRUE(c.TryAcquire("hq"));
  EXPECT_TRUE(c.TryAcquire("hq"));
  EXPECT_FALSE(c.TryAcquire("hq"));  // third concurrent request refused
  EXPECT_EQ(c.Status()[0].active_requests, 2);
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
  EXPECT_EQ(c.Status()[0].ejections, 0);
  c.ReportFailure("hq");  // third in a row
  EXPECT_EQ(c.Status()[0].ejections, 1);
  const auto flags = c.Status()[0].health_flags;
  EXPECT_NE(std::find(flags.begin(), flags.end(), "outlier_ejected"), flags.end());
}

// A clock that moves only when told, and a probe that answers as scripted
// and counts its calls.
struct SimulatedWorld {
  SimulatedWorld() { clock.Advance(std::chrono::seconds(1000)); }
  outpost::testing::SimClock clock;
  bool answer = true;
  int probes = 0;
  const util::Clock* Now() { return &clock; }
  Cluster::ProbeFn Probe() {
    return [this](const UpstreamConfig&) {
      ++probes;
      return answer;
    };
  }
  void Advance(int ms) { clock.Advance(std::chrono::milliseconds(ms)); }
};

UpstreamConfig Checked(int interval_ms, int healthy, int unhealthy) {
  UpstreamConfig u = Up("hq", 8, 5);
  u.health.interval_ms = interval_ms;
  u.health.healthy_threshold = healthy;
  u.health.unhealthy_threshold = unhealthy;
  return u;
}

TEST(ClusterSimulatedTime, ChecksRunOnTheIntervalAndThresholdsApply) {
  SimulatedWorld w;
  Cluster c({Checked(200, 2, 3)}, w.Now(), w.Probe());
  // First check at once; one success of the two required.
  EXPECT_EQ(c.RunDueChecks(), w.clock.Now() + std::chrono::milliseconds(200));
  EXPECT_EQ(w.probes, 1);
  EXPECT_FALSE(c.View()[0].available);
  w.Advance(199);
  c.RunDueChecks();  // not due yet
  EXPECT_EQ(w.probes, 1);
  w.Advance(1);
  c.RunDueChecks();
  EXPECT_EQ(w.probes, 2);
  EXPECT_TRUE(c.View()[0].available);  // healthy_threshold 2 reached

  // The upstream dies: three failed checks in a row (unhealthy_threshold) at
  // 200 ms intervals take it out — detection within 400 ms of the first miss.
  w.answer = false;
  for (int i = 1; i <= 3; ++i) {
    w.Advance(200);
    c.RunDueChecks();
    EXPECT_EQ(c.View()[0].available, i < 3) << "after failed check " << i;
  }
  EXPECT_EQ(c.Status()[0].health_flags.at(0), "failed_active_health_check");

  // A success in between resets the failure count.
  w.answer = true;
  w.Advance(200);
  c.RunDueChecks();
  EXPECT_FALSE(c.View()[0].available);  // one success of two
  w.Advance(200);
  c.RunDueChecks();
  EXPECT_TRUE(c.View()[0].available);
  w.answer = false;
  w.Advance(200);
  c.RunDueChecks();
  w.Advance(200);
  c.RunDueChecks();
  w.answer = true;
  w.Advance(200);
  c.RunDueChecks();
  w.answer = false;
  w.Advance(200);
  c.RunDueChecks();
  w.Advance(200);
  c.RunDueChecks();
  EXPECT_TRUE(c.View()[0].available);  // never three failures in a row
  EXPECT_EQ(w.probes, 12);
}

// Worst case for the default check settings: the host dies right after a
// passing check. The health thread sleeps until the next due time (as Loop()
// does); each failing probe takes `probe_ms` — about 0 for a killed process
// (connection refused), the whole probe timeout for a box that went silent.
int64_t DetectionMs(int64_t probe_ms) {
  SimulatedWorld w;
  UpstreamConfig u;  // default check settings
  u.name = "box-b";
  u.base_url = "http://127.0.0.1:9";
  Cluster c({u}, w.Now(), [&](const UpstreamConfig&) {
    w.Advance(static_cast<int>(probe_ms));
    return w.answer;
  });
  Cluster::TimePoint next = c.RunDueChecks();
  EXPECT_TRUE(c.View()[0].available);
  w.answer = false;
  const Cluster::TimePoint died = w.clock.Now();
  while (c.View()[0].available) {
    if (next > w.clock.Now()) w.clock.Advance(next - w.clock.Now());
    next = c.RunDueChecks();
    if (w.clock.Now() - died > std::chrono::seconds(10)) return -1;
  }
  return std::chrono::duration_cast<std::chrono::milliseconds>(w.clock.Now() - died).count();
}

TEST(ClusterSimulatedTime, DefaultCheckSettingsNoticeAKilledPeerWithinOneSecond) {
  const UpstreamConfig d;
  const int64_t refused = DetectionMs(0);
  const int64_t silent = DetectionMs(d.health.timeout_ms);
  std::printf(
      "default health checks: killed process noticed after %lld ms, silent box after "
      "%lld ms (simulated worst cases)\n",
      static_cast<long long>(refused), static_cast<long long>(silent));
  EXPECT_EQ(refused, d.health.unhealthy_threshold * d.health.interval_ms);
  EXPECT_LT(refused, 1000);
  EXPECT_EQ(silent, d.health.unhealthy_threshold * (d.health.interval_ms + d.health.timeout_ms));
}

TEST(ClusterSimulatedTime, EjectionTimeDoublesUpToTheCapThenTheHostReturns) {
  SimulatedWorld w;
  UpstreamConfig u = Up("hq", 8, 2);
  u.outlier.base_ejection_ms = 1000;
  u.outlier.max_ejection_ms = 5000;
  Cluster c({u}, w.Now(), w.Probe());
  c.RunDueChecks();  // healthy_threshold 1 by default: available
  ASSERT_TRUE(c.View()[0].available);
  for (int expected_ms : {1000, 2000, 4000, 5000, 5000}) {
    c.ReportFailure("hq");
    c.ReportFailure("hq");
    EXPECT_FALSE(c.View()[0].available);
    w.Advance(expected_ms - 1);
    EXPECT_FALSE(c.View()[0].available) << "ejection of " << expected_ms << " ms ended early";
    w.Advance(1);
    EXPECT_TRUE(c.View()[0].available) << "ejection of " << expected_ms << " ms did not end";
  }
  EXPECT_EQ(c.Status()[0].ejections, 5);
}

// Real threads and the real clock: each host has its own health-check
// thread, so a probe that hangs on one upstream does not stall another's.
TEST(ClusterThreads, ASlowUpstreamDoesNotDelayAnothersChecks) {
  UpstreamConfig slow = Up("slow", 8, 5), fast = Up("fast", 8, 5);
  slow.health.interval_ms = fast.health.interval_ms = 10;
  std::atomic<int> fast_probes{0};
  std::atomic<bool> release{false};
  std::atomic<bool> slow_returned{false};
  Cluster c({slow, fast}, &util::RealClock(), [&](const UpstreamConfig& u) {
    if (u.name == "slow") {
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      slow_returned = true;
      return false;
    }
    ++fast_probes;
    return true;
  });
  c.Start();
  // Counts, not times: the fast host gets five checks while the slow host's
  // first probe is still stuck. (The bound only keeps a broken build from
  // hanging; it asserts nothing about speed.)
  for (int i = 0; i < 6000 && fast_probes < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const bool slow_was_stuck = !slow_returned;
  const int seen = fast_probes.load();
  release = true;
  c.Stop();
  EXPECT_GE(seen, 5);
  EXPECT_TRUE(slow_was_stuck);
  EXPECT_TRUE(c.View()[1].available);
}

}  // namespace
}  // namespace outpost::router
