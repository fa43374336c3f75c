// Binding and evicting through the Kubernetes API: a real HTTP server on 127.0.0.1 (port 0) plays
// the API server's pods/binding and pods/eviction endpoints (a real kube-apiserver cannot run
// here) and records what arrives; the extender's bind verb goes through the binder. Eviction
// answers are recorded ones (tests/api/testdata/kube/eviction/PROVENANCE.md).
#include "api/kube_binder.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api/extender.h"
#include "placer/gang.h"
#include "testing/clusters.h"
#include "testing/loopback_http.h"
#include "testing/status_matchers.h"

namespace toposched::api {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

using nlohmann::json;

struct Seen {
  std::string path, auth, body;
};

class FakeApiServer {
 public:
  FakeApiServer() {
    http_.server().Post(
        R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/(binding|eviction))",
        [this](const httplib::Request& req, httplib::Response& res) {
          std::lock_guard<std::mutex> lock(mu_);
          seen_.push_back({req.path, req.get_header_value("Authorization"), req.body});
          res.status = status_;
          res.set_content(reply_, "application/json");
        });
    http_.Start();
  }
  void Stop() { http_.Stop(); }
  std::string Url() const { return http_.Url(); }
  void Reply(int status, std::string body) {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = status;
    reply_ = std::move(body);
  }
  std::vector<Seen> seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

 private:
  std::mutex mu_;
  int status_ = 201;
  std::string reply_ =
      R"({"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201})";
  std::vector<Seen> seen_;
  // Last: stopped (its handler joined) before the members the handler reads are destroyed.
  testing::LoopbackHttp http_;
};

class KubeBinderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    token_file_ = ::testing::TempDir() + "/toposched-token-" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::ofstream(token_file_) << "tok-123\n";
  }
  void TearDown() override { std::remove(token_file_.c_str()); }
  // A binder or an evictor (`Client`) of the API server at `url`, with the test's token.
  template <typename Client>
  std::unique_ptr<Client> Made(const std::string& url) {
    KubeApiOptions o;
    o.server = url;
    o.token_file = token_file_;
    o.timeout_ms = 2000;
    auto c = Client::Create(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return std::move(c).value();
  }
  std::unique_ptr<KubeApiBinder> Binder(const std::string& url) { return Made<KubeApiBinder>(url); }
  std::unique_ptr<KubeApiEvictor> Evictor(const std::string& url) {
    return Made<KubeApiEvictor>(url);
  }
  // An extender on the H100 test cluster whose binds go through `binder`.
  std::unique_ptr<Extender> ExtenderWith(KubeApiBinder* binder) {
    placer_ = sched::GangPlacer::Create(testing::H100Cluster()).value();
    return Extender::Create(*placer_, sched::ClusterState::Create(testing::H100Cluster()).value(),
                            {}, nullptr, binder)
        .value();
  }
  // A pod in namespace ml of one container that asks for `gpus` GPUs.
  static json GpuPod(const std::string& name, const std::string& uid, int gpus) {
    return {{"metadata", {{"name", name}, {"namespace", "ml"}, {"uid", uid}}},
            {"spec",
             {{"containers",
               {{{"name", "c"}, {"resources", {{"limits", {{"nvidia.com/gpu", gpus}}}}}}}}}}};
  }
  std::string token_file_;
  std::unique_ptr<sched::GangPlacer> placer_;
};

TEST_F(KubeBinderTest, PostsTheBindingWithTheServiceAccountToken) {
  FakeApiServer api;
  auto binder = Binder(api.Url());
  ASSERT_TRUE(binder->Bind({"ml", "llama-0", "uid-1"}, "gpu017").ok());
  const auto seen = api.seen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].path, "/api/v1/namespaces/ml/pods/llama-0/binding");
  EXPECT_EQ(seen[0].auth, "Bearer tok-123");
  EXPECT_EQ(json::parse(seen[0].body), json::parse(R"({"apiVersion": "v1", "kind": "Binding",
                            "metadata": {"name": "llama-0", "namespace": "ml", "uid": "uid-1"},
                            "target": {"apiVersion": "v1", "kind": "Node", "name": "gpu017"}})"));
}

