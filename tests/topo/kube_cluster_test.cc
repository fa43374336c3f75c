// A cluster model from `kubectl get nodes -o json`: the recorded Node list (real GFD labels; one
// A16 vGPU node, one CPU node: tests/api/testdata/kube/PROVENANCE.md) for what a real list
// gives, and node lists built here with the tier labels as topograph documents them
// (network.topology.kubernetes.io/{datacenter,spine,block,accelerator}) for the tree rules:
// no recorded list with those labels is at hand.
#include "topo/io/kube_cluster.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "testing/samples.h"
#include "testing/status_matchers.h"

namespace toposched::topo::io {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

const std::string kH100 = testing::SourceDir() +
                          "/data/samples/nvidia-smi/24-h100-sxm-8gpu-nv18-8nic-pix-sglang30401.txt";

nlohmann::json GpuNode(const std::string& name, const std::map<std::string, std::string>& tiers,
                       int gpus = 8) {
  nlohmann::json labels = {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                           {"nvidia.com/gpu.count", std::to_string(gpus)}};
  for (const auto& [k, v] : tiers) labels["network.topology.kubernetes.io/" + k] = v;
  return {{"metadata", {{"name", name}, {"labels", labels}}}};
}

KubeClusterOptions H100Options() {
  KubeClusterOptions o;
  o.product_topology["NVIDIA-H100-80GB-HBM3"] = kH100;
  return o;
}

TEST(KubeCluster, RecordedListSkipsCpuNodesAndChecksTheGpuCount) {
  KubeClusterOptions o;
  o.default_topology = kH100;
  auto r =
      ReadKubeNodesCluster(testing::SourceDir() + "/tests/api/testdata/kube/nodes-gfd.json", o);
  ASSERT_THAT(r,
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("nodes-gfd.json: items[0] (nori)")));
  // nori is an A16 vGPU node with one GPU; the H100 file has eight.
  EXPECT_THAT(r.status().message(), HasSubstr("items[0] (nori): Kubernetes reports 1 GPUs"))
      << r.status().message();
  o.default_topology.clear();
  auto none =
      ReadKubeNodesCluster(testing::SourceDir() + "/tests/api/testdata/kube/nodes-gfd.json", o);
  ASSERT_THAT(none, StatusIs(StatusCode::kInvalidArgument,
                             HasSubstr("GPU product \"NVIDIA-A16-4Q\" has no node topology")));
}

TEST(KubeCluster, TierLabelsBecomeTheNetworkTree) {
  nlohmann::json list = {{"kind", "NodeList"}, {"items", nlohmann::json::array()}};
  list["items"].push_back(GpuNode("g1", {{"datacenter", "dc1"}, {"spine", "s1"}, {"block", "b1"}}));
  list["items"].push_back(GpuNode("g2", {{"datacenter", "dc1"}, {"spine", "s1"}, {"block", "b1"}}));
  list["items"].push_back(GpuNode("g3", {{"datacenter", "dc1"}, {"spine", "s1"}, {"block", "b2"}}));
  list["items"].push_back(GpuNode("g4", {{"datacenter", "dc1"}, {"spine", "s2"}, {"block", "b3"}}));
  list["items"].push_back({{"metadata", {{"name", "cpu-1"}}}});
  KubeClusterOptions o = H100Options();
  o.oversubscription["block"] = 2;
  auto r = ClusterFromKubeNodes(list.dump(), "nodes.json", o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Cluster& c = r->cluster;
  ASSERT_EQ(c.levels.size(), 3u);
  EXPECT_EQ(c.levels[0].name, "datacenter");
  EXPECT_EQ(c.levels[1].name, "spine");
  EXPECT_EQ(c.levels[2].name, "block");
  EXPECT_EQ(c.levels[2].oversubscription, 2);
  EXPECT_EQ(c.nodes.size(), 4u);
  EXPECT_EQ(r->skipped, std::vector<std::string>{"cpu-1"});
  EXPECT_EQ(c.profiles.size(), 1u);
  EXPECT_EQ(c.TotalGpus(), 32);
  EXPECT_EQ(c.domains[c.nodes[c.FindNode("g1")].domain].name, "block-b1");
  EXPECT_EQ(c.MeetLevel(c.FindNode("g1"), c.FindNode("g2")), 2) << "same block";
  EXPECT_EQ(c.MeetLevel(c.FindNode("g1"), c.FindNode("g3")), 1) << "same spine";
  EXPECT_EQ(c.MeetLevel(c.FindNode("g1"), c.FindNode("g4")), 0) << "same datacenter";
  EXPECT_TRUE(c.nvlink_domains.empty());
}

TEST(KubeCluster, NoTierLabelsIsOneFlatNetwork) {
  nlohmann::json list = {{"items", {GpuNode("a", {}), GpuNode("b", {})}}};
  auto r = ClusterFromKubeNodes(list.dump(), "nodes.json", H100Options());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->cluster.levels.size(), 1u);
  EXPECT_EQ(r->cluster.domains.size(), 1u);
}

