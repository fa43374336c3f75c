// Two replicas in one process on a real etcd (one member: the facts here are the replica's, not
// etcd's): one leads, the other follows the log into its own scheduler and refuses writes; when
// the leader resigns the standby takes over from where it applied, and ids go on. In one process
// so that ThreadSanitizer (tsan_tests) sees the replica's thread against the service's.
#include "api/replica.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "api/api_testing.h"
#include "api/server.h"
#include "api/service.h"
#include "store/etcd_election.h"
#include "store/etcd_store.h"
#include "testing/etcd_cluster.h"
#include "testing/status_matchers.h"
#include "topo/io/cluster_yaml.h"

namespace toposched::api {
namespace {

using ::testing::HasSubstr;
using toposched::testing::IsOk;
using toposched::testing::StatusIs;

// One daemon's parts: its service (owning its store) and its replica.
struct Node {
  std::unique_ptr<Service> service;
  std::unique_ptr<Replica> replica;
};

class ReplicaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::EtcdInstalled()) {
      GTEST_SKIP() << testing::kEtcdBinary
                   << " is absent: install etcd-server (scripts/install-deps.sh)";
    }
    ASSERT_TRUE(etcd_.Start());
    StatusOr<topo::Cluster> c = topo::io::ReadClusterYamlFile(std::string(TS_SOURCE_DIR) +
                                                              "/data/clusters/h100-2rack.yaml");
    ASSERT_THAT(c, IsOk());
    cluster_ = std::move(c).value();
    cluster_.Finalize();
  }

  // A standby with its replica (a 20 ms tick, a 2 s lease).
  Node Start(const std::string& identity) {
    Node n;
    store::EtcdOptions eo;
    eo.endpoints = etcd_.Endpoints();
    auto client = std::make_shared<store::EtcdClient>(eo);
    StatusOr<std::unique_ptr<store::EtcdStore>> st = store::EtcdStore::Open(client, {});
    EXPECT_THAT(st, IsOk());
    if (!st.ok()) return n;
    store::EtcdStore* store = st->get();
    ServiceOptions o;
    o.db_path = etcd_.Url();
    o.standby = true;
    o.extender = false;
    StatusOr<std::unique_ptr<Service>> svc = Service::Open(cluster_, o, std::move(st).value());
    EXPECT_THAT(svc, IsOk());
    if (!svc.ok()) return n;
    n.service = std::move(svc).value();
    store::ElectionOptions el;
    el.key = store->LeaderKey();
    el.identity = identity;
    el.lease_ttl_s = 2;
    ReplicaOptions ro;
    ro.tick_ms = 20;
    StatusOr<std::unique_ptr<Replica>> r =
        Replica::Start(*n.service, *store, std::make_unique<store::LeaderElection>(client, el), ro,
                       [this](const Status&) { ++step_downs_; });
    EXPECT_THAT(r, IsOk());
    if (r.ok()) n.replica = std::move(r).value();
    return n;
  }

  // Waits until `pred` holds (false after 10 s).
  template <typename Pred>
  static bool Eventually(Pred pred) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (pred()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  testing::EtcdCluster etcd_{1};
  topo::Cluster cluster_;
  std::atomic<int> step_downs_{0};
};

TEST_F(ReplicaTest, TheStandbyFollowsRefusesWritesAndTakesOverWhereItApplied) {
  Node a = Start("http://a");
  ASSERT_NE(a.replica, nullptr);
  ASSERT_TRUE(Eventually([&] { return a.replica->view().leader; }));
  Node b = Start("http://b");
  ASSERT_NE(b.replica, nullptr);
  for (int i = 0; i < 5; ++i) {
    const std::string name = "j" + std::to_string(i);
    ASSERT_THAT(a.service->Submit(testing_api::JobJson(name, 1), name), IsOk());
  }
  const int64_t leader_seq = a.service->durable_seq();
  ASSERT_TRUE(Eventually([&] { return b.service->applied_seq() >= leader_seq; }));
  EXPECT_EQ(b.replica->view().leader_url, "http://a");
  EXPECT_THAT(b.service->JobJson(5, false), IsOk());
  EXPECT_THAT(b.service->Submit(testing_api::JobJson("x", 1), "x"),
              StatusIs(StatusCode::kUnavailable, HasSubstr("standby")));

  a.replica.reset();  // the leader resigns: its lease revoked
  a.service.reset();
  ASSERT_TRUE(Eventually([&] { return b.replica->view().leader; }));
  EXPECT_FALSE(b.service->standby());
  StatusOr<Service::SubmitResult> next = b.service->Submit(testing_api::JobJson("j5", 1), "j5");
  ASSERT_THAT(next, IsOk());
  EXPECT_EQ(next->id, 6);
  // The key used before the takeover names the same job.
  StatusOr<Service::SubmitResult> again = b.service->Submit(testing_api::JobJson("j0", 1), "j0");
  ASSERT_THAT(again, IsOk());
  EXPECT_EQ(again->id, 1);
  EXPECT_FALSE(again->created);
  EXPECT_EQ(b.replica->view().leader_changes, 1);
  EXPECT_EQ(step_downs_.load(), 0);
  EXPECT_THAT(b.service->CheckInvariants(), IsOk());
}

TEST_F(ReplicaTest, CutOffFromEtcdTheStandbyIsStaleAndTheLeaderStepsDownWithinItsLease) {
  Node a = Start("http://a");
  ASSERT_NE(a.replica, nullptr);
  ASSERT_TRUE(Eventually([&] { return a.replica->view().leader; }));
  Node b = Start("http://b");
  ASSERT_NE(b.replica, nullptr);
  EXPECT_LT(b.replica->view().unread_ms, kStaleAfterMs);
  etcd_.Kill(0);  // the only member: no quorum
  EXPECT_TRUE(Eventually([&] { return b.replica->view().unread_ms > kStaleAfterMs; }));
  // No renewal for a whole TTL (2 s): it stops leading.
  EXPECT_TRUE(Eventually([&] { return step_downs_.load() == 1; }));
  EXPECT_FALSE(a.replica->view().leader);
}

}  // namespace
}  // namespace toposched::api
