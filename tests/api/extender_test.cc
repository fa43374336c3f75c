// The Kubernetes scheduler extender against hand-written kube-scheduler requests (golden
// responses), a 16-pod gang sent pod by pod, node-name and full-Node variants, preemption with
// gang semantics, reservation expiry, and bad requests.
#include "api/extender.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "api/extender_k8s.h"
#include "api/extender_testing.h"
#include "placer/gang.h"
#include "state/cluster_state.h"
#include "testing/clusters.h"
#include "testing/status_matchers.h"

namespace toposched::api {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

using nlohmann::json;
using testing_api::Pod;

const std::string kData = std::string(TS_SOURCE_DIR) + "/tests/api/testdata/extender/";

std::string ReadExistingFile(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class ExtenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_ = &testing::H100Cluster();
    auto placer = sched::GangPlacer::Create(*cluster_);
    ASSERT_TRUE(placer.ok()) << placer.status().ToString();
    placer_ = std::move(placer).value();
  }

  sched::ClusterState Occupied() const {
    auto s = sched::ReadClusterStateJson(ReadExistingFile(kData + "occupancy.json"), *cluster_,
                                         "occupancy.json");
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return std::move(s).value();
  }
  sched::ClusterState Empty() const { return sched::ClusterState::Create(*cluster_).value(); }

  std::unique_ptr<Extender> Make(sched::ClusterState state, ExtenderOptions o = {}) {
    auto e = Extender::Create(*placer_, std::move(state), o, [this] { return now_us_; });
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return std::move(e).value();
  }

  std::vector<std::string> AllNodeNames() const {
    std::vector<std::string> names;
    for (const auto& n : cluster_->nodes) names.push_back(n.name);
    return names;
  }

  const topo::Cluster* cluster_ = nullptr;
  std::unique_ptr<sched::GangPlacer> placer_;
  int64_t now_us_ = 1'000'000;
};

json NodeObject(const std::string& name) {
  return {{"kind", "Node"},
          {"apiVersion", "v1"},
          {"metadata", {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}}}}},
          {"status", {{"allocatable", {{"nvidia.com/gpu", "8"}}}}}};
}

