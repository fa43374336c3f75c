// The replicated daemon: real `toposched serve` children sharing a store on a real three-member
// etcd cluster on loopback (tests/testing/etcd_cluster.h), with a 2 s leadership lease. A
// standby serves reads with its applied sequence number and redirects writes; the leader's
// kill -9 loses no acknowledged job and a standby takes over within the lease; a paused leader
// resumed after its lease cannot append and steps down; one etcd member's loss does not stop
// scheduling; a burst of submits is committed in fewer transactions than submits; the whole log
// replays to a state without a GPU in two jobs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "api/api_testing.h"
#include "api/service.h"
#include "store/etcd_store.h"
#include "testing/etcd_cluster.h"
#include "testing/status_matchers.h"
#include "topo/io/cluster_yaml.h"

namespace toposched::api {
namespace {

using nlohmann::json;
using toposched::testing::IsOk;
using Clock = std::chrono::steady_clock;

constexpr const char* kHaToken = "ha-test-token-0123456789";
// The tests' lease: short, so that a takeover takes seconds; long beside a renewal every third
// of it on a loaded test machine.
constexpr int kLeaseTtlS = 2;

class HaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::EtcdInstalled()) {
      GTEST_SKIP() << testing::kEtcdBinary
                   << " is absent: install etcd-server (scripts/install-deps.sh)";
    }
    ASSERT_TRUE(etcd_.Start()) << "the etcd cluster did not start (logs in " << etcd_.dir() << ")";
    dir_ = testing_api::MakeTempDir("toposched-ha");
    testing_api::WriteFile(dir_ + "/token", std::string(kHaToken) + "\n");
  }
  void TearDown() override {
    daemons_.clear();
    if (!HasFailure()) testing_api::RemoveDir(dir_);
  }

  std::string ClusterFile() const {
    return std::string(TS_SOURCE_DIR) + "/data/clusters/h100-2rack.yaml";
  }

  void StartDaemons(int n) {
    for (int i = 0; i < n; ++i) {
      const int port = testing::FreeLoopbackPort();
      const std::string d = dir_ + "/d" + std::to_string(i);
      std::filesystem::create_directories(d);
      auto p = std::make_unique<testing_api::ServeProcess>(TS_CLI, ClusterFile(), etcd_.Url(),
                                                           dir_ + "/token", d);
      p->set_listen("127.0.0.1:" + std::to_string(port));
      p->set_extra_args(
          {"--advertise-url", Url(port), "--lease-ttl-s", std::to_string(kLeaseTtlS)});
      ASSERT_TRUE(p->Start()) << p->log(0);
      ports_.push_back(port);
      daemons_.push_back(std::move(p));
    }
  }
  static std::string Url(int port) { return "http://127.0.0.1:" + std::to_string(port); }

  static httplib::Result Get(int port, const std::string& path) {
    httplib::Client c("127.0.0.1", port);
    c.set_connection_timeout(1, 0);
    c.set_read_timeout(5, 0);
    return c.Get(path);
  }
  static httplib::Result Post(int port, const std::string& path, const std::string& body,
                              const std::string& key) {
    httplib::Client c("127.0.0.1", port);
    c.set_connection_timeout(1, 0);
    c.set_read_timeout(10, 0);
    httplib::Headers h = {{"Authorization", std::string("Bearer ") + kHaToken}};
    if (!key.empty()) h.emplace("Idempotency-Key", key);
    return c.Post(path, h, body, "application/json");
  }

  // The daemon whose /readyz says it leads, waited for (-1 after `timeout`).
  int WaitLeader(std::chrono::milliseconds timeout, int not_this = -1) {
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      for (size_t i = 0; i < daemons_.size(); ++i) {
        if (static_cast<int>(i) == not_this || !daemons_[i]->running()) continue;
        httplib::Result r = Get(ports_[i], "/readyz");
        if (r && r->status == 200) return static_cast<int>(i);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }

  // Submits a 1-GPU job until it is acknowledged: a standby's redirect followed, a refusal or a
  // lost connection retried with the same key. Its id, or 0 at the deadline.
  int64_t SubmitAcked(const std::string& name, const std::string& key, Clock::time_point deadline,
                      size_t start = 0) {
    size_t i = start;
    while (Clock::now() < deadline) {
      const int port = ports_[i % ports_.size()];
      if (daemons_[i % ports_.size()]->running()) {
        httplib::Result r = Post(port, "/api/v1/jobs", testing_api::JobJson(name, 1), key);
        if (r && r->status == 307) {
          const std::string loc = r->get_header_value("Location");
          const int to = std::atoi(loc.substr(loc.rfind(':') + 1).c_str());
          r = Post(to, "/api/v1/jobs", testing_api::JobJson(name, 1), key);
        }
        if (r && (r->status == 200 || r->status == 201)) {
          return json::parse(r->body).value("id", int64_t{0});
        }
      }
      ++i;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return 0;
  }

  // The jobs a daemon lists: idempotency key → ids.
  std::map<std::string, std::vector<int64_t>> JobsByKey(int d) {
    std::map<std::string, std::vector<int64_t>> out;
    httplib::Result r = Get(ports_[d], "/api/v1/jobs?limit=100000");
    EXPECT_TRUE(r && r->status == 200);
    if (!r || r->status != 200) return out;
    const json body = json::parse(r->body);
    for (const json& j : body["jobs"]) {
      out[j.value("idempotency_key", "")].push_back(j.value("id", int64_t{0}));
    }
    return out;
  }

  // A metric's value on a daemon (-1 when absent).
  double Metric(int d, const std::string& name) {
    httplib::Result r = Get(ports_[d], "/metrics");
    if (!r) return -1;
    const std::string& t = r->body;
    const size_t at = t.find("\n" + name + " ");
    if (at == std::string::npos) return -1;
    return std::atof(t.c_str() + at + name.size() + 2);
  }

  // The whole log replayed by a fresh standby, as a new replica catches up: its invariants (no
  // GPU in two jobs) and its applied seq.
  int64_t ReplayedSeqChecked() {
    StatusOr<topo::Cluster> cluster = topo::io::ReadClusterYamlFile(ClusterFile());
    EXPECT_THAT(cluster, IsOk());
    if (!cluster.ok()) return -1;
    cluster->Finalize();
    store::EtcdOptions eo;
    eo.endpoints = etcd_.Endpoints();
    StatusOr<std::unique_ptr<store::EtcdStore>> st =
        store::EtcdStore::Open(std::make_shared<store::EtcdClient>(eo), {});
    EXPECT_THAT(st, IsOk());
    if (!st.ok()) return -1;
    ServiceOptions o;
    o.db_path = etcd_.Url();
    o.standby = true;
    o.background_passes = false;
    StatusOr<std::unique_ptr<Service>> svc = Service::Open(*cluster, o, std::move(st).value());
    EXPECT_THAT(svc, IsOk());  // Open checks the replayed events against the stored ones
    if (!svc.ok()) return -1;
    EXPECT_THAT((*svc)->CheckInvariants(), IsOk());
    return (*svc)->applied_seq();
  }

  testing::EtcdCluster etcd_{3};
  std::string dir_;
  std::vector<std::unique_ptr<testing_api::ServeProcess>> daemons_;
  std::vector<int> ports_;
};

TEST_F(HaTest, AStandbyServesReadsWithItsSeqAndRedirectsWrites) {
  StartDaemons(2);
  const int leader = WaitLeader(std::chrono::seconds(10));
  ASSERT_GE(leader, 0);
  const int standby = 1 - leader;
  httplib::Result sub = Post(ports_[leader], "/api/v1/jobs", testing_api::JobJson("a", 1), "k1");
  ASSERT_TRUE(sub);
  EXPECT_EQ(sub->status, 201);
  // The standby applies it within its tick (100 ms).
  httplib::Result read = Get(ports_[standby], "/api/v1/jobs/1");
  for (int i = 0; i < 100 && !(read && read->status == 200); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    read = Get(ports_[standby], "/api/v1/jobs/1");
  }
  ASSERT_TRUE(read);
  EXPECT_EQ(read->status, 200);
  EXPECT_GE(std::atoll(read->get_header_value("X-Toposched-Applied-Seq").c_str()), 1);
  EXPECT_FALSE(read->has_header("X-Toposched-Stale"));
  httplib::Result write = Post(ports_[standby], "/api/v1/jobs", testing_api::JobJson("b", 1), "k2");
  ASSERT_TRUE(write);
  EXPECT_EQ(write->status, 307);
  EXPECT_EQ(write->get_header_value("Location"), Url(ports_[leader]) + "/api/v1/jobs");
  // The CLI, given the standby, follows its redirect to the leader.
  testing_api::WriteFile(dir_ + "/job.json", testing_api::JobJson("via-standby", 1));
  const std::string cmd = std::string(TS_CLI) + " submit " + dir_ + "/job.json --server " +
                          Url(ports_[standby]) + " --token-file " + dir_ + "/token >" + dir_ +
                          "/cli.out 2>&1";
  EXPECT_EQ(WEXITSTATUS(std::system(cmd.c_str())), 0) << testing_api::ReadFile(dir_ + "/cli.out");
  EXPECT_EQ(testing_api::ReadFile(dir_ + "/cli.out"), "2\n");
  httplib::Result ready = Get(ports_[standby], "/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 503);
  EXPECT_EQ(Metric(standby, "toposched_leader"), 0);
  EXPECT_EQ(Metric(leader, "toposched_leader"), 1);
  EXPECT_EQ(Metric(leader, "toposched_leader_changes_total"), 1);
}

TEST_F(HaTest, TheLeadersKill9LosesNoAcknowledgedJobAndAStandbyTakesOverWithinTheLease) {
  StartDaemons(2);
  const int leader = WaitLeader(std::chrono::seconds(10));
  ASSERT_GE(leader, 0);
  constexpr int kClients = 4;
  std::mutex mu;
  std::map<std::string, int64_t> acked;  // key → id
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      for (int i = 0; !stop; ++i) {
        const std::string key = "c" + std::to_string(c) + "-" + std::to_string(i);
        const int64_t id = SubmitAcked(key, key, Clock::now() + std::chrono::seconds(15), c);
        if (id == 0) continue;
        std::lock_guard<std::mutex> lk(mu);
        acked[key] = id;
      }
    });
  }
  auto acked_count = [&] {
    std::lock_guard<std::mutex> lk(mu);
    return acked.size();
  };
  const auto until = Clock::now() + std::chrono::seconds(10);
  while (acked_count() < 20 && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  daemons_[leader]->Kill(SIGKILL);
  const auto killed = Clock::now();
  const int next = WaitLeader(std::chrono::seconds(10), leader);
  const auto took_over = Clock::now();
  ASSERT_GE(next, 0);
  const size_t at_takeover = acked_count();
  const auto more = Clock::now() + std::chrono::seconds(10);
  while (acked_count() < at_takeover + 20 && Clock::now() < more) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop = true;
  for (std::thread& t : clients) t.join();
  // The lease expires at most a TTL after the kill; a standby campaigns every 100 ms.
  EXPECT_LE(took_over - killed, std::chrono::seconds(2 * kLeaseTtlS));
  EXPECT_GE(acked.size(), at_takeover + 20);
  const std::map<std::string, std::vector<int64_t>> listed = JobsByKey(next);
  for (const auto& [key, id] : acked) {
    auto it = listed.find(key);
    ASSERT_NE(it, listed.end()) << key << " was acknowledged as job-" << id << " and is lost";
    EXPECT_EQ(it->second, std::vector<int64_t>{id}) << key;
  }
  // A fresh replica replays the log to the leader's applied seq. The leader keeps appending
  // while its passes start the queued jobs, so the two are compared once the leader's seq held
  // still across the whole replay (a few tries; each replay takes well under a second).
  double before = -1, replayed = -2, after = -3;
  for (int i = 0; i < 20 && !(before == after && replayed == after); ++i) {
    before = Metric(next, "toposched_applied_seq");
    replayed = static_cast<double>(ReplayedSeqChecked());
    after = Metric(next, "toposched_applied_seq");
  }
  EXPECT_EQ(before, after) << "the leader's applied seq never held still across a replay";
  EXPECT_EQ(replayed, after);
}

