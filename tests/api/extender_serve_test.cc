// The Kubernetes extender served by the daemon, against a real SQLite file on 127.0.0.1 port 0:
// a pod group is a job in the daemon's one queue (sched::SubmitPodGroup). The verbs on the
// served instance (`toposched serve`), a 16-pod gang sent pod by pod over HTTP, REST jobs and pod
// groups never sharing a GPU (either order), priority preemption both ways with the preempted
// group's pods evicted, an idle group's job expiring, and what a restart keeps.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "api/api_testing.h"
#include "api/extender_testing.h"
#include "api/server.h"
#include "api/service.h"
#include "placer/gang.h"
#include "state/cluster_state.h"
#include "testing/clusters.h"
#include "testing/status_matchers.h"

namespace toposched::api {
namespace {

using ::toposched::testing::HasSubstr;

using nlohmann::json;
using testing_api::Pod;

constexpr const char* kServeToken = "extender-serve-token-0123456789";
constexpr int64_t kTimeoutUs = int64_t{300} * 1000 * 1000;

// Rank `rank` of the 16-pod gang ml/llama (8 GPUs a pod, TP 8 x DP 16).
json GangPod(int rank) {
  const std::string name = "llama-" + std::to_string(rank);
  return Pod(name, "uid-" + name, 8,
             {{"toposched.io/pod-group", "llama"},
              {"batch.kubernetes.io/job-completion-index", std::to_string(rank)}},
             {{"toposched.io/group-size", "16"},
              {"toposched.io/tp", "8"},
              {"toposched.io/dp", "16"},
              {"toposched.io/model-params", "70B"}});
}

// Records evictions (the API server's side is tested in kube_binder_test.cc).
class RecordingEvictor : public PodEvictor {
 public:
  Status Evict(const PodRef& pod, const std::string& reason) override {
    std::lock_guard<std::mutex> lk(mu_);
    evicted_.push_back(pod.name_space + "/" + pod.name);
    reasons_.push_back(reason);
    return OkStatus();
  }
  std::vector<std::string> Evicted() {
    std::lock_guard<std::mutex> lk(mu_);
    return evicted_;
  }
  std::vector<std::string> Reasons() {
    std::lock_guard<std::mutex> lk(mu_);
    return reasons_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> evicted_, reasons_;
};

class ExtenderServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing_api::MakeTempDir("toposched-ext-serve");
    cluster_ = &toposched::testing::H100Cluster();
    for (const auto& n : cluster_->nodes) all_.push_back(n.name);
    Boot();
  }
  void TearDown() override {
    Shutdown();
    testing_api::RemoveDir(dir_);
  }

