// The etcd store against a real three-member etcd cluster on loopback (tests/testing/
// etcd_cluster.h): appends, the fence, group commit's transactions, the layout check, the
// leader election, and a member's loss.
#include "store/etcd_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "store/etcd_client.h"
#include "store/etcd_election.h"
#include "testing/etcd_cluster.h"
#include "testing/status_matchers.h"

namespace toposched::store {
namespace {

using ::testing::HasSubstr;
using toposched::testing::IsOk;
using toposched::testing::StatusIs;

Change Submit(int64_t seq, int64_t id) {
  Change c;
  c.input = {seq,
             "submit",
             1000 * seq,
             id,
             "key-" + std::to_string(id),
             "{\"name\":\"j" + std::to_string(id) + "\"}"};
  c.jobs.push_back({id, "j" + std::to_string(id), "alice", "default", 0, "PENDING", 8, 1000 * seq,
                    c.input.idem_key, c.input.payload});
  c.events.push_back({1000 * seq, "job-" + std::to_string(id), job::JobState::kPending,
                      job::JobState::kPending, "submitted"});
  return c;
}

std::vector<Change> Submits(int64_t first, int64_t n) {
  std::vector<Change> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(Submit(first + i, first + i));
  return out;
}

// One election round's event (a failed round fails the test).
LeaderElection::Event StepEvent(LeaderElection& e) {
  StatusOr<LeaderElection::Event> r = e.Step();
  EXPECT_THAT(r, IsOk());
  return r.ok() ? *r : LeaderElection::Event::kNone;
}

// The store's own facts need one member (it starts in a fraction of a second, each test being
// its own process under CTest); a member's loss is tested on three (EtcdMemberLossTest).
template <int kMembers>
class EtcdTestBase : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!testing::EtcdInstalled()) return;
    cluster_ = new testing::EtcdCluster(kMembers);
    if (!cluster_->Start()) {
      delete cluster_;
      cluster_ = nullptr;
    }
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override {
    if (!testing::EtcdInstalled()) {
      GTEST_SKIP() << testing::kEtcdBinary
                   << " is absent: install etcd-server (scripts/install-deps.sh)";
    }
    ASSERT_NE(cluster_, nullptr) << "the etcd cluster did not start";
    EtcdOptions o;
    o.endpoints = cluster_->Endpoints();
    client_ = std::make_shared<EtcdClient>(o);
    prefix_ = "/t/" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  std::unique_ptr<EtcdStore> OpenStore() {
    EtcdStoreOptions so;
    so.prefix = prefix_;
    StatusOr<std::unique_ptr<EtcdStore>> s = EtcdStore::Open(client_, so);
    EXPECT_THAT(s, IsOk());
    return s.ok() ? std::move(s).value() : nullptr;
  }
  // Takes the leadership key with a fresh lease; its id.
  int64_t Lead(const std::string& identity) {
    ElectionOptions eo;
    eo.key = prefix_ + "/leader";
    eo.identity = identity;
    eo.lease_ttl_s = 5;
    election_ = std::make_unique<LeaderElection>(client_, eo);
    StatusOr<LeaderElection::Event> ev = election_->Step();
    EXPECT_THAT(ev, IsOk());
    return election_->lease();
  }

  static testing::EtcdCluster* cluster_;
  std::shared_ptr<EtcdClient> client_;
  std::unique_ptr<LeaderElection> election_;
  std::string prefix_;
};

template <int kMembers>
testing::EtcdCluster* EtcdTestBase<kMembers>::cluster_ = nullptr;

class EtcdStoreTest : public EtcdTestBase<1> {};
class EtcdMemberLossTest : public EtcdTestBase<3> {};

TEST_F(EtcdStoreTest, AppendedInputsReadBackInOrderFromAnotherStore) {
  std::unique_ptr<EtcdStore> s = OpenStore();
  s->SetFence(Lead("http://a"));
  ASSERT_THAT(s->Append(Submits(1, 3)), IsOk());
  std::unique_ptr<EtcdStore> other = OpenStore();
  StatusOr<std::vector<InputRecord>> in = other->ReadInputs();
  ASSERT_THAT(in, IsOk());
  ASSERT_EQ(in->size(), 3u);
  EXPECT_EQ((*in)[2], Submit(3, 3).input);
  EXPECT_EQ(other->last_seq(), 3);
  StatusOr<std::vector<job::JobEvent>> ev = other->Events(1, 10);
  ASSERT_THAT(ev, IsOk());
  EXPECT_EQ(ev->size(), 2u);
  StatusOr<std::optional<JobRow>> row = other->GetJob(2);
  ASSERT_THAT(row, IsOk());
  EXPECT_EQ(row->value(), Submit(2, 2).jobs[0]);
}

TEST_F(EtcdStoreTest, TheTailAfterASeqIsWhatFollows) {
  std::unique_ptr<EtcdStore> s = OpenStore();
  s->SetFence(Lead("http://a"));
  ASSERT_THAT(s->Append(Submits(1, 5)), IsOk());
  std::unique_ptr<EtcdStore> follower = OpenStore();
  StatusOr<std::vector<InputRecord>> tail = follower->ReadInputsAfter(3, 100);
  ASSERT_THAT(tail, IsOk());
  ASSERT_EQ(tail->size(), 2u);
  EXPECT_EQ((*tail)[0].seq, 4);
  EXPECT_EQ((*tail)[1].seq, 5);
}

// A standby opened while the leader appends: its reads reach past what Open counted, and the
// events it compares a replay with are those of the inputs it read, not of later ones.
TEST_F(EtcdStoreTest, AStoreOpenedWhileTheLeaderAppendsFollowsWhatItRead) {
  std::unique_ptr<EtcdStore> leader = OpenStore();
  leader->SetFence(Lead("http://a"));
  ASSERT_THAT(leader->Append(Submits(1, 2)), IsOk());
  std::unique_ptr<EtcdStore> standby = OpenStore();  // counts 2
  ASSERT_THAT(leader->Append(Submits(3, 2)), IsOk());
  StatusOr<std::vector<InputRecord>> in = standby->ReadInputs();
  ASSERT_THAT(in, IsOk());
  ASSERT_EQ(in->size(), 4u);
  EXPECT_EQ(standby->last_seq(), 4);  // an append after it must be input 5, not 3
  ASSERT_THAT(leader->Append(Submits(5, 3)), IsOk());
  StatusOr<std::vector<job::JobEvent>> ev = standby->EventsThrough(4);
  ASSERT_THAT(ev, IsOk());
  ASSERT_EQ(ev->size(), 4u);
  EXPECT_EQ(ev->back(), Submit(4, 4).events[0]);
}

TEST_F(EtcdStoreTest, EventsThroughASeqBeyondTheLogIsDataLoss) {
  std::unique_ptr<EtcdStore> s = OpenStore();
  s->SetFence(Lead("http://a"));
  ASSERT_THAT(s->Append(Submits(1, 2)), IsOk());
  EXPECT_THAT(s->EventsThrough(3),
              StatusIs(StatusCode::kDataLoss, HasSubstr("input 3 is missing")));
}

TEST_F(EtcdStoreTest, AnAppendWithoutTheLeadershipIsRefused) {
  std::unique_ptr<EtcdStore> s = OpenStore();
  EXPECT_THAT(s->Append(Submits(1, 1)),
              StatusIs(StatusCode::kFailedPrecondition, HasSubstr("no lease held")));
}

TEST_F(EtcdStoreTest, AnAppendFencedOnAnotherLeaseIsRefusedAndWritesNothing) {
  std::unique_ptr<EtcdStore> s = OpenStore();
  const int64_t lease = Lead("http://new-leader");
  s->SetFence(lease + 1);  // a lease that does not hold the key: a former leader's
  EXPECT_THAT(s->Append(Submits(1, 2)),
              StatusIs(StatusCode::kFailedPrecondition, HasSubstr("\"http://new-leader\"")));
  StatusOr<std::vector<InputRecord>> in = OpenStore()->ReadInputs();
  ASSERT_THAT(in, IsOk());
  EXPECT_TRUE(in->empty());
}

TEST_F(EtcdStoreTest, ASeqWrittenByAnotherIsNeverWrittenTwice) {
  std::unique_ptr<EtcdStore> a = OpenStore();
  std::unique_ptr<EtcdStore> b = OpenStore();  // believes the log is empty
  const int64_t lease = Lead("http://a");
  a->SetFence(lease);
  b->SetFence(lease);
  ASSERT_THAT(a->Append(Submits(1, 1)), IsOk());
  Change other = Submit(1, 7);
  EXPECT_THAT(b->Append({other}),
              StatusIs(StatusCode::kFailedPrecondition, HasSubstr("was written by another")));
  StatusOr<std::vector<InputRecord>> in = OpenStore()->ReadInputs();
  ASSERT_THAT(in, IsOk());
  ASSERT_EQ(in->size(), 1u);
  EXPECT_EQ((*in)[0].job_id, 1);
}

TEST_F(EtcdStoreTest, ABigBatchIsSplitIntoTransactionsOfAtMostTheOpLimit) {
  std::unique_ptr<EtcdStore> s = OpenStore();
  s->SetFence(Lead("http://a"));
  ASSERT_THAT(s->Append(Submits(1, 250)), IsOk());
  EXPECT_EQ(s->append_txns(), 3);  // 100 + 100 + 50
  EXPECT_EQ(s->last_seq(), 250);
}

TEST_F(EtcdStoreTest, APrefixWithOtherKeysIsRefused) {
  ASSERT_THAT(client_->Put(prefix_ + "/something", "else"), IsOk());
  EtcdStoreOptions so;
  so.prefix = prefix_;
  EXPECT_THAT(EtcdStore::Open(client_, so),
              StatusIs(StatusCode::kFailedPrecondition, HasSubstr("is not a toposched store")));
}

TEST_F(EtcdStoreTest, AnotherLayoutVersionIsRefused) {
  ASSERT_THAT(client_->Put(prefix_ + "/schema", "99"), IsOk());
  EtcdStoreOptions so;
  so.prefix = prefix_;
  EXPECT_THAT(EtcdStore::Open(client_, so),
              StatusIs(StatusCode::kFailedPrecondition, HasSubstr("layout version \"99\"")));
}

TEST_F(EtcdStoreTest, NoMemberReachableIsUnavailableNamingEachMember) {
  EtcdOptions o;
  o.endpoints = {"http://127.0.0.1:" + std::to_string(testing::FreeLoopbackPort())};
  o.timeout_ms = 500;
  EtcdStoreOptions so;
  so.prefix = prefix_;
  EXPECT_THAT(EtcdStore::Open(std::make_shared<EtcdClient>(o), so),
              StatusIs(StatusCode::kUnavailable, HasSubstr(o.endpoints[0])));
}

TEST_F(EtcdStoreTest, TheSecondCandidateSeesTheLeaderAndWinsOnceItResigns) {
  ElectionOptions eo;
  eo.key = prefix_ + "/leader";
  eo.lease_ttl_s = 5;
  eo.identity = "http://first";
  LeaderElection first(client_, eo);
  eo.identity = "http://second";
  LeaderElection second(client_, eo);
  EXPECT_EQ(StepEvent(first), LeaderElection::Event::kElected);
  EXPECT_EQ(StepEvent(second), LeaderElection::Event::kNone);
  EXPECT_EQ(second.leader_identity(), "http://first");
  ASSERT_THAT(first.Resign(), IsOk());
  EXPECT_EQ(StepEvent(second), LeaderElection::Event::kElected);
  EXPECT_TRUE(second.leader());
}

TEST_F(EtcdStoreTest, ALeaderWhoseLeaseWasRevokedLearnsItLost) {
  ElectionOptions eo;
  eo.key = prefix_ + "/leader";
  eo.identity = "http://a";
  eo.lease_ttl_s = 3;
  LeaderElection e(client_, eo);
  ASSERT_EQ(StepEvent(e), LeaderElection::Event::kElected);
  ASSERT_THAT(client_->LeaseRevoke(e.lease()), IsOk());          // as if it had expired
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // a third of the TTL: renewal due
  EXPECT_EQ(StepEvent(e), LeaderElection::Event::kLost);
  EXPECT_FALSE(e.leader());
}

TEST_F(EtcdMemberLossTest, OneMemberDownAppendsAndReadsGoOn) {
  std::unique_ptr<EtcdStore> s = OpenStore();
  s->SetFence(Lead("http://a"));
  ASSERT_THAT(s->Append(Submits(1, 1)), IsOk());
  cluster_->Kill(0);  // the member the client prefers first
  EXPECT_THAT(s->Append(Submits(2, 1)), IsOk());
  StatusOr<std::vector<InputRecord>> in = s->ReadInputs();
  EXPECT_THAT(in, IsOk());
  EXPECT_EQ(in.ok() ? in->size() : 0u, 2u);
  ASSERT_TRUE(cluster_->Restart(0));
  EXPECT_TRUE(cluster_->WaitWritable(std::chrono::seconds(10)));
}

}  // namespace
}  // namespace toposched::store