TEST_F(HaTest, APausedLeaderResumedAfterItsLeaseCannotAppendAndStepsDown) {
  StartDaemons(2);
  const int old_leader = WaitLeader(std::chrono::seconds(10));
  ASSERT_GE(old_leader, 0);
  daemons_[old_leader]->Signal(SIGSTOP);
  const int next = WaitLeader(std::chrono::seconds(10), old_leader);
  ASSERT_GE(next, 0);
  // A write queued at the paused leader: answered once it runs again.
  std::atomic<int> status{0};
  std::thread queued([&] {
    httplib::Result r =
        Post(ports_[old_leader], "/api/v1/jobs", testing_api::JobJson("late", 1), "late-key");
    status = r ? r->status : -1;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  daemons_[old_leader]->Signal(SIGCONT);
  queued.join();
  EXPECT_NE(status.load(), 201) << "the fenced leader acknowledged a write";
  EXPECT_NE(status.load(), 200);
  // It rebuilds itself as a standby and names the new leader.
  json ready;
  for (int i = 0; i < 200; ++i) {
    httplib::Result r = Get(ports_[old_leader], "/readyz");
    if (r && r->status == 503) ready = json::parse(r->body, nullptr, false);
    if (ready.is_object() && ready.value("leader_url", "") == Url(ports_[next])) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ASSERT_TRUE(ready.is_object());
  EXPECT_FALSE(ready.value("leader", true));
  EXPECT_EQ(ready.value("leader_url", ""), Url(ports_[next]));
  EXPECT_EQ(JobsByKey(next).count("late-key"), 0u);
  // The log stays linear: it replays (every seq once, in order) to the new leader's position.
  EXPECT_EQ(ReplayedSeqChecked(), Metric(next, "toposched_applied_seq"));
}

TEST_F(HaTest, OneEtcdMemberKilledSchedulingGoesOn) {
  StartDaemons(1);
  ASSERT_EQ(WaitLeader(std::chrono::seconds(10)), 0);
  etcd_.Kill(0);  // the member each daemon asks first
  for (int i = 0; i < 5; ++i) {
    const std::string key = "m" + std::to_string(i);
    httplib::Result r = Post(ports_[0], "/api/v1/jobs", testing_api::JobJson(key, 1), key);
    ASSERT_TRUE(r) << "no answer to submit " << i;
    EXPECT_EQ(r->status, 201) << r->body;
  }
  EXPECT_EQ(WaitLeader(std::chrono::seconds(1)), 0);
}

TEST_F(HaTest, ABurstOfSubmitsIsCommittedInFewerTransactionsThanSubmits) {
  StartDaemons(1);
  ASSERT_EQ(WaitLeader(std::chrono::seconds(10)), 0);
  const double before = Metric(0, "toposched_store_txns_total");
  constexpr int kBurst = 40;
  std::atomic<int> created{0};
  std::vector<std::thread> burst;
  for (int i = 0; i < kBurst; ++i) {
    burst.emplace_back([&, i] {
      const std::string key = "b" + std::to_string(i);
      httplib::Result r = Post(ports_[0], "/api/v1/jobs", testing_api::JobJson(key, 1), key);
      if (r && r->status == 201) ++created;
    });
  }
  for (std::thread& t : burst) t.join();
  const double txns = Metric(0, "toposched_store_txns_total") - before;
  EXPECT_EQ(created.load(), kBurst);
  // Each submit is an input, and the passes they trigger more: one transaction each without
  // group commit.
  EXPECT_LT(txns, kBurst);
}

// `toposched store check` on the etcd store: its exit code, stdout and stderr.
struct CheckRun {
  int code = -1;
  std::string out, err;
};

CheckRun StoreCheckOf(const std::string& dir, const std::string& store, const std::string& prefix) {
  const std::string cmd = std::string(TS_CLI) + " store check --cluster " + TS_SOURCE_DIR +
                          "/data/clusters/h100-2rack.yaml --store " + store + " --store-prefix " +
                          prefix + " >" + dir + "/check.out 2>" + dir + "/check.err";
  CheckRun r;
  r.code = WEXITSTATUS(std::system(cmd.c_str()));
  r.out = testing_api::ReadFile(dir + "/check.out");
  r.err = testing_api::ReadFile(dir + "/check.err");
  return r;
}

TEST_F(HaTest, StoreCheckReplaysTheLogWithTheInvariantsAfterEachInput) {
  StartDaemons(1);
  ASSERT_EQ(WaitLeader(std::chrono::seconds(10)), 0);
  for (int i = 0; i < 3; ++i) {
    const std::string key = "s" + std::to_string(i);
    httplib::Result r = Post(ports_[0], "/api/v1/jobs", testing_api::JobJson(key, 8), key);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 201) << r->body;
  }
  const CheckRun r = StoreCheckOf(dir_, etcd_.Url(), "/toposched");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::HasSubstr("invariants after each input: ok\n"));
  EXPECT_THAT(r.out, ::testing::HasSubstr("idempotency keys on two submits: 0\n"));
  EXPECT_THAT(r.out, ::testing::HasSubstr("log keys written more than once: 0\n"));
  EXPECT_THAT(r.out,
              ::testing::HasSubstr(
                  "inputs: " +
                  std::to_string(static_cast<int64_t>(Metric(0, "toposched_applied_seq"))) + "\n"));
}

TEST_F(HaTest, StoreCheckFindsALogKeyWrittenTwice) {
  StartDaemons(1);
  ASSERT_EQ(WaitLeader(std::chrono::seconds(10)), 0);
  httplib::Result sub = Post(ports_[0], "/api/v1/jobs", testing_api::JobJson("a", 1), "a");
  ASSERT_TRUE(sub);
  ASSERT_EQ(sub->status, 201);
  // The same bytes written again at input 1: the log still replays, but its key's etcd version
  // is 2, which no fenced append can cause.
  store::EtcdOptions eo;
  eo.endpoints = etcd_.Endpoints();
  store::EtcdClient client(eo);
  const std::string key = "/toposched/log/00000000000000000001";
  StatusOr<store::EtcdRange> first = client.Range(key, "", 1);
  ASSERT_THAT(first, IsOk());
  ASSERT_EQ(first->kvs.size(), 1u);
  ASSERT_THAT(client.Put(key, first->kvs[0].value), IsOk());
  const CheckRun r = StoreCheckOf(dir_, etcd_.Url(), "/toposched");
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.out, ::testing::HasSubstr("log keys written more than once: 1 (first: " + key +
                                          " (version 2))\n"));
}