json NamesArgs(const json& pod, const std::vector<std::string>& names) {
  return {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", names}};
}

json NodesArgs(const json& pod, const std::vector<std::string>& names) {
  json items = json::array();
  for (const std::string& n : names) items.push_back(NodeObject(n));
  return {{"Pod", pod}, {"Nodes", {{"kind", "NodeList"}, {"apiVersion", "v1"}, {"items", items}}}};
}

json Call(StatusOr<std::string> r) {
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return json();
  return json::parse(*r);
}

std::string BindArgs(const std::string& name, const std::string& uid, const std::string& node) {
  return json{{"PodName", name}, {"PodNamespace", "ml"}, {"PodUID", uid}, {"Node", node}}.dump();
}

// ---- golden cases: hand-written kube-scheduler requests ----

TEST_F(ExtenderTest, CapturedRequestsGetGoldenResponses) {
  auto ext = Make(Occupied());
  std::istringstream cases(ReadExistingFile(kData + "cases.txt"));
  std::string line;
  int n = 0;
  while (std::getline(cases, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line);
    std::string verb, request, expected;
    f >> verb >> request >> expected;
    SCOPED_TRACE(line);
    const std::string body = ReadExistingFile(kData + request);
    StatusOr<std::string> got = verb == "filter"       ? ext->Filter(body)
                                : verb == "prioritize" ? ext->Prioritize(body)
                                : verb == "bind"       ? ext->Bind(body)
                                                       : ext->Preempt(body);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(json::parse(*got), json::parse(ReadExistingFile(kData + expected))) << *got;
    ++n;
  }
  EXPECT_EQ(n, 11);
  // The lone pod and pod 0 of the pair are bound; the mismatched bind released pair-1's GPUs.
  auto pair = ext->Gang("default/pair");
  ASSERT_TRUE(pair.has_value());
  EXPECT_TRUE(pair->slots[0].bound);
  EXPECT_EQ(pair->slots[0].node, "gpu004");
  EXPECT_FALSE(pair->slots[1].bound);
  EXPECT_EQ(pair->slots[1].node, "");
  sched::ClusterState s = ext->StateSnapshot();
  EXPECT_EQ(s.FreeMask(cluster_->FindNode("gpu003")).count(), 0);
  EXPECT_EQ(s.FreeMask(cluster_->FindNode("gpu004")).count(), 4);
  EXPECT_TRUE(s.CheckInvariants().ok());
}

// ---- the 16-pod gang, pod by pod ----

struct GangCase {
  const char* name;
  bool kubeflow;    // PyTorchJob labels instead of a pod group
  bool full_nodes;  // v1.Node objects instead of node names (nodeCacheCapable)
};

class GangTest : public ExtenderTest, public ::testing::WithParamInterface<GangCase> {};

TEST_P(GangTest, SixteenPodsLandWhereTheGangPlacementSaid) {
  const GangCase& c = GetParam();
  const sched::ClusterState initial = Occupied();
  // What the gang placer decides for the whole job on this occupancy.
  const job::JobSpec spec = testing_api::LlamaGangSpec();
  sched::Verdict expected = placer_->Place(initial, spec);
  ASSERT_TRUE(expected.fit()) << expected.Explain();
  const sched::Placement& want = *expected.placement;

  auto ext = Make(initial);
  const std::map<std::string, std::string> annotations = {{"toposched.io/group-size", "16"},
                                                          {"toposched.io/tp", "8"},
                                                          {"toposched.io/dp", "16"},
                                                          {"toposched.io/model-params", "70B"}};
  auto pod_of = [&](int rank) {
    std::map<std::string, std::string> labels;
    std::string name;
    if (c.kubeflow) {
      const bool master = rank == 0;
      name = master ? "llama-master-0" : "llama-worker-" + std::to_string(rank - 1);
      labels = {{"training.kubeflow.org/job-name", "llama"},
                {"training.kubeflow.org/replica-type", master ? "master" : "worker"},
                {"training.kubeflow.org/replica-index", std::to_string(master ? 0 : rank - 1)}};
    } else {
      name = "llama-" + std::to_string(rank);
      labels = {{"toposched.io/pod-group", "llama"},
                {"batch.kubernetes.io/job-completion-index", std::to_string(rank)}};
    }
    return std::make_pair(name,
                          Pod(name, "uid-llama-" + std::to_string(rank), 8, labels, annotations));
  };
  const std::vector<std::string> all = AllNodeNames();
  // kube-scheduler takes the pods in its own order, not by rank.
  const int order[16] = {5, 0, 11, 15, 2, 9, 1, 14, 7, 3, 12, 8, 6, 13, 4, 10};
  for (int rank : order) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    auto [name, pod] = pod_of(rank);
    const std::string node = cluster_->nodes[want.ranks[rank * 8].node].name;
    const json args = c.full_nodes ? NodesArgs(pod, all) : NamesArgs(pod, all);
    json f = Call(ext->Filter(args.dump()));
    if (c.full_nodes) {
      ASSERT_EQ(f["Nodes"]["items"].size(), 1u) << f.dump();
      EXPECT_EQ(f["Nodes"]["items"][0], NodeObject(node));
      EXPECT_EQ(f["Nodes"]["kind"], "NodeList");
      EXPECT_TRUE(f["NodeNames"].is_null());
    } else {
      EXPECT_EQ(f["NodeNames"], json::array({node}));
      EXPECT_TRUE(f["Nodes"].is_null());
    }
    EXPECT_EQ(f["FailedNodes"].size(), all.size() - 1);
    EXPECT_FALSE(f["FailedNodes"].contains(node));
    EXPECT_TRUE(f["FailedAndUnresolvableNodes"].empty());
    EXPECT_EQ(f["Error"], "");
    // Prioritize sees what survived every filter; add two other nodes to see the spread.
    const std::string other1 = node == "gpu003" ? "gpu004" : "gpu003";
    json p = Call(ext->Prioritize(NamesArgs(pod, {other1, node, "gpu006"}).dump()));
    ASSERT_EQ(p.size(), 3u);
    for (const json& hp : p) {
      EXPECT_EQ(hp["Score"], hp["Host"] == node ? 10 : 0) << p.dump();
    }
    json b = Call(ext->Bind(BindArgs(name, "uid-llama-" + std::to_string(rank), node)));
    EXPECT_EQ(b, json({{"Error", ""}}));
    now_us_ += 50'000;
  }
  auto g = ext->Gang("ml/llama");
  ASSERT_TRUE(g.has_value());
  ASSERT_EQ(g->slots.size(), 16u);
  sched::ClusterState got = ext->StateSnapshot();
  for (int rank = 0; rank < 16; ++rank) {
    EXPECT_TRUE(g->slots[rank].bound);
    // Node and the very GPUs the placement chose.
    EXPECT_EQ(g->slots[rank].node, cluster_->nodes[want.ranks[rank * 8].node].name);
    std::vector<int> gpus;
    for (int r = rank * 8; r < rank * 8 + 8; ++r) gpus.push_back(want.ranks[r].gpu);
    std::sort(gpus.begin(), gpus.end());
    EXPECT_EQ(g->slots[rank].gpus, gpus);
  }
  // The occupancy leaves 16 whole nodes only under leaf1: the gang fills it (best fit).
  EXPECT_EQ(want.domain, "leaf1");
  for (int n = cluster_->FindNode("gpu017"); n <= cluster_->FindNode("gpu032"); ++n) {
    EXPECT_EQ(got.FreeMask(n).count(), 0) << cluster_->nodes[n].name;
  }
  EXPECT_EQ(got.AllocationCount(), initial.AllocationCount() + 16);
  EXPECT_TRUE(got.CheckInvariants().ok());
}

