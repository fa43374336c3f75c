// The GPUs the extender chose for a pod reach its container: the plugin, asked by the kubelet
// (played over the real gRPC API), reads this node's pods from the API server (a real HTTP server
// on 127.0.0.1 plays it, replaying a recorded Pod: tests/api/testdata/kube/pod-gpu-running.json,
// provenance in PROVENANCE-pods.md; each test turns copies of it into the pods it needs, the
// changes made in code below), finds the pod being admitted and answers the GPUs its annotation
// names; without a usable annotation it answers its own optimum, logged and counted by reason.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

#include "api/extender.h"
#include "api/kube_binder.h"
#include "api/kube_pods.h"
#include "core/strings.h"
#include "placer/gang.h"
#include "testing/clusters.h"
#include "testing/device_plugin.h"
#include "testing/loopback_http.h"
#include "testing/status_matchers.h"

namespace toposched::deviceplugin {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing::PluginClient;
using testing::SocketDir;
using testing::StatusIs;

constexpr char kPodsNode[] = "gpu-node-7";

// The recorded Pod (a Running pod asking one nvidia.com/gpu) made into a pod just bound to
// kPodsNode and not yet admitted: name, uid, creation time, node and GPU count replaced, the status
// the kubelet has not written yet (phase Pending, no startTime, no container statuses).
json BoundPod(const std::string& name, const std::string& created, int gpus) {
  std::ifstream in(testing::SourceDir() + "/tests/api/testdata/kube/pod-gpu-running.json");
  EXPECT_TRUE(in.good());
  json pod = json::parse(in);
  pod["metadata"]["name"] = name;
  pod["metadata"]["uid"] = "uid-" + name;
  pod["metadata"]["creationTimestamp"] = created;
  pod["spec"]["nodeName"] = kPodsNode;
  pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = std::to_string(gpus);
  pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = std::to_string(gpus);
  pod["status"] = {{"phase", "Pending"},
                   {"conditions", {{{"type", "PodScheduled"}, {"status", "True"}}}}};
  return pod;
}

json Chosen(json pod, const std::string& gpus) {
  pod["metadata"]["annotations"]["toposched.io/gpus"] = gpus;
  return pod;
}

// Plays GET /api/v1/pods: answers the pods set last, as a PodList; records the queries.
class PodsApiServer {
 public:
  PodsApiServer() {
    http_.server().Get("/api/v1/pods", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      selectors_.push_back(req.get_param_value("fieldSelector"));
      res.status = status_;
      res.set_content(body_, "application/json");
    });
    http_.Start();
  }
  void Stop() { http_.Stop(); }
  std::string Url() const { return http_.Url(); }
  void Pods(const std::vector<json>& pods) {
    json list = {{"kind", "PodList"},
                 {"apiVersion", "v1"},
                 {"metadata", {{"resourceVersion", "10700"}}},
                 {"items", pods}};
    std::lock_guard<std::mutex> lock(mu_);
    status_ = 200;
    body_ = list.dump();
  }
  void Reply(int status, std::string body) {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = status;
    body_ = std::move(body);
  }
  std::vector<std::string> selectors() {
    std::lock_guard<std::mutex> lock(mu_);
    return selectors_;
  }

 private:
  std::mutex mu_;
  int status_ = 200;
  std::string body_ = R"({"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]})";
  std::vector<std::string> selectors_;
  // Last: stopped (its handler joined) before the members the handler reads are destroyed.
  testing::LoopbackHttp http_;
};

std::vector<std::string> Ask(v1beta1::DevicePlugin::Stub& stub,
                             const std::vector<std::string>& available, int size,
                             grpc::Status* status = nullptr) {
  v1beta1::PreferredAllocationRequest req;
  v1beta1::ContainerPreferredAllocationRequest* c = req.add_container_requests();
  for (const std::string& id : available) c->add_available_deviceids(id);
  c->set_allocation_size(size);
  v1beta1::PreferredAllocationResponse resp;
  grpc::ClientContext ctx;
  grpc::Status s = stub.GetPreferredAllocation(&ctx, req, &resp);
  if (status != nullptr) *status = s;
  std::vector<std::string> out;
  if (s.ok() && resp.container_responses_size() == 1) {
    for (const std::string& id : resp.container_responses(0).deviceids()) out.push_back(id);
  }
  return out;
}

bool Allocate(v1beta1::DevicePlugin::Stub& stub, const std::vector<std::string>& ids) {
  v1beta1::AllocateRequest req;
  v1beta1::ContainerAllocateRequest* c = req.add_container_requests();
  for (const std::string& id : ids) c->add_devicesids(id);
  v1beta1::AllocateResponse resp;
  grpc::ClientContext ctx;
  return stub.Allocate(&ctx, req, &resp).ok();
}