TEST_F(HaTest, StoreCheckRefusesAnEmptyPrefixWithoutWritingIt) {
  const CheckRun r = StoreCheckOf(dir_, etcd_.Url(), "/nothing-here");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "toposched: etcd prefix /nothing-here/ holds no store (no keys under it)\n");
  store::EtcdOptions eo;
  eo.endpoints = etcd_.Endpoints();
  StatusOr<store::EtcdRange> any =
      store::EtcdClient(eo).Range("/nothing-here/", "/nothing-here0", 0, true);
  ASSERT_THAT(any, IsOk());
  EXPECT_EQ(any->count, 0);
}

// `serve --store`: the flags' errors are one line and exit 1, before anything is written;
// `sqlite:PATH` is `--db PATH`.
class ServeStoreFlagsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing_api::MakeTempDir("toposched-store-flags");
    testing_api::WriteFile(dir_ + "/token", std::string(kHaToken) + "\n");
  }
  void TearDown() override { testing_api::RemoveDir(dir_); }
  // Starts serve on `store` with `extra` flags; its log once it exited ("" when it serves).
  std::string Refusal(const std::string& store, std::vector<std::string> extra) {
    testing_api::ServeProcess p(TS_CLI,
                                std::string(TS_SOURCE_DIR) + "/data/clusters/h100-2rack.yaml",
                                store, dir_ + "/token", dir_);
    p.set_extra_args(std::move(extra));
    if (p.Start(std::chrono::seconds(30))) return "";
    return p.log(0);
  }
  std::string dir_;
};

