// Following Kubernetes Nodes: the reconciliation rules (Ready → health, cordon → drain, deleted
// → unhealthy) on a recording sink, then list + watch against a local API server that replays
// recorded responses (tests/api/testdata/kube, PROVENANCE.md) into the real daemon service.
#include "api/kube_watch.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "api/api_testing.h"
#include "api/extender_testing.h"
#include "api/service.h"
#include "testing/clusters.h"
#include "testing/status_matchers.h"

namespace toposched::api {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

// A sink over a map of nodes, recording every change asked of it.
class RecordingSink : public NodeSink {
 public:
  std::map<std::string, View> nodes;
  std::vector<std::string> calls;

  std::optional<View> Node(const std::string& name) override {
    auto it = nodes.find(name);
    if (it == nodes.end()) return std::nullopt;
    return it->second;
  }
  Status SetHealth(const std::string& name, topo::Health h, const std::string& reason) override {
    nodes[name].health = h;
    calls.push_back(name + " " + topo::HealthName(h) + ": " + reason);
    return OkStatus();
  }
  Status SetDrained(const std::string& name, bool d, const std::string& reason) override {
    nodes[name].drained = d;
    nodes[name].drain_reason = d ? reason : "";
    calls.push_back(name + (d ? " drained: " : " resumed: ") + reason);
    return OkStatus();
  }
  Status SetNetwork(const std::string& name, const std::vector<std::string>& values,
                    const std::optional<std::string>& clique, const std::string& reason) override {
    std::string place;
    for (const std::string& v : values) place += (place.empty() ? "" : " > ") + v;
    if (clique) place += " clique=" + *clique;
    calls.push_back(name + " network " + place + ": " + reason);
    return OkStatus();
  }
};

KubeNode N(const std::string& name, const std::string& ready, bool cordoned = false) {
  KubeNode n;
  n.name = name;
  n.ready = ready;
  n.unschedulable = cordoned;
  return n;
}

TEST(NodeReconciler, NotReadyMakesTheNodeUnhealthyAndReadyHealsIt) {
  RecordingSink sink;
  sink.nodes["a"] = {};
  NodeReconciler r(sink);
  KubeNode down = N("a", "False");
  down.ready_reason = "KubeletNotReady";
  down.ready_message = "PLEG is not healthy";
  ASSERT_TRUE(r.Seen(down).ok());
  ASSERT_EQ(sink.calls.size(), 1u);
  EXPECT_EQ(sink.calls[0],
            "a unhealthy: Kubernetes: node a not ready (Ready=False, KubeletNotReady: PLEG is not "
            "healthy)");
  ASSERT_TRUE(r.Seen(down).ok());  // the same state again changes nothing
  EXPECT_EQ(sink.calls.size(), 1u);
  ASSERT_TRUE(r.Seen(N("a", "True")).ok());
  ASSERT_EQ(sink.calls.size(), 2u);
  EXPECT_EQ(sink.calls[1], "a healthy: Kubernetes: node a Ready");
  ASSERT_TRUE(r.Seen(N("a", "Unknown")).ok());
  EXPECT_EQ(sink.nodes["a"].health, topo::Health::kUnhealthy);
}

TEST(NodeReconciler, ReadyDoesNotOverrideADegradedReportFromElsewhere) {
  RecordingSink sink;
  sink.nodes["a"].health = topo::Health::kDegraded;
  NodeReconciler r(sink);
  ASSERT_TRUE(r.Seen(N("a", "True")).ok());
  EXPECT_TRUE(sink.calls.empty());
  EXPECT_EQ(sink.nodes["a"].health, topo::Health::kDegraded);
}

TEST(NodeReconciler, AfterARestartANodeThatRecoveredMeanwhileIsHealed) {
  RecordingSink sink;
  sink.nodes["a"].health = topo::Health::kUnhealthy;  // replayed from the store
  NodeReconciler r(sink);
  ASSERT_TRUE(r.Listed({N("a", "True")}).ok());
  EXPECT_EQ(sink.nodes["a"].health, topo::Health::kHealthy);
}

TEST(NodeReconciler, CordonDrainsAndUncordonResumesOnlyOnAChange) {
  RecordingSink sink;
  sink.nodes["a"] = {};
  sink.nodes["b"] = {};
  sink.nodes["b"].drained = true;  // drained by an operator through toposched's API
  NodeReconciler r(sink);
  ASSERT_TRUE(r.Seen(N("a", "True")).ok());
  ASSERT_TRUE(r.Seen(N("b", "True")).ok());
  EXPECT_TRUE(sink.calls.empty()) << "a Node that never was cordoned resumes nothing";
  ASSERT_TRUE(r.Seen(N("a", "True", true)).ok());
  ASSERT_EQ(sink.calls.size(), 1u);
  EXPECT_EQ(sink.calls[0], "a drained: Kubernetes: node a cordoned (spec.unschedulable)");
  ASSERT_TRUE(r.Seen(N("a", "True", true)).ok());
  EXPECT_EQ(sink.calls.size(), 1u);
  ASSERT_TRUE(r.Seen(N("a", "True", false)).ok());
  ASSERT_EQ(sink.calls.size(), 2u);
  EXPECT_EQ(sink.calls[1], "a resumed: Kubernetes: node a uncordoned");
  EXPECT_TRUE(sink.nodes["b"].drained);
}

KubeNode Counted(const std::string& name, int gpus, bool cordoned = false) {
  KubeNode n = N(name, "True", cordoned);
  n.gpu_count = gpus;
  return n;
}

// GPU Feature Discovery's count against the model's: a node whose NVML sees 7 of its 8 GPUs is
// drained, naming both; back to 8 it is resumed; without the label nothing happens; an
// operator's drain is not resumed by an agreeing label.
TEST(NodeReconciler, GpuCountLabelThatDisagreesDrainsAndAgreeingAgainResumes) {
  RecordingSink sink;
  sink.nodes["a"].gpus = 8;
  sink.nodes["b"].gpus = 8;
  sink.nodes["b"].drained = true;
  sink.nodes["b"].drain_reason = "drained by operator";
  NodeReconciler r(sink);
  ASSERT_TRUE(r.Seen(N("a", "True")).ok());
  ASSERT_TRUE(r.Seen(Counted("a", 8)).ok());
  EXPECT_TRUE(sink.calls.empty());
  ASSERT_TRUE(r.Seen(Counted("a", 7)).ok());
  ASSERT_EQ(sink.calls.size(), 1u);
  EXPECT_EQ(sink.calls[0],
            "a drained: Kubernetes: node a has nvidia.com/gpu.count=7, the cluster model 8 GPUs (a "
            "GPU off the bus, or a cluster file that does not describe the node)");
  ASSERT_TRUE(r.Seen(Counted("a", 7)).ok());
  EXPECT_EQ(sink.calls.size(), 1u);
  ASSERT_TRUE(r.Seen(N("a", "True")).ok());  // the label gone (GFD restarting): no resume
  EXPECT_EQ(sink.calls.size(), 1u);
  EXPECT_TRUE(sink.nodes["a"].drained);
  ASSERT_TRUE(r.Seen(Counted("a", 8)).ok());
  ASSERT_EQ(sink.calls.size(), 2u);
  EXPECT_EQ(sink.calls[1],
            "a resumed: Kubernetes: node a nvidia.com/gpu.count agrees with the cluster model "
            "again");
  ASSERT_TRUE(r.Seen(Counted("b", 8)).ok());
  EXPECT_EQ(sink.calls.size(), 2u) << "an operator's drain stays";
  EXPECT_TRUE(sink.nodes["b"].drained);
}

// Cordoned, then uncordoned while the count disagrees: drained for the count, resumed once the
// count agrees.
TEST(NodeReconciler, UncordonWhileTheGpuCountDisagreesKeepsTheNodeDrained) {
  RecordingSink sink;
  sink.nodes["a"].gpus = 8;
  NodeReconciler r(sink);
  ASSERT_TRUE(r.Seen(Counted("a", 8, true)).ok());
  EXPECT_TRUE(sink.nodes["a"].drained);
  ASSERT_TRUE(r.Seen(Counted("a", 4, false)).ok());
  EXPECT_TRUE(sink.nodes["a"].drained);
  EXPECT_THAT(sink.nodes["a"].drain_reason, HasSubstr("nvidia.com/gpu.count=4"))
      << sink.nodes["a"].drain_reason;
  ASSERT_TRUE(r.Seen(Counted("a", 8, false)).ok());
  EXPECT_FALSE(sink.nodes["a"].drained);
}

TEST(NodeReconciler, GpuCountLabelIsReadFromGpuFeatureDiscovery) {
  auto n = ReadKubeNode(
      R"({"kind": "Node", "metadata": {"name": "g", "labels": {"nvidia.com/gpu.count": "8"}}})");
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(n->gpu_count, 8);
  for (const char* bad : {R"("eight")", R"("")", R"("99999")", "8"}) {
    auto b = ReadKubeNode(
        std::string(R"({"metadata": {"name": "g", "labels": {"nvidia.com/gpu.count": )") + bad +
        "}}}");
    ASSERT_TRUE(b.ok()) << bad;
    EXPECT_FALSE(b->gpu_count.has_value()) << bad;
  }
}

TEST(NodeReconciler, FirstSeenCordonedDrains) {
  RecordingSink sink;
  sink.nodes["a"] = {};
  NodeReconciler r(sink);
  ASSERT_TRUE(r.Seen(N("a", "True", true)).ok());
  EXPECT_TRUE(sink.nodes["a"].drained);
}

TEST(NodeReconciler, DeletedOrMissingFromARelistIsUnhealthy) {
  RecordingSink sink;
  sink.nodes["a"] = {};
  sink.nodes["b"] = {};
  sink.nodes["c"] = {};
  NodeReconciler r(sink);
  ASSERT_TRUE(r.Listed({N("a", "True"), N("b", "True"), N("c", "True")}).ok());
  ASSERT_TRUE(r.Deleted("a").ok());
  EXPECT_EQ(sink.nodes["a"].health, topo::Health::kUnhealthy);
  EXPECT_EQ(sink.calls.back(), "a unhealthy: Kubernetes: node a deleted from the API");
  ASSERT_TRUE(r.Listed({N("c", "True")}).ok());  // b vanished while the watch was down
  EXPECT_EQ(sink.nodes["b"].health, topo::Health::kUnhealthy);
  EXPECT_EQ(sink.nodes["c"].health, topo::Health::kHealthy);
}

KubeNode Labelled(const std::string& name, std::map<std::string, std::string> labels) {
  KubeNode n = N(name, "True");
  n.labels = std::move(labels);
  return n;
}

// GPU Feature Discovery's product against the model's GPU model, by the hardware table's family:
// an A100 node modelled as H100 is drained naming both; GFD's own spelling of the model's
// product, a time-sliced "-SHARED" product, a MIG product and a product the table does not know
// change nothing; the product agreeing again resumes the node.
TEST(NodeReconciler, GpuProductLabelOfAnotherFamilyDrainsAndAgreeingResumes) {
  RecordingSink sink;
  sink.nodes["a"].gpus = 8;
  sink.nodes["a"].gpu_model = "H100-SXM5-80GB";
  NodeReconciler r(sink);
  const std::string key = "nvidia.com/gpu.product";
  for (const char* same : {"NVIDIA-H100-80GB-HBM3", "NVIDIA-H100-80GB-HBM3-SHARED",
                           "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb", "NVIDIA-A16-4Q"}) {
    ASSERT_TRUE(r.Seen(Labelled("a", {{key, same}})).ok());
    EXPECT_TRUE(sink.calls.empty()) << same;
  }
  ASSERT_TRUE(r.Seen(Labelled("a", {{key, "NVIDIA-A100-SXM4-80GB"}})).ok());
  ASSERT_EQ(sink.calls.size(), 1u);
  EXPECT_EQ(sink.calls[0],
            "a drained: Kubernetes: node a has nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB, the "
            "cluster model H100-SXM5-80GB (A100 against H100: a cluster file that does not "
            "describe the node)");
  ASSERT_TRUE(r.Seen(N("a", "True")).ok());  // the label gone: no resume
  EXPECT_EQ(sink.calls.size(), 1u);
  ASSERT_TRUE(r.Seen(Labelled("a", {{key, "NVIDIA-H100-80GB-HBM3"}})).ok());
  ASSERT_EQ(sink.calls.size(), 2u);
  EXPECT_EQ(sink.calls[1],
            "a resumed: Kubernetes: node a nvidia.com/gpu.product agrees with the cluster model "
            "again");
}

// The tier labels give one value per level of the model (topograph's leaf/spine keys match the
// levels "spine" and "leaf" by name; an explicit key wins); a node lacking one of them leaves
// the tree alone; the clique label alone moves only the NVLink domain.
TEST(NodeReconciler, TierAndCliqueLabelsGiveTheNodesPlace) {
  RecordingSink sink;
  sink.nodes["a"].levels = {"spine", "leaf"};
  sink.nodes["b"].levels = {"spine", "leaf"};
  NodeReconciler r(sink);
  ASSERT_TRUE(r.Seen(Labelled("a", {{"network.topology.nvidia.com/spine", "s2"},
                                    {"network.topology.nvidia.com/leaf", "l7"},
                                    {"nvidia.com/gpu.clique", "uuid.3"}}))
                  .ok());
  ASSERT_TRUE(r.Seen(Labelled("b", {{"network.topology.nvidia.com/leaf", "l7"}})).ok());
  ASSERT_TRUE(r.Seen(Labelled("b", {{"network.topology.kubernetes.io/accelerator", "nvl1"}})).ok());
  ASSERT_EQ(sink.calls.size(), 2u);
  EXPECT_EQ(sink.calls[0], "a network s2 > l7 clique=uuid.3: Kubernetes: labels of node a");
  EXPECT_EQ(sink.calls[1], "b network  clique=nvl1: Kubernetes: labels of node b");

  NodeLabelKeys keys;
  keys.level_keys["leaf"] = "example.cloud/rack";
  NodeReconciler own(sink, keys);
  ASSERT_TRUE(own.Seen(Labelled("a", {{"network.topology.kubernetes.io/spine", "s1"},
                                      {"network.topology.nvidia.com/leaf", "ignored"},
                                      {"example.cloud/rack", "r4"}}))
                  .ok());
  EXPECT_EQ(sink.calls.back(), "a network s1 > r4: Kubernetes: labels of node a");
}

TEST(NodeReconciler, NodesOutsideTheClusterModelAreCountedAndIgnored) {
  RecordingSink sink;
  NodeReconciler r(sink);
  ASSERT_TRUE(r.Seen(N("cpu-only-7", "False")).ok());
  ASSERT_TRUE(r.Deleted("cpu-only-7").ok());
  EXPECT_TRUE(sink.calls.empty());
  EXPECT_EQ(r.unknown_nodes(), 2);
}

TEST(ReadKubeNode, RefusesWhatIsNotANode) {
  EXPECT_THAT(ReadKubeNode("not json"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("node: not valid JSON")));
  EXPECT_THAT(
      ReadKubeNode(R"({"kind":"Pod","metadata":{"name":"x"}})"),
      StatusIs(StatusCode::kInvalidArgument, HasSubstr("kind: expected \"Node\", got \"Pod\"")));
  EXPECT_THAT(ReadKubeNode(R"({"metadata":{}})"),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("metadata.name: expected a non-empty string")));
  auto bad = ReadKubeNode(R"({"metadata":{"name":"x"},"spec":{"unschedulable":"yes"}})");
  ASSERT_THAT(bad, StatusIs(StatusCode::kInvalidArgument, HasSubstr("spec.unschedulable")));
  auto cond = ReadKubeNode(
      R"({"metadata":{"name":"x"},"status":{"conditions":[{"type":"Ready","status":"maybe"}]}})");
  ASSERT_THAT(cond,
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("status.conditions[Ready].status")));
  auto none = ReadKubeNode(R"({"metadata":{"name":"x"}})");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->ready, "Unknown") << "a Node without a Ready condition is not ready";
}