TEST_F(KubeBinderTest, ApiServerErrorsAndBadInputComeBackClearly) {
  FakeApiServer api;
  auto binder = Binder(api.Url());
  api.Reply(409, R"({"kind": "Status", "status": "Failure", "reason": "Conflict", "code": 409,
                     "message": "pod llama-0 is already assigned to node \"gpu003\""})");
  Status s = binder->Bind({"ml", "llama-0", "uid-1"}, "gpu017");
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "kube api: binding ml/llama-0 to gpu017: HTTP 409: pod llama-0 is already assigned "
            "to node \"gpu003\"");
  // A name that would change the URL path is refused before anything is sent.
  s = binder->Bind({"ml", "../../nodes", ""}, "gpu017");
  EXPECT_THAT(
      s, StatusIs(StatusCode::kInvalidArgument, HasSubstr("kube api: bad name \"../../nodes\"")));
  EXPECT_EQ(api.seen().size(), 1u);
  // No token: nothing sent.
  std::remove(token_file_.c_str());
  EXPECT_THAT(binder->Bind({"ml", "llama-0", ""}, "gpu017"),
              StatusIs(StatusCode::kNotFound,
                       HasSubstr("kube api: " + token_file_ + ": cannot read: no such file")));
  EXPECT_EQ(api.seen().size(), 1u);
  std::ofstream(token_file_) << "tok-123\n";
  // The server gone: Unavailable.
  api.Stop();
  s = binder->Bind({"ml", "llama-0", ""}, "gpu017");
  EXPECT_THAT(
      s, StatusIs(StatusCode::kUnavailable,
                  ::testing::AllOf(HasSubstr("kube api: POST http://"),
                                   HasSubstr("/api/v1/namespaces/ml/pods/llama-0/binding: "))));
  KubeApiOptions bad;
  bad.server = "10.96.0.1:443";
  EXPECT_THAT(
      KubeApiBinder::Create(bad),
      StatusIs(
          StatusCode::kInvalidArgument,
          HasSubstr("kube api: server: expected http(s)://host[:port], got \"10.96.0.1:443\"")));
  bad.server = "https://10.96.0.1:443/api";
  EXPECT_THAT(KubeApiBinder::Create(bad),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("kube api: server: expected http(s)://host[:port], got "
                                 "\"https://10.96.0.1:443/api\"")));
}

TEST_F(KubeBinderTest, ExtenderBindGoesThroughTheBinderAndRecordsOnlyOnSuccess) {
  FakeApiServer api;
  auto binder = Binder(api.Url());
  auto ext = ExtenderWith(binder.get());
  const json pod = GpuPod("solo", "uid-solo", 8);
  json f =
      json::parse(*ext->Filter(json{{"Pod", pod}, {"NodeNames", {"gpu001", "gpu002"}}}.dump()));
  ASSERT_EQ(f["NodeNames"].size(), 1u);
  const std::string node = f["NodeNames"][0];
  const std::string bind = json{
      {"PodName", "solo"},
      {"PodNamespace", "ml"},
      {"PodUID", "uid-solo"},
      {"Node", node}}.dump();
  api.Reply(500, R"({"kind": "Status", "message": "etcdserver: request timed out"})");
  json r = json::parse(*ext->Bind(bind));
  EXPECT_EQ(r["Error"], "toposched: binding failed: kube api: binding ml/solo to " + node +
                            ": HTTP 500: etcdserver: request timed out");
  EXPECT_FALSE(ext->Gang("ml/solo")->slots[0].bound);
  api.Reply(201, "{}");
  r = json::parse(*ext->Bind(bind));
  EXPECT_EQ(r["Error"], "");
  EXPECT_TRUE(ext->Gang("ml/solo")->slots[0].bound);
  EXPECT_EQ(api.seen().size(), 2u);
}

