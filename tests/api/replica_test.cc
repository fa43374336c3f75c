// Two replicas in one process on a real etcd (one member: the facts here are the replica's, not
// etcd's): one leads, the other follows the log into its own scheduler and refuses writes; when
// the leader resigns the standby takes over from where it applied, and ids go on. In one process
// so that ThreadSanitizer (tsan_tests) sees the replica's thread against the service's.
#include "api/replica.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
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

// An etcd store whose log grows, as the leader appends, right after a standby's full read of it
// (ReadInputs) and before the standby reads the stored events to compare its replay with.
class GrowingStore : public store::JobStore {
 public:
  GrowingStore(std::unique_ptr<store::EtcdStore> inner, std::function<void()> after_read)
      : inner_(std::move(inner)), after_read_(std::move(after_read)) {}
  Status Append(const std::vector<store::Change>& c) override { return inner_->Append(c); }
  StatusOr<std::vector<store::InputRecord>> ReadInputs() const override {
    StatusOr<std::vector<store::InputRecord>> in = inner_->ReadInputs();
    after_read_();
    return in;
  }
  StatusOr<std::vector<store::JobRow>> ListJobs(const store::JobFilter& f) const override {
    return inner_->ListJobs(f);
  }
  StatusOr<std::optional<store::JobRow>> GetJob(int64_t id) const override {
    return inner_->GetJob(id);
  }
  StatusOr<std::vector<job::JobEvent>> Events(int64_t after, int limit) const override {
    return inner_->Events(after, limit);
  }
  StatusOr<std::vector<job::JobEvent>> EventsThrough(int64_t seq) const override {
    return inner_->EventsThrough(seq);
  }
  StatusOr<int64_t> EventCount() const override { return inner_->EventCount(); }
  int64_t last_seq() const override { return inner_->last_seq(); }
  StatusOr<std::optional<std::string>> GetMeta(const std::string& key) const override {
    return inner_->GetMeta(key);
  }
  Status PutMeta(const std::string& key, const std::string& value) override {
    return inner_->PutMeta(key, value);
  }

 private:
  std::unique_ptr<store::EtcdStore> inner_;
  std::function<void()> after_read_;
};

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

// A daemon (re)started while the leader takes submits: the leader's appends between its read of
// the log and its read of the stored events are not a replay that differs.
TEST_F(ReplicaTest, AStandbyOpenedWhileTheLeaderAppendsReplaysWhatItRead) {
  Node a = Start("http://a");
  ASSERT_NE(a.replica, nullptr);
  ASSERT_TRUE(Eventually([&] { return a.replica->view().leader; }));
  for (int i = 0; i < 3; ++i) {
    const std::string name = "j" + std::to_string(i);
    ASSERT_THAT(a.service->Submit(testing_api::JobJson(name, 8), name), IsOk());
  }
  store::EtcdOptions eo;
  eo.endpoints = etcd_.Endpoints();
  StatusOr<std::unique_ptr<store::EtcdStore>> st =
      store::EtcdStore::Open(std::make_shared<store::EtcdClient>(eo), {});
  ASSERT_THAT(st, IsOk());
  Service* leader = a.service.get();
  auto growing = std::make_unique<GrowingStore>(std::move(st).value(), [leader] {
    ASSERT_THAT(leader->Submit(testing_api::JobJson("late", 8), "late"), IsOk());
  });
  ServiceOptions o;
  o.db_path = etcd_.Url();
  o.standby = true;
  o.extender = false;
  StatusOr<std::unique_ptr<Service>> b = Service::Open(cluster_, o, std::move(growing));
  ASSERT_THAT(b, IsOk());
  EXPECT_LT((*b)->applied_seq(), leader->durable_seq());  // the late submit is its tail
  EXPECT_THAT((*b)->CheckInvariants(), IsOk());
}

// A leader whose append the fence refused refuses every later write as it refused the ones in
// that append: Unavailable (503, retried by the client on the new leader), never a
// FailedPrecondition (409) that a client takes as final.
TEST_F(ReplicaTest, AfterAFencedAppendEveryWriteIsUnavailable) {
  store::EtcdOptions eo;
  eo.endpoints = etcd_.Endpoints();
  StatusOr<std::unique_ptr<store::EtcdStore>> st =
      store::EtcdStore::Open(std::make_shared<store::EtcdClient>(eo), {});
  ASSERT_THAT(st, IsOk());  // no fence set: every append is refused
  ServiceOptions o;
  o.db_path = etcd_.Url();
  o.extender = false;
  o.background_passes = false;
  StatusOr<std::unique_ptr<Service>> svc = Service::Open(cluster_, o, std::move(st).value());
  ASSERT_THAT(svc, IsOk());
  EXPECT_THAT((*svc)->Submit(testing_api::JobJson("a", 1), "a"),
              StatusIs(StatusCode::kUnavailable, HasSubstr("not committed: fenced")));
  EXPECT_THAT((*svc)->Submit(testing_api::JobJson("b", 1), "b"),
              StatusIs(StatusCode::kUnavailable, HasSubstr("not committed: fenced")));
  EXPECT_THAT((*svc)->Cancel(1),
              StatusIs(StatusCode::kUnavailable, HasSubstr("not committed: fenced")));
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