INSTANTIATE_TEST_SUITE_P(Variants, GangTest,
                         ::testing::Values(GangCase{"PodGroupNodeNames", false, false},
                                           GangCase{"PodGroupFullNodes", false, true},
                                           GangCase{"KubeflowNodeNames", true, false},
                                           GangCase{"KubeflowFullNodes", true, true}),
                         [](const auto& info) { return std::string(info.param.name); });

// A gang that does not fit now answers FailedNodes (preemption may help); one that never fits
// answers FailedAndUnresolvableNodes. Nothing is reserved either way.
TEST_F(ExtenderTest, GangThatDoesNotFitIsResolvableOrNot) {
  auto ext = Make(Occupied());
  // 28 whole nodes are free: 30 pods of 8 GPUs do not fit now; 40 never fit 32 nodes.
  for (const auto& [size, unresolvable] : {std::pair{30, false}, std::pair{40, true}}) {
    const json pod = Pod("big-0", "uid-big-" + std::to_string(size), 8,
                         {{"toposched.io/pod-group", "big" + std::to_string(size)}},
                         {{"toposched.io/group-size", std::to_string(size)}});
    json f = Call(ext->Filter(NamesArgs(pod, {"gpu003", "gpu004"}).dump()));
    const json& bucket = unresolvable ? f["FailedAndUnresolvableNodes"] : f["FailedNodes"];
    const json& other = unresolvable ? f["FailedNodes"] : f["FailedAndUnresolvableNodes"];
    EXPECT_EQ(bucket.size(), 2u) << f.dump();
    EXPECT_TRUE(other.empty()) << f.dump();
    EXPECT_EQ(f["NodeNames"], json::array());
    const std::string reason = bucket["gpu003"];
    EXPECT_THAT(reason, HasSubstr(unresolvable ? "does not fit this cluster" : "does not fit now"))
        << reason;
  }
  EXPECT_EQ(ext->StateSnapshot().AllocationCount(), Occupied().AllocationCount());
}

// ---- reservations: expiry, mismatch, deletion ----