const std::vector<std::string> kAll = {"0", "1", "2", "3", "4", "5", "6", "7"};

class GangChoiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    token_file_ = dir_.path() + "/token";
    std::ofstream(token_file_) << "tok-dp\n";
    topology_ = testing::LoadSample(testing::SamplePath(testing::kDgx1CubeMeshSample));
    auto p = DevicePlugin::Create(topology_, {}, testing::TestPluginOptions(dir_.path()));
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    plugin_ = std::move(*p);
    api::KubeApiOptions o;
    o.server = api_.Url();
    o.token_file = token_file_;
    o.timeout_ms = 2000;
    plugin_->EnableGangChoices([o] { return api::ListNodePods(o, kPodsNode); });
    ASSERT_TRUE(plugin_->Start().ok());
    stub_ = PluginClient(testing::TestPluginOptions(dir_.path()).socket_path());
  }
  // The plugin's own optimum (what it answers without the gang's choice).
  std::vector<std::string> Own(const std::vector<std::string>& available, int size) {
    auto ids = plugin_->state().Preferred(available, {}, size);
    EXPECT_TRUE(ids.ok()) << ids.status().ToString();
    return ids.ok() ? *ids : std::vector<std::string>{};
  }
  int64_t Fallbacks(ChoiceFallback f) { return plugin_->state().gang_choices()->fallbacks(f); }

  SocketDir dir_;
  PodsApiServer api_;
  std::string token_file_;
  topo::NodeTopology topology_;
  std::unique_ptr<DevicePlugin> plugin_;
  std::unique_ptr<v1beta1::DevicePlugin::Stub> stub_;
};

TEST_F(GangChoiceTest, AnswersTheGpusTheExtenderChoseForThePodBeingAdmitted) {
  // GPUs 0 and 7 share no NVLink on the cube mesh: not the plugin's own choice for two.
  ASSERT_NE(Own(kAll, 2), (std::vector<std::string>{"0", "7"}));
  api_.Pods({Chosen(BoundPod("w-0", "2026-12-07T10:00:00Z", 2), "0,7")});
  EXPECT_EQ(Ask(*stub_, kAll, 2), (std::vector<std::string>{"0", "7"}));
  EXPECT_EQ(plugin_->state().gang_choices()->followed(), 1);
  EXPECT_EQ(api_.selectors(), std::vector<std::string>{std::string("spec.nodeName=") + kPodsNode});
}

TEST_F(GangChoiceTest, PodsAreServedInAdmissionOrderAndAnAllocatedPodIsDone) {
  // Listed newest first; the kubelet admits the older one first.
  api_.Pods({Chosen(BoundPod("w-1", "2026-12-07T10:00:05Z", 2), "2,3"),
             Chosen(BoundPod("w-0", "2026-12-07T10:00:00Z", 2), "0,7")});
  EXPECT_EQ(Ask(*stub_, kAll, 2), (std::vector<std::string>{"0", "7"}));
  ASSERT_TRUE(Allocate(*stub_, {"0", "7"}));
  // w-0's status not written yet (still Pending, no startTime): its devices count as given.
  EXPECT_EQ(Ask(*stub_, {"1", "2", "3", "4", "5", "6"}, 2), (std::vector<std::string>{"2", "3"}));
  EXPECT_EQ(plugin_->state().gang_choices()->followed(), 2);
}

TEST_F(GangChoiceTest, AnAdmittedPodIsNotTheOneBeingAdmitted) {
  json started = Chosen(BoundPod("w-0", "2026-12-07T10:00:00Z", 2), "0,7");
  started["status"]["startTime"] = "2026-12-07T10:00:01Z";
  api_.Pods({started});
  EXPECT_EQ(Ask(*stub_, kAll, 2), Own(kAll, 2));
  EXPECT_EQ(Fallbacks(ChoiceFallback::kNoPod), 1);
}

TEST_F(GangChoiceTest, APodWithoutAChoiceGetsTheOwnOptimum) {
  api_.Pods({BoundPod("plain", "2026-12-07T10:00:00Z", 2)});
  EXPECT_EQ(Ask(*stub_, kAll, 2), Own(kAll, 2));
  EXPECT_EQ(Fallbacks(ChoiceFallback::kNoChoice), 1);
  EXPECT_EQ(plugin_->state().gang_choices()->followed(), 0);
}