TEST(KubeCluster, CliquesAreNvlinkDomainsWithTheirBandwidth) {
  nlohmann::json a = GpuNode("a", {{"block", "b1"}});
  nlohmann::json b = GpuNode("b", {{"block", "b1"}});
  nlohmann::json d = GpuNode("d", {{"block", "b1"}});
  a["metadata"]["labels"]["nvidia.com/gpu.clique"] = "c0ffee.1";
  b["metadata"]["labels"]["nvidia.com/gpu.clique"] = "c0ffee.1";
  d["metadata"]["labels"]["network.topology.kubernetes.io/accelerator"] = "nvl2";
  nlohmann::json list = {{"items", {a, b, d}}};
  auto refused = ClusterFromKubeNodes(list.dump(), "nodes.json", H100Options());
  ASSERT_THAT(refused, StatusIs(StatusCode::kInvalidArgument, HasSubstr("nvlink_gbps")));
  KubeClusterOptions o = H100Options();
  o.nvlink_gbps = 900;
  auto r = ClusterFromKubeNodes(list.dump(), "nodes.json", o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->cluster.nvlink_domains.size(), 2u);
  EXPECT_EQ(r->cluster.nvlink_domains[0].name, "nvl-c0ffee.1");
  EXPECT_EQ(r->cluster.nvlink_domains[0].nodes.size(), 2u);
  EXPECT_EQ(r->cluster.nvlink_domains[0].gpu_bandwidth_gbps, 900);
  EXPECT_EQ(r->cluster.nodes[2].nvlink_domain, 1);
}

TEST(KubeCluster, BadListsAreRefusedNamingWhere) {
  const KubeClusterOptions o = H100Options();
  struct Case {
    nlohmann::json list;
    const char* says;
  };
  nlohmann::json missing_tier = GpuNode("b", {});
  nlohmann::json two_parents = GpuNode("c", {{"spine", "s2"}, {"block", "b1"}});
  nlohmann::json bad_count = GpuNode("x", {});
  bad_count["metadata"]["labels"]["nvidia.com/gpu.count"] = "eight";
  nlohmann::json four = GpuNode("y", {}, 4);
  const Case cases[] = {
      {nlohmann::json::array(), "expected a node list"},
      {{{"items", {{{"metadata", {{"name", ""}}}}}}}, "items[0]: metadata.name"},
      {{{"items", {GpuNode("a", {{"block", "b1"}}), missing_tier}}},
       "node \"b\" has no label network.topology.kubernetes.io/block"},
      {{{"items", {GpuNode("a", {{"spine", "s1"}, {"block", "b1"}}), two_parents}}},
       "network.topology.kubernetes.io/block=b1 is under two spines"},
      {{{"items", {bad_count}}}, "items[0] (x): label nvidia.com/gpu.count: expected a whole"},
      {{{"items", {four}}}, "Kubernetes reports 4 GPUs, its topology file"},
      {{{"items", {GpuNode("a", {}), GpuNode("a", {})}}}, "node \"a\" listed twice"},
      {{{"items", {{{"metadata", {{"name", "cpu"}}}}}}}, "no node with GPUs"},
  };
  for (const Case& c : cases) {
    auto r = ClusterFromKubeNodes(c.list.dump(), "nodes.json", o);
    ASSERT_THAT(r, StatusIs(StatusCode::kInvalidArgument, HasSubstr(c.says))) << c.says;
    EXPECT_EQ(r.status().message().rfind("nodes.json", 0), 0u) << r.status().message();
  }
}

}  // namespace
}  // namespace toposched::topo::io