TEST_F(ExtenderTest, ReservationExpiresWhenTheGangStalls) {
  ExtenderOptions o;
  o.reservation_timeout_us = 10'000'000;
  auto ext = Make(Empty(), o);
  const json p0 = Pod("duo-0", "uid-duo-0", 8, {{"toposched.io/pod-group", "duo"}},
                      {{"toposched.io/group-size", "2"}});
  json f = Call(ext->Filter(NamesArgs(p0, AllNodeNames()).dump()));
  ASSERT_EQ(f["NodeNames"].size(), 1u);
  EXPECT_EQ(ext->StateSnapshot().AllocationCount(), 2u);  // the whole gang is reserved
  EXPECT_EQ(Call(ext->Bind(BindArgs("duo-0", "uid-duo-0", f["NodeNames"][0]))),
            json({{"Error", ""}}));
  now_us_ += 11'000'000;  // pod 1 never shows up in time
  const json other = Pod("solo", "uid-solo", 1);
  (void)Call(ext->Filter(NamesArgs(other, AllNodeNames()).dump()));
  auto g = ext->Gang("ml/duo");
  ASSERT_TRUE(g.has_value());
  EXPECT_TRUE(g->slots[0].bound);
  EXPECT_EQ(g->slots[1].node, "");  // released
  EXPECT_EQ(g->last_decision, "reservation expired");
  // duo-0 (bound) + solo (just reserved).
  EXPECT_EQ(ext->StateSnapshot().AllocationCount(), 2u);
  // The late pod is placed again, as the rest of its gang.
  const json p1 = Pod("duo-1", "uid-duo-1", 8, {{"toposched.io/pod-group", "duo"}},
                      {{"toposched.io/group-size", "2"}});
  f = Call(ext->Filter(NamesArgs(p1, AllNodeNames()).dump()));
  ASSERT_EQ(f["NodeNames"].size(), 1u);
  EXPECT_NE(f["NodeNames"][0], ext->Gang("ml/duo")->slots[0].node);
}

TEST_F(ExtenderTest, GangWithoutBoundPodsIsForgottenAfterTheTimeout) {
  auto ext = Make(Empty());
  const json p0 = Pod("trio-0", "uid-trio-0", 8, {{"toposched.io/pod-group", "trio"}},
                      {{"toposched.io/group-size", "3"}});
  (void)Call(ext->Filter(NamesArgs(p0, AllNodeNames()).dump()));
  EXPECT_EQ(ext->StateSnapshot().AllocationCount(), 3u);
  now_us_ += ExtenderOptions().reservation_timeout_us + 1;
  (void)Call(ext->Prioritize(NamesArgs(Pod("x", "uid-x", 0), {"gpu001"}).dump()));
  // Sweeping happens on GPU pods' calls and binds.
  const std::string err = Call(ext->Bind(BindArgs("trio-0", "uid-trio-0", "gpu001")))["Error"];
  EXPECT_THAT(err, HasSubstr("pod ml/trio-0 has no reservation")) << err;
  EXPECT_FALSE(ext->Gang("ml/trio").has_value());
  EXPECT_EQ(ext->StateSnapshot().AllocationCount(), 0u);
}

TEST_F(ExtenderTest, PodDeletedFreesItsGpus) {
  auto ext = Make(Empty());
  const json pod = Pod("one", "uid-one", 8);
  json f = Call(ext->Filter(NamesArgs(pod, AllNodeNames()).dump()));
  ASSERT_EQ(f["NodeNames"].size(), 1u);
  EXPECT_EQ(Call(ext->Bind(BindArgs("one", "uid-one", f["NodeNames"][0]))), json({{"Error", ""}}));
  EXPECT_EQ(ext->StateSnapshot().AllocationCount(), 1u);
  EXPECT_EQ(Call(ext->PodDeleted(R"({"PodUID": "uid-one"})")), json({{"Error", ""}}));
  EXPECT_EQ(ext->StateSnapshot().AllocationCount(), 0u);
  EXPECT_FALSE(ext->Gang("ml/one").has_value());
  EXPECT_NE(Call(ext->PodDeleted(R"({"PodUID": "uid-one"})"))["Error"], "");
}

// ---- preemption with gang semantics ----