TEST_F(GangChoiceTest, AChoiceNamingUnavailableGpusFallsBack) {
  api_.Pods({Chosen(BoundPod("w-0", "2026-12-07T10:00:00Z", 2), "0,7")});
  const std::vector<std::string> without_7 = {"0", "1", "2", "3", "4", "5", "6"};
  EXPECT_EQ(Ask(*stub_, without_7, 2), Own(without_7, 2));
  EXPECT_EQ(Fallbacks(ChoiceFallback::kUnavailable), 1);
  api_.Pods({Chosen(BoundPod("w-0", "2026-12-07T10:00:00Z", 2), "0,9")});  // no GPU 9 here
  EXPECT_EQ(Ask(*stub_, kAll, 2), Own(kAll, 2));
  EXPECT_EQ(Fallbacks(ChoiceFallback::kUnavailable), 2);
}

TEST_F(GangChoiceTest, AMalformedOrMiscountedChoiceFallsBack) {
  api_.Pods({Chosen(BoundPod("w-0", "2026-12-07T10:00:00Z", 2), "0,x")});
  EXPECT_EQ(Ask(*stub_, kAll, 2), Own(kAll, 2));
  api_.Pods({Chosen(BoundPod("w-0", "2026-12-07T10:00:00Z", 2), "0,1,2")});
  EXPECT_EQ(Ask(*stub_, kAll, 2), Own(kAll, 2));
  EXPECT_EQ(Fallbacks(ChoiceFallback::kBadChoice), 2);
}

TEST_F(GangChoiceTest, AnApiServerThatFailsOrIsGoneFallsBackAndTheKubeletIsStillAnswered) {
  api_.Reply(403,
             R"({"kind":"Status","status":"Failure","message":"pods is forbidden","code":403})");
  EXPECT_EQ(Ask(*stub_, kAll, 2), Own(kAll, 2));
  api_.Reply(200, "{not json");
  EXPECT_EQ(Ask(*stub_, kAll, 2), Own(kAll, 2));
  api_.Stop();
  grpc::Status s;
  EXPECT_EQ(Ask(*stub_, kAll, 2, &s), Own(kAll, 2));
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(Fallbacks(ChoiceFallback::kLookupFailed), 3);
  EXPECT_THAT(
      plugin_->state().gang_choices()->MetricsText(),
      HasSubstr("toposched_device_plugin_gang_fallbacks_total{reason=\"lookup_failed\"} 3"));
}