// The GPUs the gang placement chose travel on the Binding itself: its metadata.annotations,
// which the API server sets on the pod as it binds it (docs/kubernetes.md).
TEST_F(KubeBinderTest, ExtenderBindAnnotatesThePodWithItsChosenGpus) {
  FakeApiServer api;
  auto binder = Binder(api.Url());
  const topo::Cluster& cluster = testing::H100Cluster();
  auto ext = ExtenderWith(binder.get());
  const json pod = GpuPod("half", "uid-half", 4);
  json f = json::parse(*ext->Filter(json{{"Pod", pod}, {"NodeNames", {"gpu001"}}}.dump()));
  ASSERT_EQ(f["NodeNames"].size(), 1u);
  json r = json::parse(*ext->Bind(
      json{{"PodName", "half"}, {"PodNamespace", "ml"}, {"PodUID", "uid-half"}, {"Node", "gpu001"}}
          .dump()));
  ASSERT_EQ(r["Error"], "");
  const GangSlotView slot = ext->Gang("ml/half")->slots[0];
  ASSERT_EQ(slot.gpus.size(), 4u);
  std::string expected;
  for (int pos : slot.gpus) {
    expected += (expected.empty() ? "" : ",") +
                std::to_string(cluster.topology(cluster.FindNode("gpu001")).gpus[pos].index);
  }
  ASSERT_EQ(api.seen().size(), 1u);
  const json body = json::parse(api.seen()[0].body);
  EXPECT_EQ(body["metadata"]["annotations"], json({{"toposched.io/gpus", expected}}));
  EXPECT_EQ(body["target"]["name"], "gpu001");
  EXPECT_EQ(body["metadata"]["uid"], "uid-half");
  // A pod that carries the annotation (bound before, or copied from one) is still read: the key
  // is not taken for a misspelt layout key.
  json again = pod;
  again["metadata"]["name"] = "half-2";
  again["metadata"]["uid"] = "uid-half-2";
  again["metadata"]["annotations"] = {{"toposched.io/gpus", expected}};
  f = json::parse(*ext->Filter(json{{"Pod", again}, {"NodeNames", {"gpu001"}}}.dump()));
  EXPECT_EQ(f["NodeNames"], json({"gpu001"})) << f.dump();
}

TEST_F(KubeBinderTest, BindWithoutAnnotationsPostsTheSameBodyAsBind) {
  FakeApiServer api;
  auto binder = Binder(api.Url());
  ASSERT_TRUE(binder->BindAnnotated({"ml", "a", "u"}, "gpu017", {}).ok());
  ASSERT_TRUE(binder->Bind({"ml", "a", "u"}, "gpu017").ok());
  ASSERT_EQ(api.seen().size(), 2u);
  EXPECT_EQ(api.seen()[0].body, api.seen()[1].body);
  EXPECT_FALSE(json::parse(api.seen()[0].body)["metadata"].contains("annotations"));
}

std::string Recorded(const std::string& name) {
  std::ifstream in(std::string(TS_SOURCE_DIR) + "/tests/api/testdata/kube/eviction/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST_F(KubeBinderTest, EvictsThroughTheEvictionSubresourceWithTheRecordedShape) {
  FakeApiServer api;
  api.Reply(201, Recorded("eviction-201.json"));
  auto evictor = Evictor(api.Url());
  ASSERT_TRUE(evictor->Evict({"research", "llama-0", ""}, "preempted").ok());
  // With the UID: a newer pod of the same name is not evicted in its place.
  ASSERT_TRUE(evictor->Evict({"research", "llama-0", "uid-7"}, "preempted").ok());
  const auto seen = api.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].path, "/api/v1/namespaces/research/pods/llama-0/eviction");
  EXPECT_EQ(seen[0].auth, "Bearer tok-123");
  EXPECT_EQ(json::parse(seen[0].body), json::parse(Recorded("eviction-request.json")));
  json with_uid = json::parse(Recorded("eviction-request.json"));
  with_uid["deleteOptions"] = {{"preconditions", {{"uid", "uid-7"}}}};
  EXPECT_EQ(json::parse(seen[1].body), with_uid);
}

TEST_F(KubeBinderTest, EvictionRefusedByABudgetIsRetriedAGonePodIsDone) {
  FakeApiServer api;
  auto evictor = Evictor(api.Url());
  api.Reply(429, Recorded("eviction-429-pdb.json"));
  Status s = evictor->Evict({"research", "llama-0", ""}, "preempted");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(),
            "kube api: evicting research/llama-0: HTTP 429: Cannot evict pod as it would violate "
            "the pod's disruption budget.");
  api.Reply(404, Recorded("eviction-404.json"));
  EXPECT_TRUE(evictor->Evict({"research", "llama-0", ""}, "preempted").ok());
  api.Reply(403, R"({"kind":"Status","status":"Failure","message":"forbidden","code":403})");
  EXPECT_THAT(evictor->Evict({"research", "llama-0", ""}, "x"),
              StatusIs(StatusCode::kFailedPrecondition,
                       HasSubstr("kube api: evicting research/llama-0: HTTP 403: forbidden")));
  EXPECT_THAT(evictor->Evict({"research", "../x", ""}, "x"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("kube api: bad name \"../x\"")));
  EXPECT_EQ(api.seen().size(), 3u);
}

}  // namespace
}  // namespace toposched::api