class PreemptTest : public ExtenderTest {
 protected:
  // Fills the empty cluster: gang "duo" (2 pods x 8 GPUs), two 4-GPU pods sharing one node,
  // and 8-GPU fillers on every other node. Records where each pod went.
  void Fill(Extender& ext) {
    auto place = [&](const std::string& name, const json& pod) {
      json f = Call(ext.Filter(NamesArgs(pod, AllNodeNames()).dump()));
      ASSERT_EQ(f["NodeNames"].size(), 1u) << name << ": " << f.dump();
      const std::string node = f["NodeNames"][0];
      ASSERT_EQ(Call(ext.Bind(BindArgs(name, "uid-" + name, node))), json({{"Error", ""}}));
      where_[name] = node;
    };
    for (int i = 0; i < 2; ++i) {
      const std::string name = "duo-" + std::to_string(i);
      place(name,
            Pod(name, "uid-" + name, 8,
                {{"toposched.io/pod-group", "duo"}, {"toposched.io/pod-index", std::to_string(i)}},
                {{"toposched.io/group-size", "2"}}));
    }
    place("half-a", Pod("half-a", "uid-half-a", 4));
    place("half-b", Pod("half-b", "uid-half-b", 4));
    ASSERT_EQ(where_["half-a"], where_["half-b"]);
    for (int i = 0; i < 29; ++i) {
      const std::string name = "filler-" + std::to_string(i);
      place(name, Pod(name, "uid-" + name, 8));
    }
    ASSERT_EQ(ext.StateSnapshot().ClusterCapacity().free_gpus, 0);
  }
  std::map<std::string, std::string> where_;
};

TEST_F(PreemptTest, VictimsFreeWholeGangsAndNodesThatCannotHelpAreDropped) {
  auto ext = Make(Empty());
  Fill(*ext);
  const json big = Pod("big-0", "uid-big-0", 8, {{"toposched.io/pod-group", "big"}},
                       {{"toposched.io/group-size", "2"}});
  // Full cluster: the gang does not fit now (resolvable: preemption may help).
  json f = Call(ext->Filter(NamesArgs(big, AllNodeNames()).dump()));
  EXPECT_EQ(f["FailedNodes"].size(), 32u);

  const std::string duo_node = where_["duo-0"], half_node = where_["half-a"],
                    filler_node = where_["filler-0"];
  // Meta victims (nodeCacheCapable) and full victims give the same answer.
  for (bool meta : {true, false}) {
    SCOPED_TRACE(meta ? "meta" : "full");
    auto victims = [&](const std::string& pod_name) {
      json v = meta ? json{{"UID", "uid-" + pod_name}} : Pod(pod_name, "uid-" + pod_name, 8);
      return json{{"Pods", json::array({v})}, {"NumPDBViolations", 0}};
    };
    json args = {{"Pod", big},
                 {meta ? "NodeNameToMetaVictims" : "NodeNameToVictims",
                  {{duo_node, victims("duo-0")},
                   {half_node, victims("half-a")},
                   {filler_node, victims("filler-0")}}}};
    json r = Call(ext->Preempt(args.dump()));
    // Evicting duo-0 takes gang duo down, freeing both its nodes: 16 GPUs, room for "big".
    // half-a frees 4 GPUs and filler-0 8: "big" (16) still does not fit.
    json want = {{"NodeNameToMetaVictims",
                  {{duo_node, {{"Pods", {{{"UID", "uid-duo-0"}}}}, {"NumPDBViolations", 0}}}}}};
    EXPECT_EQ(r, want);
  }
  // A lone 8-GPU pod: the filler's node helps, the half node does not.
  const json vip = Pod("vip", "uid-vip", 8);
  json args = {{"Pod", vip},
               {"NodeNameToMetaVictims",
                {{half_node, {{"Pods", {{{"UID", "uid-half-a"}}}}, {"NumPDBViolations", 1}}},
                 {filler_node, {{"Pods", {{{"UID", "uid-filler-0"}}}}, {"NumPDBViolations", 2}}}}}};
  json r = Call(ext->Preempt(args.dump()));
  EXPECT_EQ(
      r,
      json({{"NodeNameToMetaVictims",
             {{filler_node, {{"Pods", {{{"UID", "uid-filler-0"}}}}, {"NumPDBViolations", 2}}}}}}));
  // Preempt decides nothing by itself: the state is as full as before.
  EXPECT_EQ(ext->StateSnapshot().ClusterCapacity().free_gpus, 0);
}