// --- pods ---

class RecordingPodSink : public PodSink {
 public:
  std::vector<std::string> known;
  std::vector<std::string> gone, uids;
  std::vector<std::string> KnownPods() override { return known; }
  Status PodGone(const PodRef& pod, const std::string& why) override {
    gone.push_back(pod.name_space + "/" + pod.name + " " + why);
    uids.push_back(pod.uid);
    return OkStatus();
  }
};

nlohmann::json PodObject(const std::string& name, const std::string& phase,
                         const std::string& scheduler = "toposched") {
  nlohmann::json p = testing_api::Pod(name, "uid-" + name, 8);
  p["spec"]["schedulerName"] = scheduler;
  p["status"] = {{"phase", phase}};
  return p;
}

TEST(PodTarget, DeletedOrFinishedPodsAreGoneOnce) {
  RecordingPodSink sink;
  PodTarget t(sink, "toposched");
  ASSERT_TRUE(t.Changed("MODIFIED", PodObject("a", "Running")).ok());
  EXPECT_TRUE(sink.gone.empty());
  ASSERT_TRUE(t.Changed("MODIFIED", PodObject("a", "Failed")).ok());
  ASSERT_TRUE(t.Changed("DELETED", PodObject("a", "Failed")).ok());
  ASSERT_EQ(sink.gone.size(), 1u);
  EXPECT_EQ(sink.gone[0], "ml/a Kubernetes: pod finished (phase Failed)");
  ASSERT_TRUE(t.Changed("DELETED", PodObject("b", "Running")).ok());
  EXPECT_EQ(sink.gone.back(), "ml/b Kubernetes: pod deleted");
  // Another scheduler's pod is not ours.
  ASSERT_TRUE(t.Changed("DELETED", PodObject("c", "Running", "default-scheduler")).ok());
  EXPECT_EQ(sink.gone.size(), 2u);
  EXPECT_THAT(
      t.Changed("DELETED", nlohmann::json{{"kind", "Node"}}),
      StatusIs(StatusCode::kInvalidArgument, HasSubstr("kind: expected \"Pod\", got \"Node\"")));
}