TEST_F(ServeStoreFlagsTest, EtcdUnreachableAtStartIsOneLineNamingTheMember) {
  const std::string member = "127.0.0.1:" + std::to_string(testing::FreeLoopbackPort());
  const std::string log = Refusal("etcd://" + member, {"--advertise-url", "http://127.0.0.1:1"});
  EXPECT_THAT(log, ::testing::HasSubstr("toposched: etcd unreachable"));
  EXPECT_THAT(log, ::testing::HasSubstr("http://" + member));
}

TEST_F(ServeStoreFlagsTest, AnUnknownStoreSchemeIsRefused) {
  EXPECT_THAT(Refusal("mysql://db", {}),
              ::testing::HasSubstr("--store: expected sqlite:PATH or etcd://"));
}

TEST_F(ServeStoreFlagsTest, EtcdWithoutAnAdvertisedUrlIsRefused) {
  EXPECT_THAT(Refusal("etcd://127.0.0.1:2379", {}),
              ::testing::HasSubstr("--advertise-url: needed with an etcd store"));
}

TEST_F(ServeStoreFlagsTest, SqliteColonPathIsTheDbFile) {
  EXPECT_EQ(Refusal("sqlite:" + dir_ + "/state.db", {}), "");
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/state.db"));
}

}  // namespace
}  // namespace toposched::api