// ---- bad requests: clear errors, nothing changes ----

TEST_F(ExtenderTest, BadRequestsGetClearErrorsAndChangeNothing) {
  auto ext = Make(Occupied());
  const std::string pod = Pod("p", "uid-p", 8).dump();
  json bad_gpu = Pod("p", "uid-p", 8);
  bad_gpu["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "8.5";
  struct Case {
    const char* verb;
    std::string body;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"filter", "{\"Pod\": ", "ExtenderArgs: malformed JSON"},
      {"filter", "[1, 2]", "ExtenderArgs: expected a JSON object, got array"},
      {"filter", R"({"NodeNames": ["gpu001"]})", "ExtenderArgs: Pod: missing"},
      {"filter", "{\"Pod\": " + pod + "}", "neither Nodes nor NodeNames given"},
      {"filter", "{\"Pod\": " + pod + ", \"NodeNames\": [], \"Node\": 1}",
       "ExtenderArgs: unknown field \"Node\" (known: Pod, Nodes, NodeNames)"},
      {"filter", "{\"Pod\": " + pod + ", \"NodeNames\": [7]}",
       "ExtenderArgs.NodeNames[0]: expected a node name"},
      {"filter", "{\"Pod\": " + pod + ", \"Nodes\": {\"items\": [{\"metadata\": {}}]}}",
       "ExtenderArgs.Nodes.items[0].metadata.name: missing"},
      {"prioritize", NamesArgs(bad_gpu, {"gpu001"}).dump(),
       "ExtenderArgs.Pod.spec.containers[0].resources.limits[\"nvidia.com/gpu\"]: expected a "
       "whole, non-negative number of devices, got \"8.5\""},
      {"prioritize", R"({"Pod": {"metadata": {"namespace": "ml"}}, "NodeNames": []})",
       "ExtenderArgs.Pod.metadata.name: missing"},
      {"bind", R"({"PodNamespace": "ml", "Node": "gpu001"})",
       "ExtenderBindingArgs: PodName (or PodUID) missing"},
      {"bind", R"({"PodName": "p", "PodUID": "uid-p"})", "ExtenderBindingArgs.Node: missing"},
      {"bind", R"({"PodName": "p", "Node": "gpu001", "Force": true})",
       "ExtenderBindingArgs: unknown field \"Force\""},
      {"preempt", R"({"NodeNameToMetaVictims": {}})", "ExtenderPreemptionArgs: Pod: missing"},
      {"preempt", "{\"Pod\": " + pod + R"(, "NodeNameToMetaVictims": {"gpu001": {"Pods": [{}]}}})",
       "ExtenderPreemptionArgs.NodeNameToMetaVictims[\"gpu001\"].Pods[0].UID: missing"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    const std::string verb = c.verb;
    StatusOr<std::string> r = verb == "filter"       ? ext->Filter(c.body)
                              : verb == "prioritize" ? ext->Prioritize(c.body)
                              : verb == "bind"       ? ext->Bind(c.body)
                                                     : ext->Preempt(c.body);
    ASSERT_THAT(r, StatusIs(StatusCode::kInvalidArgument, HasSubstr(c.message)))
        << (r.ok() ? *r : std::string());
  }
  EXPECT_TRUE(ext->GangKeys().empty());
  EXPECT_EQ(ext->StateSnapshot().AllocationCount(), Occupied().AllocationCount());
}

// Problems of a well-formed pod are answers: every node unresolvable, with the reason.
TEST_F(ExtenderTest, BadGangAnnotationsAreUnresolvableWithTheReason) {
  auto ext = Make(Occupied());
  struct Case {
    std::map<std::string, std::string> labels, annotations;
    const char* reason;
  };
  const std::vector<Case> cases = {
      {{{"toposched.io/pod-group", "g"}}, {}, "group size unknown"},
      {{{"toposched.io/pod-group", "g"}},
       {{"toposched.io/group-size", "x"}},
       "toposched.io/group-size: expected an integer in [1, 1048576], got \"x\""},
      {{{"toposched.io/pod-group", "g"}},
       {{"toposched.io/group-size", "4"}, {"toposched.io/tpp", "8"}},
       "toposched.io/tpp: unknown toposched key"},
      {{{"toposched.io/pod-group", "g"}},
       {{"toposched.io/group-size", "4"}, {"toposched.io/tp", "8"}, {"toposched.io/dp", "3"}},
       "layout.dp"},
      {{{"toposched.io/pod-group", "g"}},
       {{"toposched.io/group-size", "2"}, {"toposched.io/job-constraint", "required:rack"}},
       "unknown level \"rack\""},
      {{{"toposched.io/pod-group", "g"}},
       {{"toposched.io/group-size", "2"}, {"toposched.io/run-time", "10h"}},
       "toposched.io/comm-share: missing (toposched.io/run-time and toposched.io/comm-share go "
       "together)"},
      {{{"toposched.io/pod-group", "g"}},
       {{"toposched.io/group-size", "2"},
        {"toposched.io/run-time", "10h"},
        {"toposched.io/comm-share", "30%"}},
       "toposched.io/comm-share: expected a number from 0 to 1, got \"30%\""},
      {{{"training.kubeflow.org/job-name", "j"},
        {"training.kubeflow.org/replica-type", "ps"},
        {"training.kubeflow.org/replica-index", "0"}},
       {{"toposched.io/group-size", "2"}},
       "unknown replica type \"ps\""},
  };
  int i = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.reason);
    const json pod =
        Pod("p" + std::to_string(i), "uid-" + std::to_string(i), 8, c.labels, c.annotations);
    ++i;
    json f = Call(ext->Filter(NamesArgs(pod, {"gpu003", "gpu004"}).dump()));
    ASSERT_EQ(f["FailedAndUnresolvableNodes"].size(), 2u) << f.dump();
    const std::string reason = f["FailedAndUnresolvableNodes"]["gpu003"];
    EXPECT_THAT(reason, HasSubstr(c.reason)) << reason;
    EXPECT_EQ(f["NodeNames"], json::array());
  }
  EXPECT_EQ(ext->StateSnapshot().AllocationCount(), Occupied().AllocationCount());
}