TEST(PodTarget, AListWithoutAPodTheExtenderHoldsFreesIt) {
  RecordingPodSink sink;
  sink.known = {"ml/kept", "ml/vanished"};
  PodTarget t(sink, "toposched");
  ASSERT_TRUE(t.Listed({PodObject("kept", "Running"), PodObject("done", "Succeeded")}).ok());
  ASSERT_EQ(sink.gone.size(), 2u);
  EXPECT_EQ(sink.gone[0], "ml/done Kubernetes: pod finished (phase Succeeded)");
  EXPECT_EQ(sink.gone[1], "ml/vanished Kubernetes: pod no longer in the API");
}

// --- list + watch against a local API server replaying recorded responses ---

const std::string kKube = std::string(TS_SOURCE_DIR) + "/tests/api/testdata/kube/";

nlohmann::json RecordedJson(const std::string& file) {
  nlohmann::json j = nlohmann::json::parse(testing_api::ReadFile(kKube + file), nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << file;
  return j;
}

// Serves GET /api/v1/nodes (the list set by the test) and GET /api/v1/nodes?watch=1 (a chunked
// stream of the lines the test pushes, until it ends the stream); refuses a wrong token.
class FakeKubeApi {
 public:
  explicit FakeKubeApi(std::string token) : token_(std::move(token)) {
    auto handler = [this](const httplib::Request& req, httplib::Response& res) {
      if (req.get_header_value("Authorization") != "Bearer " + token_) {
        res.status = 401;
        return;
      }
      std::unique_lock<std::mutex> lk(mu_);
      requests_.push_back(req.target);
      if (req.get_param_value("watch") != "1") {
        res.set_content(lists_[req.path], "application/json");
        return;
      }
      const int stream = ++streams_;
      lk.unlock();
      res.set_chunked_content_provider(
          "application/json", [this, stream](size_t, httplib::DataSink& sink) {
            std::unique_lock<std::mutex> lk(mu_);
            cv_.wait_for(lk, std::chrono::milliseconds(50),
                         [&] { return stop_ || !lines_.empty() || ended_ >= stream; });
            while (!lines_.empty()) {
              const std::string line = lines_.front() + "\n";
              lines_.pop_front();
              if (!sink.write(line.data(), line.size())) return false;
            }
            if (stop_ || ended_ >= stream) {
              sink.done();
              return true;
            }
            return true;
          });
    };
    server_.Get("/api/v1/nodes", handler);
    server_.Get("/api/v1/pods", handler);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeKubeApi() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  void SetList(const nlohmann::json& list, const std::string& path = "/api/v1/nodes") {
    std::lock_guard<std::mutex> lk(mu_);
    lists_[path] = list.dump();
  }
  void Push(const nlohmann::json& event) {
    std::lock_guard<std::mutex> lk(mu_);
    lines_.push_back(event.dump());
    cv_.notify_all();
  }
  // The watch stream open now ends (the API server's timeoutSeconds).
  void EndStream() {
    std::lock_guard<std::mutex> lk(mu_);
    ended_ = streams_;
    cv_.notify_all();
  }
  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> lk(mu_);
    return requests_;
  }

 private:
  std::string token_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> lists_;  // path → list body
  std::deque<std::string> lines_;
  std::vector<std::string> requests_;
  int streams_ = 0, ended_ = 0;
  bool stop_ = false;
};

// Polls `ok` for up to 10 s.
bool Eventually(const std::function<bool()>& ok) {
  for (int i = 0; i < 1000; ++i) {
    if (ok()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return ok();
}

class KubeWatchServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing_api::MakeTempDir("toposched-kubewatch");
    testing_api::WriteFile(dir_ + "/token", "recorded-test-token\n");
    // The demo cluster with its first nodes named as the recorded Nodes are.
    cluster_ = toposched::testing::H100Cluster();
    size_t i = 0;
    const nlohmann::json list = RecordedJson("nodes-gfd.json");
    for (const nlohmann::json& n : list["items"]) {
      cluster_.nodes[i++].name = n["metadata"]["name"].get<std::string>();
    }
    cluster_.nodes[i++].name =
        RecordedJson("node-notready.json")["metadata"]["name"].get<std::string>();
    cluster_.nodes[i++].name =
        RecordedJson("node-cordoned.json")["metadata"]["name"].get<std::string>();
    cluster_.Finalize();
  }
  void TearDown() override { testing_api::RemoveDir(dir_); }

  std::unique_ptr<Service> Open() {
    ServiceOptions o;
    o.db_path = dir_ + "/state.db";
    o.store.sync_full = false;
    o.background_passes = false;
    o.clock_us = [this] { return now_us_ += 1000; };
    auto s = Service::Open(cluster_, o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  KubeWatchOptions Options(int port) {
    KubeWatchOptions o;
    o.api.server = "http://127.0.0.1:" + std::to_string(port);
    o.api.token_file = dir_ + "/token";
    o.api.timeout_ms = 2000;
    o.watch_timeout_s = 60;
    o.backoff_min_ms = 20;
    o.backoff_max_ms = 200;
    return o;
  }

  // The id of the job running on `node`, 0 when none.
  static int64_t JobOn(Service& s, const std::string& node) {
    const nlohmann::json jobs = nlohmann::json::parse(s.JobsJson({}));
    for (const nlohmann::json& j : jobs["jobs"]) {
      if (!j["placement"].is_object()) continue;
      for (const nlohmann::json& p : j["placement"]["nodes"]) {
        if (p["node"] == node) return j["id"].get<int64_t>();
      }
    }
    return 0;
  }
  static std::string StateOf(Service& s, int64_t id) {
    auto j = s.JobJson(id, false);
    return j.ok() ? nlohmann::json::parse(*j)["state"].get<std::string>() : "?";
  }

  std::string dir_;
  topo::Cluster cluster_;
  int64_t now_us_ = 1'000'000;
};

std::string Quoted(const std::string& s) { return "resourceVersion=" + s; }

// The node's network place in the daemon's model now: its domains and NVLink domain.
std::string NetworkOf(Service& s, const std::string& node) {
  const nlohmann::json all = nlohmann::json::parse(s.NodesJson());
  for (const nlohmann::json& n : all["nodes"]) {
    if (n["name"] != node) continue;
    std::string place;
    for (const nlohmann::json& d : n["network"])
      place += (place.empty() ? "" : " > ") + d.get<std::string>();
    if (!n["nvlink_domain"].get<std::string>().empty())
      place += ", " + n["nvlink_domain"].get<std::string>();
    return place;
  }
  return "?";
}

// A Node whose tier labels (topograph's keys, set by this test on a recorded GFD node) put it
// under the other leaf is moved there in the daemon's model, within one watch event; its job is
// re-scored there (its domain is now the spine); a clique the model lacks, without
// --kube-nvlink-gbps, is refused once (logged, the watch goes on, the same labels are not asked
// again); a restart keeps the move.
TEST_F(KubeWatchServiceTest, TierLabelsMoveTheNodeInTheModelAndARestartKeepsIt) {
  std::unique_ptr<Service> s = Open();
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(s->Submit(testing_api::JobJson("pair", 16), "").ok());
  ASSERT_TRUE(s->RunPass().ok());
  const nlohmann::json job = nlohmann::json::parse(*s->JobJson(1, false));
  ASSERT_EQ(job["state"], "RUNNING");
  ASSERT_EQ(job["placement"]["nodes"].size(), 2u);
  const std::string moved = job["placement"]["nodes"][1]["node"];
  const std::string was = NetworkOf(*s, moved);
  ASSERT_EQ(was, "spine0 > leaf0") << moved;

  nlohmann::json node = RecordedJson("nodes-gfd.json")["items"][0];
  node["metadata"]["name"] = moved;
  node["metadata"]["labels"] = {{"nvidia.com/gpu.count", "8"},
                                {"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                                {"network.topology.nvidia.com/spine", "spine0"},
                                {"network.topology.nvidia.com/leaf", "leaf1"}};
  FakeKubeApi api("recorded-test-token");
  api.SetList(RecordedJson("nodes-gfd.json"));
  ServiceNodeSink sink(*s);
  auto w = KubeWatcher::Nodes(Options(api.port()), sink);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_TRUE(Eventually([&] { return (*w)->stats().watches >= 1; }));
  EXPECT_EQ(NetworkOf(*s, moved), was);
  api.Push({{"type", "MODIFIED"}, {"object", node}});
  ASSERT_TRUE(Eventually([&] { return NetworkOf(*s, moved) == "spine0 > leaf1"; }))
      << NetworkOf(*s, moved);
  EXPECT_FALSE(s->NodeCondition(moved)->second) << "GFD's count and product agree: not drained";
  // Its job is re-scored where it runs now: the two nodes meet at the spine. This fabric is
  // non-blocking (1:1), so the prediction stays (the scheduler's test shows a 2:1 one).
  const nlohmann::json rescored = nlohmann::json::parse(*s->JobJson(1, false));
  EXPECT_EQ(rescored["placement"]["domain"], "spine0");
  EXPECT_DOUBLE_EQ(rescored["placement"]["predicted_ms"].get<double>(),
                   job["placement"]["predicted_ms"].get<double>());
  const nlohmann::json nodes = nlohmann::json::parse(s->NodesJson());
  for (const nlohmann::json& n : nodes["nodes"]) {
    if (n["name"] == moved) {
      EXPECT_EQ(n["network_source"], "Kubernetes: labels of node " + moved);
    }
  }
  EXPECT_TRUE(s->CheckInvariants().ok());
  const int64_t errors = (*w)->stats().errors;

  // A clique the model lacks, and no per-GPU NVLink bandwidth given for new ones: refused once.
  node["metadata"]["labels"]["nvidia.com/gpu.clique"] = "2b7a6f1e.0";
  for (int i = 0; i < 2; ++i) api.Push({{"type", "MODIFIED"}, {"object", node}});
  ASSERT_TRUE(Eventually([&] { return (*w)->stats().events >= 3; }));
  EXPECT_EQ((*w)->stats().errors, errors + 1);
  EXPECT_THAT((*w)->stats().last_error, HasSubstr("nvlink_gbps")) << (*w)->stats().last_error;
  EXPECT_EQ((*w)->stats().watches, 1) << "the watch went on";
  EXPECT_EQ(NetworkOf(*s, moved), "spine0 > leaf1");
  w->reset();

  s.reset();
  s = Open();
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(NetworkOf(*s, moved), "spine0 > leaf1");
  EXPECT_TRUE(s->CheckInvariants().ok());
}

// Nodes declared in the cluster file ahead of their hardware (`health: unhealthy`, as Slurm's
// State=FUTURE) join when their Node appears Ready in the API: a 192-GPU job waiting for them
// starts at the next pass, on joined nodes, each placed by its tier labels.
TEST_F(KubeWatchServiceTest, NodesDeclaredAheadJoinWhenTheirNodeAppearsReady) {
  for (size_t i = 16; i < cluster_.nodes.size(); ++i) {
    cluster_.nodes[i].health = topo::Health::kUnhealthy;
  }
  std::unique_ptr<Service> s = Open();
  ASSERT_NE(s, nullptr);
  std::string spec = testing_api::JobJson("big", 192);
  spec.replace(spec.find("\"replicas\": 1, \"gpus_per_replica\": 192"),
               std::string("\"replicas\": 1, \"gpus_per_replica\": 192").size(),
               "\"replicas\": 24, \"gpus_per_replica\": 8");
  spec.replace(spec.find("\"tp\": 192"), std::string("\"tp\": 192").size(), "\"tp\": 8");
  ASSERT_TRUE(s->Submit(spec, "").ok()) << spec;
  ASSERT_TRUE(s->RunPass().ok());
  ASSERT_EQ(StateOf(*s, 1), "PENDING") << "128 GPUs are in the cluster yet";

  nlohmann::json list = RecordedJson("nodes-gfd.json");
  const nlohmann::json recorded = list["items"][0];
  list["items"] = nlohmann::json::array();  // only the joining Nodes
  for (size_t i = 16; i < 24; ++i) {
    nlohmann::json node = recorded;
    node["metadata"]["name"] = cluster_.nodes[i].name;
    node["metadata"]["labels"] = {{"nvidia.com/gpu.count", "8"},
                                  {"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                                  {"network.topology.nvidia.com/spine", "spine0"},
                                  {"network.topology.nvidia.com/leaf", "leaf1"}};
    list["items"].push_back(node);
  }
  FakeKubeApi api("recorded-test-token");
  api.SetList(list);
  ServiceNodeSink sink(*s);
  auto w = KubeWatcher::Nodes(Options(api.port()), sink);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  const std::string joined = cluster_.nodes[23].name;
  ASSERT_TRUE(
      Eventually([&] { return s->NodeCondition(joined)->first == topo::Health::kHealthy; }));
  EXPECT_EQ(s->NodeCondition(cluster_.nodes[24].name)->first, topo::Health::kUnhealthy)
      << "not in the API yet";
  w->reset();
  ASSERT_TRUE(s->RunPass().ok());
  ASSERT_EQ(StateOf(*s, 1), "RUNNING") << *s->JobJson(1, true) << *s->ExplainJson(1);
  EXPECT_NE(JobOn(*s, joined), 0);
  EXPECT_TRUE(s->CheckInvariants().ok());
}

TEST_F(KubeWatchServiceTest, NotReadyRequeuesCordonDrainsBookmarkAndGoneRelist) {
  std::unique_ptr<Service> s = Open();
  ASSERT_NE(s, nullptr);
  // Every node runs one whole-node job that is requeued when its node fails.
  for (size_t i = 0; i < cluster_.nodes.size(); ++i) {
    std::string spec = testing_api::JobJson("train-" + std::to_string(i), 8);
    spec.insert(spec.size() - 1, ", \"on_failure\": \"requeue\"");
    ASSERT_TRUE(s->Submit(spec, "").ok()) << spec;
  }
  ASSERT_TRUE(s->RunPass().ok());
  const nlohmann::json list = RecordedJson("nodes-gfd.json");
  const nlohmann::json notready = RecordedJson("node-notready.json");
  const nlohmann::json cordoned = RecordedJson("node-cordoned.json");
  const std::string down = notready["metadata"]["name"], fenced = cordoned["metadata"]["name"];
  const int64_t victim = JobOn(*s, down);
  ASSERT_NE(victim, 0);
  ASSERT_EQ(StateOf(*s, victim), "RUNNING");

  FakeKubeApi api("recorded-test-token");
  api.SetList(list);
  ServiceNodeSink sink(*s);
  auto w = KubeWatcher::Nodes(Options(api.port()), sink);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_TRUE(Eventually([&] { return (*w)->stats().watches >= 1; }));
  EXPECT_EQ((*w)->stats().lists, 1);
  EXPECT_EQ((*w)->stats().resource_version, list["metadata"]["resourceVersion"]);
  for (const nlohmann::json& n : list["items"]) {
    const std::string name = n["metadata"]["name"];
    ASSERT_TRUE(s->NodeCondition(name).has_value()) << name;
    EXPECT_EQ(s->NodeCondition(name)->first, topo::Health::kHealthy) << name;
    // The recorded GFD labels count GPUs NVML sees; the model gives these nodes 8.
    const nlohmann::json& labels = n["metadata"]["labels"];
    if (!labels.contains("nvidia.com/gpu.count")) continue;
    const std::string count = labels["nvidia.com/gpu.count"];
    ASSERT_NE(count, "8") << name;
    EXPECT_TRUE(s->NodeCondition(name)->second) << name;
    EXPECT_EQ(s->NodeStatusOf(name)->drain_reason,
              "Kubernetes: node " + name + " has nvidia.com/gpu.count=" + count +
                  ", the cluster model 8 GPUs (a GPU off the bus, or a cluster file that does not "
                  "describe the node)");
  }

  // The node goes NotReady: unhealthy, its job requeued (on_failure: requeue).
  api.Push({{"type", "MODIFIED"}, {"object", notready}});
  ASSERT_TRUE(
      Eventually([&] { return s->NodeCondition(down)->first == topo::Health::kUnhealthy; }));
  EXPECT_TRUE(Eventually([&] { return StateOf(*s, victim) == "PENDING"; })) << StateOf(*s, victim);
  // Cordoned: drained. (The recorded cordoned Node is also NotReady: unhealthy, job requeued.)
  const int64_t fenced_job = JobOn(*s, fenced);
  api.Push({{"type", "MODIFIED"}, {"object", cordoned}});
  ASSERT_TRUE(Eventually([&] { return s->NodeCondition(fenced)->second; }));
  EXPECT_EQ(s->NodeCondition(fenced)->first, topo::Health::kUnhealthy);
  EXPECT_TRUE(Eventually([&] { return StateOf(*s, fenced_job) == "PENDING"; }));

  // A bookmark moves the version on; the stream ends; the next watch starts from there.
  const nlohmann::json bookmark = RecordedJson("watch-bookmark.json");
  const std::string bm_rv = bookmark["object"]["metadata"]["resourceVersion"];
  api.Push(bookmark);
  ASSERT_TRUE(Eventually([&] { return (*w)->stats().resource_version == bm_rv; }));
  api.EndStream();
  // The requests so far: list, watch, watch again.
  ASSERT_TRUE(Eventually([&] { return api.requests().size() >= 3; }));
  std::vector<std::string> reqs = api.requests();
  EXPECT_THAT(reqs.back(), HasSubstr(Quoted(bm_rv)))
      << ::testing::PrintToString(reqs) << (*w)->stats().last_error;

  // 410 Gone: the watcher lists again and watches from the new list's version.
  nlohmann::json relist = list;
  relist["metadata"]["resourceVersion"] =
      list["metadata"]["resourceVersion"].get<std::string>() + "0";  // any version the list gives
  api.SetList(relist);
  api.Push(RecordedJson("watch-410.json"));
  ASSERT_TRUE(Eventually([&] { return api.requests().size() >= 5; }));  // + list, watch
  EXPECT_EQ((*w)->stats().gone, 1);
  reqs = api.requests();
  EXPECT_THAT(reqs.back(), HasSubstr(Quoted(relist["metadata"]["resourceVersion"]))) << reqs.back();
  // The NotReady and the cordoned nodes are not in the relist: both are gone from the API.
  EXPECT_TRUE(
      Eventually([&] { return s->NodeCondition(fenced)->first == topo::Health::kUnhealthy; }));
  EXPECT_EQ((*w)->stats().errors, 0) << (*w)->stats().last_error;
  w->reset();
  EXPECT_TRUE(s->CheckInvariants().ok());

  // What the watcher changed is stored like every other input: a restart keeps it.
  s.reset();
  s = Open();
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->NodeCondition(down)->first, topo::Health::kUnhealthy);
  EXPECT_TRUE(s->NodeCondition(fenced)->second);
}

// RecordedJson Pods: each scheduler's own are followed, by its name; a Running one is not gone, a
// Succeeded (a PyTorchJob worker) or Failed one (stopped before it was bound) is, with its
// namespace, name and uid.
TEST(PodTarget, RecordedPodsOfEachScheduler) {
  const nlohmann::json running = RecordedJson("pod-gpu-running.json");
  const nlohmann::json succeeded = RecordedJson("pod-gpu-succeeded.json");
  const nlohmann::json failed = RecordedJson("pod-gpu-failed.json");
  RecordingPodSink sink;
  PodTarget toposched(sink, "toposched");
  for (const nlohmann::json* p : {&running, &succeeded, &failed}) {
    ASSERT_TRUE(toposched.Changed("MODIFIED", *p).ok());
  }
  EXPECT_TRUE(sink.gone.empty()) << "none of them is toposched's";
  PodTarget runai(sink, running["spec"]["schedulerName"].get<std::string>());
  ASSERT_TRUE(runai.Changed("MODIFIED", running).ok());
  EXPECT_TRUE(sink.gone.empty()) << "Running";
  PodTarget hami(sink, succeeded["spec"]["schedulerName"].get<std::string>());
  ASSERT_TRUE(hami.Changed("MODIFIED", succeeded).ok());
  ASSERT_EQ(sink.gone.size(), 1u);
  EXPECT_EQ(sink.gone[0], succeeded["metadata"]["namespace"].get<std::string>() + "/" +
                              succeeded["metadata"]["name"].get<std::string>() +
                              " Kubernetes: pod finished (phase Succeeded)");
  PodTarget standard(sink, failed["spec"]["schedulerName"].get<std::string>());
  ASSERT_TRUE(standard.Listed({failed}).ok());
  ASSERT_EQ(sink.gone.size(), 2u);
  EXPECT_EQ(sink.gone[1], "kueue-dws/dws-pod Kubernetes: pod finished (phase Failed)");
  EXPECT_EQ(sink.uids[1], failed["metadata"]["uid"].get<std::string>());
}

// The extender's pods follow the API: a deleted pod frees its slot within one watch event, a
// finished one too, and a pod missing from a relist after "410 Gone" as well; a pod group's job
// (and its GPUs) ends with its last pod.
TEST_F(KubeWatchServiceTest, DeletedFinishedOrVanishedPodsFreeTheirGpus) {
  ServiceOptions o;
  o.db_path = dir_ + "/pods.db";
  o.store.sync_full = false;
  o.background_passes = false;
  o.extender = true;
  auto svc = Service::Open(cluster_, o);
  ASSERT_TRUE(svc.ok()) << svc.status().ToString();
  Service& s = **svc;
  std::vector<std::string> names;
  for (const topo::ClusterNode& n : cluster_.nodes) names.push_back(n.name);
  auto place = [&](const std::string& pod, const std::string& group, int size) {
    nlohmann::json p = testing_api::Pod(pod, "uid-" + pod, 8, {{"toposched.io/pod-group", group}},
                                        {{"toposched.io/group-size", std::to_string(size)}});
    auto f = s.ExtenderCall("filter", nlohmann::json{{"Pod", p}, {"NodeNames", names}}.dump());
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    const nlohmann::json fj = nlohmann::json::parse(*f);
    ASSERT_EQ(fj["NodeNames"].size(), 1u) << fj.dump();
    auto b = s.ExtenderCall("bind", nlohmann::json{{"PodName", pod},
                                                   {"PodNamespace", "ml"},
                                                   {"PodUID", "uid-" + pod},
                                                   {"Node", fj["NodeNames"][0]}}
                                        .dump());
    ASSERT_TRUE(b.ok()) << b.status().ToString();
  };
  // Pods bound for their group's running job, and GPUs free, as the daemon shows them.
  auto bound = [&] {
    size_t n = 0;
    for (const std::string& key : s.extender()->GangKeys()) {
      if (auto g = s.extender()->Gang(key)) {
        for (const GangSlotView& slot : g->slots) n += slot.bound ? 1 : 0;
      }
    }
    return n;
  };
  auto free_gpus = [&] {
    int free = 0;
    const nlohmann::json nodes = nlohmann::json::parse(s.NodesJson());
    for (const auto& n : nodes["nodes"]) free += n["free"].get<int>();
    return free;
  };
  const int all_gpus = free_gpus();
  place("duo-0", "duo", 2);
  place("duo-1", "duo", 2);
  place("solo-0", "solo", 1);
  ASSERT_EQ(bound(), 3u);
  ASSERT_EQ(free_gpus(), all_gpus - 24);

  FakeKubeApi api("recorded-test-token");
  const nlohmann::json empty_list = {
      {"kind", "PodList"}, {"apiVersion", "v1"}, {"metadata", {{"resourceVersion", "100"}}}};
  nlohmann::json list = empty_list;
  for (const char* pod : {"duo-0", "duo-1", "solo-0"}) {
    list["items"].push_back(PodObject(pod, "Running"));
  }
  api.SetList(list, "/api/v1/pods");
  ServicePodSink sink(s);
  auto w = KubeWatcher::Pods(Options(api.port()), sink, "toposched");
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_TRUE(Eventually([&] { return (*w)->stats().watches >= 1; }));
  EXPECT_EQ(bound(), 3u) << "every pod is in the list: nothing freed";
  EXPECT_THAT(api.requests()[0], HasSubstr("fieldSelector=spec.schedulerName%3Dtoposched"))
      << api.requests()[0];

  api.Push({{"type", "DELETED"}, {"object", PodObject("duo-0", "Running")}});
  ASSERT_TRUE(Eventually([&] { return bound() == 2u; }));
  // duo keeps its GPUs while a pod of it runs; its last pod ends: its job completes.
  EXPECT_EQ(free_gpus(), all_gpus - 24);
  api.Push({{"type", "MODIFIED"}, {"object", PodObject("duo-1", "Succeeded")}});
  ASSERT_TRUE(Eventually([&] { return bound() == 1u; }));
  EXPECT_EQ(free_gpus(), all_gpus - 8);
  // The watch history is gone and solo-0 was deleted meanwhile: the relist frees it.
  nlohmann::json relist = empty_list;
  relist["items"] = nlohmann::json::array();
  relist["metadata"]["resourceVersion"] = "200";
  api.SetList(relist, "/api/v1/pods");
  api.Push(RecordedJson("watch-410.json"));
  ASSERT_TRUE(Eventually([&] { return bound() == 0u; }));
  EXPECT_EQ(free_gpus(), all_gpus);
  EXPECT_EQ((*w)->stats().gone, 1);
  EXPECT_EQ((*w)->stats().errors, 0) << (*w)->stats().last_error;
  w->reset();
  EXPECT_TRUE(s.CheckInvariants().ok());
}

TEST_F(KubeWatchServiceTest, AWrongTokenIsAnErrorAndNothingChanges) {
  std::unique_ptr<Service> s = Open();
  ASSERT_NE(s, nullptr);
  FakeKubeApi api("another-token");
  api.SetList(RecordedJson("nodes-gfd.json"));
  ServiceNodeSink sink(*s);
  auto w = KubeWatcher::Nodes(Options(api.port()), sink);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(Eventually([&] { return (*w)->stats().errors >= 2; }));
  EXPECT_EQ((*w)->stats().lists, 0);
  EXPECT_THAT((*w)->stats().last_error, HasSubstr("HTTP 401")) << (*w)->stats().last_error;
}

}  // namespace
}  // namespace toposched::api