  void Boot(bool extender = true) {
    ServiceOptions o;
    o.db_path = dir_ + "/state.db";
    o.background_passes = false;
    o.clock_us = [this] { return now_us_; };
    o.extender = extender;
    o.extender_options.reservation_timeout_us = kTimeoutUs;
    o.evictor = &evictor_;
    Open(o);
  }
  // Opens the service with `o` and serves it over HTTP (the extender verbs when o.extender).
  void Open(const ServiceOptions& o) {
    auto s = Service::Open(*cluster_, o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    service_ = std::move(s).value();
    ServerOptions so;
    so.token = kServeToken;
    so.log_requests = false;
    if (o.extender) {
      Service* svc = service_.get();
      so.extender = [svc](const std::string& verb, const std::string& body) {
        return svc->ExtenderCall(verb, body);
      };
    }
    auto srv = Server::Start(*service_, so);
    ASSERT_TRUE(srv.ok()) << srv.status().ToString();
    server_ = std::move(srv).value();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(std::chrono::seconds(30));
  }
  void Shutdown() {
    client_.reset();
    server_.reset();
    service_.reset();
  }
  void Restart(bool extender = true) {
    Shutdown();
    Boot(extender);
  }

  // The verbs on the main listener, with the token (kube-scheduler itself uses the extender
  // listener with a client certificate: extender_tls_test.cc).
  json Verb(const std::string& verb, const json& body) {
    auto r = client_->Post("/extender/" + verb,
                           {{"Authorization", std::string("Bearer ") + kServeToken}}, body.dump(),
                           "application/json");
    EXPECT_TRUE(r) << verb;
    if (!r) return json();
    EXPECT_EQ(r->status, 200) << verb << ": " << r->body;
    return json::parse(r->body, nullptr, false);
  }
  json Filter(const json& pod) {
    return Verb("filter", {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", all_}});
  }
  json Bind(const std::string& name, const std::string& node) {
    return Verb(
        "bind",
        {{"PodName", name}, {"PodNamespace", "ml"}, {"PodUID", "uid-" + name}, {"Node", node}});
  }
  httplib::Result PodDeleted(const std::string& name) {
    return client_->Post(
        "/extender/pod-deleted", {{"Authorization", std::string("Bearer ") + kServeToken}},
        json{{"PodName", name}, {"PodNamespace", "ml"}}.dump(), "application/json");
  }
  // Filters (and prioritizes) the pod; returns the one node it passes ("" when none).
  std::string Place(const json& pod) {
    json f = Filter(pod);
    EXPECT_EQ(f.value("Error", "x"), "") << f.dump();
    if (!f["NodeNames"].is_array() || f["NodeNames"].size() != 1) return "";
    const std::string node = f["NodeNames"][0];
    json p = Verb("prioritize", {{"Pod", pod}, {"NodeNames", all_}});
    for (const json& hp : p) EXPECT_EQ(hp["Score"], hp["Host"] == node ? 10 : 0);
    return node;
  }

  int64_t Submit(int gpus, const std::string& name, int priority = 0) {
    json spec = json::parse(testing_api::JobJson(name, gpus));
    if (priority != 0) spec["priority"] = priority;
    auto r =
        client_->Post("/api/v1/jobs", {{"Authorization", std::string("Bearer ") + kServeToken}},
                      spec.dump(), "application/json");
    EXPECT_TRUE(r && r->status == 201) << (r ? r->body : "no answer");
    return r ? json::parse(r->body).value("id", int64_t{0}) : 0;
  }
  void Pass() {
    auto r =
        client_->Post("/api/v1/schedule", {{"Authorization", std::string("Bearer ") + kServeToken}},
                      "{}", "application/json");
    ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
  }
  void Complete(int64_t id) {
    auto r = client_->Post("/api/v1/jobs/" + std::to_string(id) + "/complete",
                           {{"Authorization", std::string("Bearer ") + kServeToken}}, "{}",
                           "application/json");
    ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
  }
  // The gang's job id (0 when it has none).
  int64_t GangJob(const std::string& key) {
    auto g = service_->extender()->Gang(key);
    return g ? g->job : 0;
  }
  json Job(int64_t id) {
    auto r = client_->Get("/api/v1/jobs/" + std::to_string(id));
    EXPECT_TRUE(r && r->status == 200);
    return r ? json::parse(r->body) : json();
  }
  // Node name → GPUs of running REST jobs on it.
  std::map<std::string, std::set<int>> JobGpus(const std::vector<int64_t>& ids) {
    std::map<std::string, std::set<int>> out;
    for (int64_t id : ids) {
      json j = Job(id);
      if (j["placement"].is_null()) continue;
      for (const json& part : j["placement"]["nodes"]) {
        for (int g : part["gpus"]) {
          EXPECT_TRUE(out[part["node"]].insert(g).second) << "GPU given twice";
        }
      }
    }
    return out;
  }
  // Node name → GPUs of the gang's reserved or bound slots.
  std::map<std::string, std::set<int>> GangGpus(const std::string& key) {
    std::map<std::string, std::set<int>> out;
    auto g = service_->extender()->Gang(key);
    if (!g) return out;
    for (const GangSlotView& s : g->slots) {
      for (int x : s.gpus) out[s.node].insert(x);
    }
    return out;
  }
  static void ExpectDisjoint(const std::map<std::string, std::set<int>>& a,
                             const std::map<std::string, std::set<int>>& b) {
    for (const auto& [node, gpus] : a) {
      auto it = b.find(node);
      if (it == b.end()) continue;
      for (int g : gpus) EXPECT_EQ(it->second.count(g), 0u) << node << " GPU " << g;
    }
  }
  int FreeGpus() {
    auto r = client_->Get("/api/v1/nodes");
    int free = 0;
    const json nodes = json::parse(r->body);
    for (const json& n : nodes["nodes"]) free += n["free"].get<int>();
    return free;
  }

  RecordingEvictor evictor_;
  std::string dir_;
  const topo::Cluster* cluster_ = nullptr;
  std::vector<std::string> all_;
  int64_t now_us_ = 1'700'000'000'000'000;
  std::unique_ptr<Service> service_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(ExtenderServeTest, SixteenPodGangLandsWhereTheGangPlacementSaid) {
  // What the gang placer decides for the whole job on the empty cluster.
  auto placer = sched::GangPlacer::Create(*cluster_).value();
  const job::JobSpec spec = testing_api::LlamaGangSpec();
  sched::Verdict want = placer->Place(sched::ClusterState::Create(*cluster_).value(), spec);
  ASSERT_TRUE(want.fit()) << want.Explain();

  const int order[16] = {5, 0, 11, 15, 2, 9, 1, 14, 7, 3, 12, 8, 6, 13, 4, 10};
  for (int rank : order) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const std::string node = cluster_->nodes[want.placement->ranks[rank * 8].node].name;
    EXPECT_EQ(Place(GangPod(rank)), node);
    EXPECT_EQ(Bind("llama-" + std::to_string(rank), node), json({{"Error", ""}}));
    now_us_ += 50'000;
  }
  auto g = service_->extender()->Gang("ml/llama");
  ASSERT_TRUE(g.has_value());
  for (int rank = 0; rank < 16; ++rank) {
    EXPECT_TRUE(g->slots[rank].bound);
    std::vector<int> gpus;
    for (int r = rank * 8; r < rank * 8 + 8; ++r) gpus.push_back(want.placement->ranks[r].gpu);
    std::sort(gpus.begin(), gpus.end());
    EXPECT_EQ(g->slots[rank].gpus, gpus);
  }
  // The scheduler's own view: 128 GPUs held by the gang, shown on its nodes.
  EXPECT_EQ(FreeGpus(), 256 - 128);
  json nodes = json::parse(client_->Get("/api/v1/nodes")->body)["nodes"];
  int gang_nodes = 0;
  for (const json& n : nodes) {
    if (n["pod_gangs"] == json::array({"ml/llama"})) {
      ++gang_nodes;
      EXPECT_EQ(n["free"], 0);
    }
  }
  EXPECT_EQ(gang_nodes, 16);
  EXPECT_THAT(client_->Get("/metrics")->body, HasSubstr("toposched_k8s_pod_gpus 128"));
  EXPECT_TRUE(service_->CheckInvariants().ok()) << service_->CheckInvariants().ToString();
}

TEST_F(ExtenderServeTest, RestJobsNeverGetThePodGroupsGpusAndItsJobEndsWithItsPods) {
  // The first pod queues the whole gang as one job, which starts at once: 128 GPUs, one leaf.
  const std::string node0 = Place(GangPod(0));
  ASSERT_FALSE(node0.empty());
  ASSERT_EQ(Bind("llama-0", node0), json({{"Error", ""}}));
  const auto gang = GangGpus("ml/llama");
  ASSERT_EQ(gang.size(), 16u);
  // 17 whole-node jobs for the 16 free nodes: 16 run beside the gang, one waits.
  std::vector<int64_t> ids;
  for (int i = 0; i < 17; ++i) ids.push_back(Submit(8, "rest-" + std::to_string(i)));
  Pass();
  int running = 0;
  for (int64_t id : ids) running += Job(id)["state"] == "RUNNING" ? 1 : 0;
  EXPECT_EQ(running, 16);
  ExpectDisjoint(JobGpus(ids), gang);
  EXPECT_TRUE(service_->CheckInvariants().ok()) << service_->CheckInvariants().ToString();

  // A pod is bound: the job runs on however long the other pods take.
  now_us_ += kTimeoutUs + 1;
  ASSERT_TRUE(service_->extender()->Sweep().ok());
  EXPECT_EQ(GangGpus("ml/llama"), gang);
  const int64_t job = GangJob("ml/llama");
  EXPECT_EQ(Job(job)["state"], "RUNNING");

  // Its only pod goes: the job completes, the gang is forgotten, the waiting REST job starts.
  auto r = PodDeleted("llama-0");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
  EXPECT_EQ(Job(job)["state"], "COMPLETED");
  EXPECT_FALSE(service_->extender()->Gang("ml/llama").has_value());
  Pass();
  EXPECT_EQ(Job(ids.back())["state"], "RUNNING");
  EXPECT_EQ(FreeGpus(), 256 - 17 * 8);
  EXPECT_TRUE(service_->CheckInvariants().ok()) << service_->CheckInvariants().ToString();
}

TEST_F(ExtenderServeTest, AGroupWhosePodsNeverBindIsCancelledAfterTheTimeout) {
  ASSERT_FALSE(Place(GangPod(0)).empty());
  const int64_t job = GangJob("ml/llama");
  ASSERT_EQ(Job(job)["state"], "RUNNING");
  now_us_ += kTimeoutUs / 2;
  ASSERT_TRUE(service_->extender()->Sweep().ok());
  EXPECT_EQ(Job(job)["state"], "RUNNING");
  now_us_ += kTimeoutUs;
  ASSERT_TRUE(service_->extender()->Sweep().ok());
  EXPECT_EQ(Job(job)["state"], "CANCELLED");
  EXPECT_FALSE(service_->extender()->Gang("ml/llama").has_value());
  EXPECT_EQ(FreeGpus(), 256);
  // A pod that comes back queues the gang again, as a new job.
  ASSERT_FALSE(Place(GangPod(5)).empty());
  EXPECT_GT(GangJob("ml/llama"), job);
  EXPECT_TRUE(service_->CheckInvariants().ok()) << service_->CheckInvariants().ToString();
}

// kube-scheduler's preemption is not how a pod group gets GPUs: the queue preempts (and evicts
// through the API). The preempt verb names no victims for a GPU pod of a pod group, so
// kube-scheduler evicts nothing for it; nothing is freed.
TEST_F(ExtenderServeTest, PreemptVerbNamesNoVictimsForAPodGroup) {
  std::map<std::string, std::string> where;
  for (int i = 0; i < 2; ++i) {
    const std::string name = "duo-" + std::to_string(i);
    const json pod =
        Pod(name, "uid-" + name, 8,
            {{"toposched.io/pod-group", "duo"}, {"toposched.io/pod-index", std::to_string(i)}},
            {{"toposched.io/group-size", "2"}});
    where[name] = Place(pod);
    ASSERT_FALSE(where[name].empty());
    ASSERT_EQ(Bind(name, where[name]), json({{"Error", ""}}));
  }
  std::vector<int64_t> ids;
  for (int i = 0; i < 30; ++i) ids.push_back(Submit(8, "rest-" + std::to_string(i)));
  Pass();
  for (int64_t id : ids) ASSERT_EQ(Job(id)["state"], "RUNNING") << id;
  ASSERT_EQ(FreeGpus(), 0);
  const json big = Pod("big-0", "uid-big-0", 8, {{"toposched.io/pod-group", "big"}},
                       {{"toposched.io/group-size", "2"}});
  json r =
      Verb("preempt",
           {{"Pod", big},
            {"NodeNameToMetaVictims",
             {{where["duo-0"], {{"Pods", {{{"UID", "uid-duo-0"}}}}, {"NumPDBViolations", 0}}}}}});
  EXPECT_EQ(r, json({{"NodeNameToMetaVictims", json::object()}})) << r.dump();
  EXPECT_EQ(FreeGpus(), 0);
  EXPECT_TRUE(evictor_.Evicted().empty());
  EXPECT_TRUE(service_->CheckInvariants().ok()) << service_->CheckInvariants().ToString();
}

// A high-priority REST job preempts a running pod group (whole: its job is requeued, keeping its
// submit time); the group's bound pods are evicted through the API, and when the REST job ends
// the group runs again and its recreated pods land on the new placement.
TEST_F(ExtenderServeTest, HighPriorityRestJobPreemptsAPodGroupAndItsPodsAreEvicted) {
  std::map<std::string, std::string> where;
  auto duo = [](int i) {
    const std::string name = "duo-" + std::to_string(i);
    return Pod(name, "uid-" + name, 8,
               {{"toposched.io/pod-group", "duo"}, {"toposched.io/pod-index", std::to_string(i)}},
               {{"toposched.io/group-size", "2"}});
  };
  for (int i = 0; i < 2; ++i) {
    const std::string name = "duo-" + std::to_string(i);
    where[name] = Place(duo(i));
    ASSERT_FALSE(where[name].empty());
    ASSERT_EQ(Bind(name, where[name]), json({{"Error", ""}}));
  }
  const int64_t group = GangJob("ml/duo");
  std::vector<int64_t> ids;
  for (int i = 0; i < 30; ++i) ids.push_back(Submit(8, "rest-" + std::to_string(i), 10));
  Pass();
  ASSERT_EQ(FreeGpus(), 0);
  // Cheapest victims first: the group (priority 0) costs less than any REST job (priority 10).
  const int64_t vip = Submit(16, "vip", 1000);
  Pass();
  EXPECT_EQ(Job(vip)["state"], "RUNNING");
  EXPECT_EQ(Job(group)["state"], "PENDING");
  for (int64_t id : ids) EXPECT_EQ(Job(id)["state"], "RUNNING") << id;
  ASSERT_TRUE(service_->extender()->Reconcile().ok());
  std::vector<std::string> evicted = evictor_.Evicted();
  std::sort(evicted.begin(), evicted.end());
  EXPECT_EQ(evicted, std::vector<std::string>({"ml/duo-0", "ml/duo-1"}));
  ASSERT_FALSE(evictor_.Reasons().empty());
  EXPECT_THAT(evictor_.Reasons()[0], HasSubstr("was stopped and waits in the queue"))
      << evictor_.Reasons()[0];
  auto g = service_->extender()->Gang("ml/duo");
  ASSERT_TRUE(g.has_value());
  for (const GangSlotView& s : g->slots) EXPECT_TRUE(s.pod.empty() && !s.bound);
  // Evicting again is not needed: the slots are free.
  ASSERT_TRUE(service_->extender()->Reconcile().ok());
  EXPECT_EQ(evictor_.Evicted().size(), 2u);

  // The controller recreates the pods: they wait with the group's place in the queue.
  json f = Filter(duo(0));
  EXPECT_TRUE(f["NodeNames"].empty()) << f.dump();
  EXPECT_THAT(
      f["FailedNodes"].begin()->get<std::string>(),
      HasSubstr("(job-" + std::to_string(group) + "): pending, position 1 of 1 in the queue"))
      << f.dump();
  Complete(vip);
  Pass();
  EXPECT_EQ(Job(group)["state"], "RUNNING");
  for (int i = 0; i < 2; ++i) {
    const std::string name = "duo-" + std::to_string(i);
    const std::string node = Place(duo(i));
    ASSERT_FALSE(node.empty());
    EXPECT_EQ(Bind(name, node), json({{"Error", ""}}));
  }
  ASSERT_TRUE(service_->extender()->Reconcile().ok());
  EXPECT_EQ(evictor_.Evicted().size(), 2u);
  EXPECT_TRUE(service_->CheckInvariants().ok()) << service_->CheckInvariants().ToString();
}

// The reverse: a pod group of PriorityClass value 1000 (the pod's spec.priority) preempts
// low-priority REST jobs, whole, and its pod is answered with its node in the same filter call.
TEST_F(ExtenderServeTest, HighPriorityPodGroupPreemptsRestJobs) {
  std::vector<int64_t> ids;
  for (int i = 0; i < 32; ++i) ids.push_back(Submit(8, "rest-" + std::to_string(i)));
  Pass();
  ASSERT_EQ(FreeGpus(), 0);
  json pod = Pod("urgent-0", "uid-urgent-0", 8,
                 {{"toposched.io/pod-group", "urgent"}, {"toposched.io/pod-index", "0"}},
                 {{"toposched.io/group-size", "2"}});
  pod["spec"]["priority"] = 1000;
  const std::string node = Place(pod);
  ASSERT_FALSE(node.empty());
  const int64_t group = GangJob("ml/urgent");
  const json j = Job(group);
  EXPECT_EQ(j["state"], "RUNNING");
  EXPECT_EQ(j["priority"], 1000);
  EXPECT_EQ(j["source"], "kubernetes");
  EXPECT_EQ(j["pod_group"], "ml/urgent");
  int pending = 0;
  for (int64_t id : ids) pending += Job(id)["state"] == "PENDING" ? 1 : 0;
  EXPECT_EQ(pending, 2);
  EXPECT_EQ(Job(ids[0])["source"], "rest");
  EXPECT_TRUE(service_->CheckInvariants().ok()) << service_->CheckInvariants().ToString();
}

TEST_F(ExtenderServeTest, PodGangsNeverGetTheRestJobsGpus) {
  // 17 whole-node REST jobs: 15 nodes stay free, the 16-pod gang does not fit.
  std::vector<int64_t> ids;
  for (int i = 0; i < 17; ++i) ids.push_back(Submit(8, "rest-" + std::to_string(i)));
  Pass();
  json f = Filter(GangPod(3));
  EXPECT_TRUE(f["NodeNames"].empty()) << f.dump();
  EXPECT_EQ(f["FailedNodes"].size(), all_.size());
  EXPECT_THAT(
      f["FailedNodes"].begin()->get<std::string>(),
      HasSubstr("gang ml/llama (16 pods x 8 GPUs) (job-18): pending, position 1 of 1 in the "
                "queue (queue ml, priority 0): head of queue"))
      << f.dump();
  EXPECT_EQ(FreeGpus(), 256 - 17 * 8);

  // One job ends; the next pass starts the group on the 16 nodes no job holds.
  Complete(ids[0]);
  Pass();
  const std::string node = Place(GangPod(3));
  ASSERT_FALSE(node.empty());
  EXPECT_EQ(GangGpus("ml/llama").size(), 16u);
  ExpectDisjoint(GangGpus("ml/llama"), JobGpus(ids));
  EXPECT_EQ(FreeGpus(), 0);
  // A new REST job waits: every GPU is a job's or the gang's.
  const int64_t late = Submit(1, "late");
  Pass();
  EXPECT_EQ(Job(late)["state"], "PENDING");
  EXPECT_TRUE(service_->CheckInvariants().ok()) << service_->CheckInvariants().ToString();
}

TEST_F(ExtenderServeTest, RestartKeepsBoundPodsAndLiveReservations) {
  std::map<int, std::string> node_of;
  for (int rank = 0; rank < 10; ++rank) {
    node_of[rank] = Place(GangPod(rank));
    ASSERT_FALSE(node_of[rank].empty());
    ASSERT_EQ(Bind("llama-" + std::to_string(rank), node_of[rank]), json({{"Error", ""}}));
  }
  const auto before = GangGpus("ml/llama");
  ASSERT_EQ(before.size(), 16u);

  Restart();
  auto g = service_->extender()->Gang("ml/llama");
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(GangGpus("ml/llama"), before);
  for (int rank = 0; rank < 16; ++rank) EXPECT_EQ(g->slots[rank].bound, rank < 10) << rank;
  EXPECT_EQ(FreeGpus(), 128);
  EXPECT_TRUE(service_->CheckInvariants().ok()) << service_->CheckInvariants().ToString();
  // A REST job cannot take the restored GPUs.
  std::vector<int64_t> ids;
  for (int i = 0; i < 17; ++i) ids.push_back(Submit(8, "rest-" + std::to_string(i)));
  Pass();
  EXPECT_EQ(Job(ids.back())["state"], "PENDING");
  ExpectDisjoint(JobGpus(ids), before);
  // The rest of the gang lands where it was reserved before the restart; a bound pod's bind
  // again is a no-op.
  EXPECT_EQ(Bind("llama-2", node_of[2]), json({{"Error", ""}}));
  for (int rank = 10; rank < 16; ++rank) {
    const std::string node = Place(GangPod(rank));
    EXPECT_EQ(before.count(node), 1u) << node;
    EXPECT_EQ(Bind("llama-" + std::to_string(rank), node), json({{"Error", ""}}));
  }
  EXPECT_EQ(GangGpus("ml/llama"), before);

  // Pods going away free their GPUs (durably): the waiting job starts, and still after a restart.
  for (int rank = 0; rank < 16; ++rank) {
    auto r = PodDeleted("llama-" + std::to_string(rank));
    ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
  }
  EXPECT_FALSE(service_->extender()->Gang("ml/llama").has_value());
  Pass();
  EXPECT_EQ(Job(ids.back())["state"], "RUNNING");
  Restart();
  EXPECT_FALSE(service_->extender()->Gang("ml/llama").has_value());
  EXPECT_EQ(Job(ids.back())["state"], "RUNNING");
  EXPECT_EQ(FreeGpus(), 256 - 17 * 8);
  EXPECT_TRUE(service_->CheckInvariants().ok()) << service_->CheckInvariants().ToString();
}

// The restart counts as progress: pods could not reach a daemon that was down, so an idle group
// gets a whole timeout from the restart, and then expires.
TEST_F(ExtenderServeTest, AnIdleGroupRestoredAfterARestartExpiresATimeoutAfterIt) {
  const std::string node0 = Place(GangPod(0));
  ASSERT_FALSE(node0.empty());
  const int64_t job = GangJob("ml/llama");
  now_us_ += kTimeoutUs + 1;  // down for longer than the timeout
  Restart();
  EXPECT_EQ(GangGpus("ml/llama").size(), 16u);  // restored as it was
  EXPECT_EQ(GangJob("ml/llama"), job);
  ASSERT_TRUE(service_->extender()->Sweep().ok());
  EXPECT_EQ(Job(job)["state"], "RUNNING");
  now_us_ += kTimeoutUs + 1;
  ASSERT_TRUE(service_->extender()->Sweep().ok());
  EXPECT_EQ(Job(job)["state"], "CANCELLED");
  EXPECT_EQ(FreeGpus(), 256);
  Restart();
  EXPECT_FALSE(service_->extender()->Gang("ml/llama").has_value());
  EXPECT_EQ(Job(job)["state"], "CANCELLED");
  EXPECT_TRUE(service_->CheckInvariants().ok()) << service_->CheckInvariants().ToString();
}

TEST_F(ExtenderServeTest, ExtenderOffKeepsThePodsGpusHeld) {
  const std::string node0 = Place(GangPod(0));
  ASSERT_EQ(Bind("llama-0", node0), json({{"Error", ""}}));
  Restart(/*extender=*/false);
  EXPECT_EQ(service_->extender(), nullptr);
  EXPECT_EQ(
      client_
          ->Post("/extender/filter", {{"Authorization", std::string("Bearer ") + kServeToken}},
                 "{}", "application/json")
          ->status,
      404);
  EXPECT_EQ(FreeGpus(), 128);
  EXPECT_TRUE(service_->CheckInvariants().ok());
  Restart();
  EXPECT_EQ(GangGpus("ml/llama").size(), 16u);
}

// A job that starts after waiting is idle only from its start: the reservation timeout does not
// cancel it before its pods had the time to come.
TEST_F(ExtenderServeTest, AGroupThatStartsLateGetsTheWholeTimeoutFromItsStart) {
  std::vector<int64_t> ids;
  for (int i = 0; i < 17; ++i) ids.push_back(Submit(8, "rest-" + std::to_string(i)));
  Pass();
  EXPECT_TRUE(Place(GangPod(0)).empty());  // 15 nodes free: the 16-pod group waits
  const int64_t job = GangJob("ml/llama");
  ASSERT_EQ(Job(job)["state"], "PENDING");
  now_us_ += kTimeoutUs * 5 / 6;
  Complete(ids[0]);
  Pass();
  ASSERT_EQ(Job(job)["state"], "RUNNING");
  now_us_ += kTimeoutUs / 2;  // past the timeout since the gang's last filter, not since its start
  ASSERT_TRUE(service_->extender()->Sweep().ok());
  EXPECT_EQ(Job(job)["state"], "RUNNING");
  now_us_ += kTimeoutUs;
  ASSERT_TRUE(service_->extender()->Sweep().ok());
  EXPECT_EQ(Job(job)["state"], "CANCELLED");
}

// A lone pod's controller recreates it under another name (another gang): when the queue
// preempts a lone pod, its job ends with its eviction instead of waiting for a pod that never
// comes back.
TEST_F(ExtenderServeTest, APreemptedLonePodsJobEndsWithItsEviction) {
  const json solo = Pod("solo", "uid-solo", 8);
  const std::string node = Place(solo);
  ASSERT_FALSE(node.empty());
  ASSERT_EQ(
      Verb("bind",
           {{"PodName", "solo"}, {"PodNamespace", "ml"}, {"PodUID", "uid-solo"}, {"Node", node}}),
      json({{"Error", ""}}));
  const int64_t job = GangJob("ml/solo");
  for (int i = 0; i < 31; ++i) Submit(8, "rest-" + std::to_string(i), 10);
  Pass();
  const int64_t vip = Submit(8, "vip", 1000);
  Pass();
  EXPECT_EQ(Job(vip)["state"], "RUNNING");
  ASSERT_TRUE(service_->extender()->Reconcile().ok());
  EXPECT_EQ(evictor_.Evicted(), std::vector<std::string>({"ml/solo"}));
  EXPECT_EQ(Job(job)["state"], "CANCELLED");
  ASSERT_TRUE(service_->extender()->Reconcile().ok());
  EXPECT_FALSE(service_->extender()->Gang("ml/solo").has_value());
  EXPECT_TRUE(service_->CheckInvariants().ok()) << service_->CheckInvariants().ToString();
}

// The binder runs outside the lock: when the group's job is preempted while its pod is being
// bound, the Binding exists anyway; it is recorded for the run it was made for, and the pod is
// evicted, never left running on GPUs another job got.
class PreemptingBinder : public PodBinder {
 public:
  std::function<void()> during;
  Status Bind(const PodRef&, const std::string&) override {
    if (during) {
      auto f = std::move(during);
      during = nullptr;
      f();
    }
    return OkStatus();
  }
};

TEST_F(ExtenderServeTest, APodBoundWhileItsGroupWasPreemptedIsEvicted) {
  PreemptingBinder binder;
  Shutdown();
  {
    ServiceOptions o;
    o.db_path = dir_ + "/state.db";
    o.background_passes = false;
    o.clock_us = [this] { return now_us_; };
    o.extender = true;
    o.evictor = &evictor_;
    o.binder = &binder;
    Open(o);
  }
  const json solo = Pod("solo", "uid-solo", 8, {{"toposched.io/pod-group", "pair"}},
                        {{"toposched.io/group-size", "2"}});
  const std::string node = Place(solo);
  ASSERT_FALSE(node.empty());
  const int64_t job = GangJob("ml/pair");
  for (int i = 0; i < 30; ++i) Submit(8, "rest-" + std::to_string(i), 10);
  Pass();
  int64_t vip = 0;
  binder.during = [&] {  // on the server's thread: the service itself, not the test's client
    json spec = json::parse(testing_api::JobJson("vip", 16));
    spec["priority"] = 1000;
    auto r = service_->Submit(spec.dump(), "");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    vip = r->id;
    ASSERT_TRUE(service_->RunPass().ok());
  };
  json b =
      Verb("bind",
           {{"PodName", "solo"}, {"PodNamespace", "ml"}, {"PodUID", "uid-solo"}, {"Node", node}});
  EXPECT_THAT(b["Error"].get<std::string>(), HasSubstr("it will be evicted")) << b;
  EXPECT_EQ(Job(vip)["state"], "RUNNING");
  EXPECT_EQ(Job(job)["state"], "PENDING");
  ASSERT_TRUE(service_->extender()->Reconcile().ok());
  EXPECT_EQ(evictor_.Evicted(), std::vector<std::string>({"ml/solo"}));
  EXPECT_EQ(Job(job)["state"], "PENDING");  // a group: its pods come back under the same group
  Shutdown();
}

// A crash between a pod group's submit and the extender's record of it leaves a job no pod can
// reach: at the next start it is cancelled (its GPUs freed), and the pods queue it again.
TEST_F(ExtenderServeTest, APodGroupJobWithoutItsGangRecordIsCancelledAtStart) {
  ASSERT_FALSE(Place(GangPod(0)).empty());
  const int64_t job = GangJob("ml/llama");
  ASSERT_EQ(FreeGpus(), 128);
  Shutdown();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ + "/state.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(db, "DELETE FROM inputs WHERE kind = 'k8s_queue'", nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(db);
  Boot();
  EXPECT_EQ(Job(job)["state"], "CANCELLED");
  EXPECT_EQ(FreeGpus(), 256);
  EXPECT_FALSE(service_->extender()->Gang("ml/llama").has_value());
  ASSERT_FALSE(Place(GangPod(0)).empty());
  EXPECT_GT(GangJob("ml/llama"), job);
  Restart();  // the cancel was stored: nothing to do the second time
  EXPECT_EQ(Job(job)["state"], "CANCELLED");
  EXPECT_TRUE(service_->CheckInvariants().ok()) << service_->CheckInvariants().ToString();
}

TEST_F(ExtenderServeTest, EveryExtenderVerbNeedsTheTokenOnTheMainListener) {
  for (const char* verb : {"filter", "prioritize", "bind", "preempt", "pod-deleted"}) {
    auto r =
        client_->Post(std::string("/extender/") + verb, "{\"PodName\": \"x\"}", "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 401) << verb;
    // kube-scheduler's verbs say where kube-scheduler is served.
    EXPECT_EQ(r->body.find("--extender-listen") != std::string::npos,
              std::string(verb) != "pod-deleted")
        << verb << ": " << r->body;
  }
  EXPECT_TRUE(service_->extender()->GangKeys().empty());
  json f = Filter(GangPod(0));
  EXPECT_EQ(f["NodeNames"].size(), 1u);
}

// REST clients and kube-scheduler at once, with background passes: no GPU is ever given twice,
// and a restart replays to the very same occupancy.
TEST_F(ExtenderServeTest, ConcurrentRestAndPodsNeverShareAGpuAndReplayToTheSameState) {
  Shutdown();
  {
    ServiceOptions o;
    o.db_path = dir_ + "/state.db";
    o.pass_interval_ms = 5;
    o.min_pass_gap_ms = 0;
    o.extender = true;
    Open(o);
  }
  const int port = server_->port();
  std::vector<std::thread> threads;
  std::mutex ids_mu;
  std::vector<int64_t> ids;  // the REST jobs (pod groups' jobs have ids too)
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      httplib::Client cli("127.0.0.1", port);
      cli.set_read_timeout(std::chrono::seconds(30));
      for (int i = 0; i < 20; ++i) {
        auto r = cli.Post("/api/v1/jobs", {{"Authorization", std::string("Bearer ") + kServeToken}},
                          testing_api::JobJson(
                              "rest-" + std::to_string(t) + "-" + std::to_string(i), 1 << (i % 4)),
                          "application/json");
        EXPECT_TRUE(r && r->status == 201);
        if (r && r->status == 201) {
          std::lock_guard<std::mutex> lk(ids_mu);
          ids.push_back(json::parse(r->body).value("id", int64_t{0}));
        }
      }
    });
  }
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      httplib::Client cli("127.0.0.1", port);
      cli.set_read_timeout(std::chrono::seconds(30));
      for (int i = 0; i < 10; ++i) {
        // Gangs of two 4-GPU pods, pod by pod: filter, then bind where it passed.
        const std::string group = "g" + std::to_string(t) + "-" + std::to_string(i);
        for (int rank = 0; rank < 2; ++rank) {
          const std::string name = group + "-" + std::to_string(rank);
          const json pod = Pod(
              name, "uid-" + name, 4,
              {{"toposched.io/pod-group", group}, {"toposched.io/pod-index", std::to_string(rank)}},
              {{"toposched.io/group-size", "2"}});
          const httplib::Headers auth = {{"Authorization", std::string("Bearer ") + kServeToken}};
          auto f = cli.Post("/extender/filter", auth,
                            json{{"Pod", pod}, {"NodeNames", all_}}.dump(), "application/json");
          ASSERT_TRUE(f && f->status == 200);
          const json fj = json::parse(f->body);
          if (fj["NodeNames"].size() != 1) continue;  // the cluster is full for now
          auto b = cli.Post("/extender/bind", auth,
                            json{{"PodName", name},
                                 {"PodNamespace", "ml"},
                                 {"PodUID", "uid-" + name},
                                 {"Node", fj["NodeNames"][0]}}
                                .dump(),
                            "application/json");
          ASSERT_TRUE(b && b->status == 200);
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  ASSERT_TRUE(service_->RunPass().ok());
  EXPECT_TRUE(service_->CheckInvariants().ok()) << service_->CheckInvariants().ToString();
  ASSERT_EQ(ids.size(), 60u);
  std::map<std::string, std::set<int>> pods;
  for (const std::string& key : service_->extender()->GangKeys()) {
    for (const auto& [node, gpus] : GangGpus(key)) {
      for (int g : gpus) EXPECT_TRUE(pods[node].insert(g).second) << node << " " << g;
    }
  }
  EXPECT_FALSE(pods.empty());
  ExpectDisjoint(JobGpus(ids), pods);
  // Groups whose job runs come back as they were; one whose job waits shows no GPUs.
  auto holding = [&] {
    std::map<std::string, std::map<std::string, std::set<int>>> out;
    for (const std::string& key : service_->extender()->GangKeys()) {
      if (auto g = GangGpus(key); !g.empty()) out[key] = g;
    }
    return out;
  };
  const std::string nodes = service_->NodesJson();
  const auto gangs = holding();
  EXPECT_FALSE(gangs.empty());
  Shutdown();
  Boot();
  EXPECT_EQ(service_->NodesJson(), nodes);
  EXPECT_EQ(holding(), gangs);
  EXPECT_TRUE(service_->CheckInvariants().ok()) << service_->CheckInvariants().ToString();
}

// The `toposched serve` binary serves the verbs by default, and not with --no-extender; a
// SIGKILL loses no acknowledged binding. (Not in the TSan build's tsan_tests, which has no
// binary.)
#ifdef TS_CLI
TEST(ExtenderServeBinary, VerbsOnTheServedInstance) {
  const std::string dir = testing_api::MakeTempDir("toposched-ext-bin");
  testing_api::WriteFile(dir + "/token", std::string(kServeToken) + "\n");
  testing_api::ServeProcess serve(TS_CLI,
                                  std::string(TS_SOURCE_DIR) + "/data/clusters/h100-2rack.yaml",
                                  dir + "/state.db", dir + "/token", dir);
  serve.set_extra_args({"--kube-api-server", "none"});
  ASSERT_TRUE(serve.Start()) << serve.log(0);
  std::vector<std::string> all;
  for (const auto& n : toposched::testing::H100Cluster().nodes) all.push_back(n.name);
  const json pod = Pod("solo", "uid-solo", 8);
  std::string node;
  const httplib::Headers auth = {{"Authorization", std::string("Bearer ") + kServeToken}};
  {
    httplib::Client cli("127.0.0.1", serve.port());
    auto f = cli.Post("/extender/filter", auth, json{{"Pod", pod}, {"NodeNames", all}}.dump(),
                      "application/json");
    ASSERT_TRUE(f && f->status == 200) << (f ? f->body : serve.log(0));
    json fj = json::parse(f->body);
    ASSERT_EQ(fj["NodeNames"].size(), 1u) << f->body;
    node = fj["NodeNames"][0];
    auto b = cli.Post(
        "/extender/bind", auth,
        json{{"PodName", "solo"}, {"PodNamespace", "ml"}, {"PodUID", "uid-solo"}, {"Node", node}}
            .dump(),
        "application/json");
    ASSERT_TRUE(b && b->status == 200);
    EXPECT_EQ(json::parse(b->body), json({{"Error", ""}}));
  }
  serve.Kill();
  ASSERT_TRUE(serve.Start()) << serve.log(1);
  {
    httplib::Client cli("127.0.0.1", serve.port());
    json nodes = json::parse(cli.Get("/api/v1/nodes")->body)["nodes"];
    int held = 0;
    for (const json& n : nodes) {
      if (n["name"] == node) {
        EXPECT_EQ(n["free"], 0);
        EXPECT_EQ(n["pod_gangs"], json::array({"ml/solo"}));
        ++held;
      }
    }
    EXPECT_EQ(held, 1);
  }
  serve.Kill();
  serve.set_extra_args({"--no-extender"});
  ASSERT_TRUE(serve.Start()) << serve.log(2);
  {
    httplib::Client cli("127.0.0.1", serve.port());
    auto f = cli.Post("/extender/filter", auth, json{{"Pod", pod}, {"NodeNames", all}}.dump(),
                      "application/json");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->status, 404);
  }
  serve.Kill();
  // Gang keys from --extender-config: a two-pod gang under another label reserves both pods.
  testing_api::WriteFile(dir + "/ext.yaml",
                         "group_name_key: example.com/gang\nreservation_timeout_s: 60\n");
  serve.set_extra_args({"--kube-api-server", "none", "--extender-config", dir + "/ext.yaml"});
  ASSERT_TRUE(serve.Start()) << serve.log(3);
  {
    httplib::Client cli("127.0.0.1", serve.port());
    const json duo = Pod("duo-0", "uid-duo-0", 4, {{"example.com/gang", "duo"}},
                         {{"toposched.io/group-size", "2"}});
    auto f = cli.Post("/extender/filter", auth, json{{"Pod", duo}, {"NodeNames", all}}.dump(),
                      "application/json");
    ASSERT_TRUE(f && f->status == 200);
    EXPECT_EQ(json::parse(f->body)["NodeNames"].size(), 1u) << f->body;
    std::string metrics = cli.Get("/metrics")->body;
    EXPECT_THAT(metrics, HasSubstr("toposched_k8s_pod_gpus 16\n"));  // 8 + 4 + 4
  }
  serve.Kill();
  // kube-scheduler's way in: the extender listener, HTTPS with its client certificate.
  const std::string tls = std::string(TS_SOURCE_DIR) + "/tests/api/testdata/tls/";
  serve.set_extra_args({"--kube-api-server", "none", "--extender-listen", "127.0.0.1:0",
                        "--extender-tls-cert", tls + "server.crt", "--extender-tls-key",
                        tls + "server.key", "--extender-client-ca", tls + "ca.crt",
                        "--extender-port-file", dir + "/ext.port"});
  ASSERT_TRUE(serve.Start()) << serve.log(4);
  {
    int ext_port = 0;
    for (int i = 0; i < 500 && ext_port <= 0; ++i) {
      ext_port = std::atoi(testing_api::ReadFile(dir + "/ext.port").c_str());
      if (ext_port <= 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_GT(ext_port, 0) << serve.log(4);
    httplib::SSLClient cli("127.0.0.1", ext_port, tls + "client.crt", tls + "client.key");
    cli.set_ca_cert_path((tls + "ca.crt").c_str());
    cli.enable_server_certificate_verification(true);
    const json trio = Pod("trio", "uid-trio", 8);
    auto f = cli.Post("/extender/filter", json{{"Pod", trio}, {"NodeNames", all}}.dump(),
                      "application/json");
    ASSERT_TRUE(f) << httplib::to_string(f.error()) << serve.log(4);
    EXPECT_EQ(f->status, 200) << f->body;
    EXPECT_EQ(json::parse(f->body)["NodeNames"].size(), 1u) << f->body;
  }
  serve.Kill();
  // A listener without the client CA is refused before anything starts.
  {
    const std::string cmd = std::string(TS_CLI) + " serve --cluster " + TS_SOURCE_DIR +
                            "/data/clusters/h100-2rack.yaml --db " + dir + "/tls.db" +
                            " --extender-listen 127.0.0.1:0 --extender-tls-cert " + tls +
                            "server.crt --extender-tls-key " + tls + "server.key > " + dir +
                            "/tls.log 2>&1";
    EXPECT_NE(std::system(cmd.c_str()), 0);
    EXPECT_THAT(testing_api::ReadFile(dir + "/tls.log"), HasSubstr("--extender-client-ca"))
        << testing_api::ReadFile(dir + "/tls.log");
  }
  // A tier label for a level the cluster lacks is refused, with or without an API server.
  {
    const std::string cmd = std::string(TS_CLI) + " serve --cluster " + TS_SOURCE_DIR +
                            "/data/clusters/h100-2rack.yaml --db " + dir + "/level.db" +
                            " --kube-level-label rack=example.cloud/rack > " + dir +
                            "/level.log 2>&1";
    EXPECT_NE(std::system(cmd.c_str()), 0);
    EXPECT_THAT(testing_api::ReadFile(dir + "/level.log"),
                HasSubstr("--kube-level-label: the cluster has no level \"rack\""))
        << testing_api::ReadFile(dir + "/level.log");
  }
  // A bad option is refused before anything starts.
  testing_api::WriteFile(dir + "/bad.yaml", "group_name_key: x\nbogus: 1\n");
  const std::string cmd = std::string(TS_CLI) + " serve --cluster " + TS_SOURCE_DIR +
                          "/data/clusters/h100-2rack.yaml --db " + dir + "/other.db" +
                          " --extender-config " + dir + "/bad.yaml > " + dir + "/bad.log 2>&1";
  EXPECT_NE(std::system(cmd.c_str()), 0);
  EXPECT_THAT(testing_api::ReadFile(dir + "/bad.log"),
              HasSubstr("bad.yaml:2: bogus: unknown option"))
      << testing_api::ReadFile(dir + "/bad.log");
  testing_api::RemoveDir(dir);
}
#endif  // TS_CLI

}  // namespace
}  // namespace toposched::api