// A gang's pods may declare its run-time estimate (docs/jobs.md), which its job then carries.
TEST(GangSpecAnnotations, RunTimeAndCommShareGiveTheJobItsEstimate) {
  k8s::Pod pod;
  pod.name_space = "ml";
  pod.name = "llama-0";
  pod.gpus = 8;
  pod.labels = {{"toposched.io/pod-group", "llama"}};
  pod.annotations = {{"toposched.io/group-size", "2"},
                     {"toposched.io/run-time", "3d"},
                     {"toposched.io/comm-share", "0.25"}};
  const ExtenderOptions o;
  auto m = k8s::MembershipOf(pod, o);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto spec = k8s::GangSpec(pod, *m, o);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_TRUE(spec->estimate.has_value());
  EXPECT_EQ(spec->estimate->run_s, 3 * 86400);
  EXPECT_EQ(spec->estimate->comm_share, 0.25);
  pod.annotations.erase("toposched.io/run-time");
  pod.annotations.erase("toposched.io/comm-share");
  auto plain = k8s::GangSpec(pod, *m, o);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_FALSE(plain->estimate.has_value());
}

TEST_F(ExtenderTest, OptionsAreValidated) {
  ExtenderOptions o;
  o.annotation_prefix = "toposched.io";
  EXPECT_THAT(
      Extender::Create(*placer_, Empty(), o),
      StatusIs(
          StatusCode::kInvalidArgument,
          HasSubstr("extender options: annotation_prefix: must end in '/', got \"toposched.io\"")));
  o = {};
  o.max_score = 11;
  EXPECT_THAT(Extender::Create(*placer_, Empty(), o),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("extender options: max_score: must be in [1, 10]")));
  o = {};
  o.group_name_key.clear();
  EXPECT_THAT(
      Extender::Create(*placer_, Empty(), o),
      StatusIs(StatusCode::kInvalidArgument, HasSubstr("extender options: group_name_key: empty")));
}

}  // namespace
}  // namespace toposched::api