// The whole path: the extender binds the pod through the binder (the API server played over
// HTTP: the Binding's annotations and node set on the recorded pod, as the binding subresource
// does), the kubelet asks the plugin, the container gets exactly the GPUs the gang placement chose.
TEST(GangChoicePathTest, TheExtendersChoiceIsWhatTheContainerGets) {
  SocketDir dir;
  const std::string token_file = dir.path() + "/token";
  std::ofstream(token_file) << "tok-sched\n";
  json pod = BoundPod("llama-0", "2026-12-07T10:00:00Z", 2);
  pod["metadata"]["namespace"] = "ml";
  pod["spec"].erase("nodeName");  // not bound yet
  std::mutex mu;
  testing::LoopbackHttp http;  // after what its handlers use: stopped first on every way out
  httplib::Server& srv = http.server();
  srv.Post(R"(/api/v1/namespaces/ml/pods/llama-0/binding)",
           [&](const httplib::Request& req, httplib::Response& res) {
             const json binding = json::parse(req.body);
             std::lock_guard<std::mutex> lock(mu);
             pod["spec"]["nodeName"] = binding["target"]["name"];
             for (const auto& [k, v] : binding["metadata"]["annotations"].items()) {
               pod["metadata"]["annotations"][k] = v;
             }
             res.status = 201;
             res.set_content(R"({"kind":"Status","apiVersion":"v1","status":"Success","code":201})",
                             "application/json");
           });
  srv.Get("/api/v1/pods", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu);
    json items = json::array();
    const json& spec = pod["spec"];
    if (spec.contains("nodeName") && req.get_param_value("fieldSelector") ==
                                         "spec.nodeName=" + spec["nodeName"].get<std::string>()) {
      items.push_back(pod);
    }
    res.set_content(json{{"kind", "PodList"}, {"apiVersion", "v1"}, {"items", items}}.dump(),
                    "application/json");
  });
  ASSERT_TRUE(http.Start());
  api::KubeApiOptions ko;
  ko.server = http.Url();
  ko.token_file = token_file;
  ko.timeout_ms = 2000;

  // The scheduler side: the extender on the example H100 cluster binds through the binder.
  const topo::Cluster& cluster = testing::H100Cluster();
  auto binder = api::KubeApiBinder::Create(ko).value();
  auto placer = sched::GangPlacer::Create(cluster).value();
  auto ext = api::Extender::Create(*placer, sched::ClusterState::Create(cluster).value(), {},
                                   nullptr, binder.get())
                 .value();
  const json filter_pod = {
      {"metadata", {{"name", "llama-0"}, {"namespace", "ml"}}},
      {"spec",
       {{"containers", {{{"name", "c"}, {"resources", {{"limits", {{"nvidia.com/gpu", 2}}}}}}}}}}};
  auto fr = ext->Filter(json{{"Pod", filter_pod}, {"NodeNames", {"gpu001"}}}.dump());
  ASSERT_TRUE(fr.ok()) << fr.status().ToString();
  ASSERT_EQ(json::parse(*fr)["NodeNames"].size(), 1u) << *fr;
  auto br =
      ext->Bind(json{{"PodName", "llama-0"}, {"PodNamespace", "ml"}, {"Node", "gpu001"}}.dump());
  ASSERT_TRUE(br.ok()) << br.status().ToString();
  ASSERT_EQ(json::parse(*br)["Error"], "") << *br;
  const std::optional<api::GangView> gang = ext->Gang("ml/llama-0");
  ASSERT_TRUE(gang.has_value());
  const topo::NodeTopology& node = cluster.topology(cluster.FindNode("gpu001"));
  std::vector<std::string> chosen;
  for (int pos : gang->slots[0].gpus) {
    chosen.push_back(std::to_string(node.gpus[pos].index));
  }

  // The node side: the plugin over gpu001's topology, the kubelet asking for two of its eight.
  auto plugin = DevicePlugin::Create(node, {}, testing::TestPluginOptions(dir.path())).value();
  plugin->EnableGangChoices([ko] { return api::ListNodePods(ko, "gpu001"); });
  ASSERT_TRUE(plugin->Start().ok());
  auto stub = PluginClient(testing::TestPluginOptions(dir.path()).socket_path());
  const std::vector<std::string> preferred = Ask(*stub, kAll, 2);
  EXPECT_EQ(preferred, chosen);
  EXPECT_EQ(plugin->state().gang_choices()->followed(), 1);
  // What the container is given: those GPUs, in ring order.
  auto a = plugin->state().Allocate(preferred);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  std::vector<std::string> ring;
  for (const auto& [k, v] : a->envs) {
    if (k == "TOPOSCHED_RING") ring = Split(v, ',');
  }
  std::sort(ring.begin(), ring.end());
  std::sort(chosen.begin(), chosen.end());
  EXPECT_EQ(ring, chosen);
  plugin->Stop();
}

TEST(NodePodsTest, ReadsTheRecordedPodAndNamesABadField) {
  std::ifstream in(testing::SourceDir() + "/tests/api/testdata/kube/pod-gpu-running.json");
  const json pod = json::parse(in);
  auto pods = ReadNodePods(json{{"items", {pod}}}.dump(), "nvidia.com/gpu", "toposched.io/gpus");
  ASSERT_TRUE(pods.ok()) << pods.status().ToString();
  ASSERT_EQ(pods->size(), 1u);
  EXPECT_EQ((*pods)[0].name, "runai-reservation/runai-reservation-gpu-i-0b498db53280b86a6-fzdhl");
  EXPECT_EQ((*pods)[0].requested, 1);
  EXPECT_TRUE((*pods)[0].taken);  // Running
  EXPECT_FALSE((*pods)[0].has_choice);
  json bad = pod;
  bad["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "1.5";
  EXPECT_THAT(ReadNodePods(json{{"items", {pod, bad}}}.dump(), "nvidia.com/gpu", "a/b"),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("items[1].spec.containers[0].resources.limits[nvidia.com/gpu]: "
                                 "expected a whole number of devices, got \"1.5\"")));
  EXPECT_THAT(ReadNodePods("[]", "nvidia.com/gpu", "a/b"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("expected a PodList")));
}

TEST(NodePodsTest, ParseChoiceRefusesWhatIsNotAnIndexList) {
  EXPECT_EQ(*ParseChoice("4,5,6,7", "toposched.io/gpus"), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_THAT(ParseChoice("", "toposched.io/gpus"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("expected GPU indices")));
  EXPECT_THAT(ParseChoice("1,,2", "toposched.io/gpus"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("expected GPU indices")));
  EXPECT_THAT(ParseChoice("1,2,1", "toposched.io/gpus"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("GPU 1 given twice")));
}

}  // namespace
}  // namespace toposched::deviceplugin
