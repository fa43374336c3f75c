#include "topo/io/cluster_yaml.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "testing/samples.h"
#include "testing/status_matchers.h"

namespace toposched::topo::io {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

Cluster LoadOrDie(const std::string& rel) {
  auto c = ReadClusterYamlFile(testing::SourceDir() + "/" + rel);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(c).value() : Cluster();
}

std::vector<std::string> NodeNames(const Cluster& c, const std::vector<int>& ids) {
  std::vector<std::string> out;
  for (int id : ids) out.push_back(c.nodes[id].name);
  return out;
}

std::vector<std::string> Range(const std::string& prefix, int from, int to, int width) {
  std::vector<std::string> out;
  for (int i = from; i <= to; ++i) {
    std::string num = std::to_string(i);
    out.push_back(prefix + std::string(width - num.size(), '0') + num);
  }
  return out;
}

TEST(ClusterYaml, H100TwoRackExample) {
  Cluster c = LoadOrDie("data/clusters/h100-2rack.yaml");
  ASSERT_EQ(c.nodes.size(), 32u);
  EXPECT_EQ(c.name, "h100-2rack");
  EXPECT_EQ(c.TotalGpus(), 256);
  ASSERT_EQ(c.levels.size(), 2u);
  EXPECT_EQ(c.levels[0].name, "spine");
  EXPECT_EQ(c.levels[1].name, "leaf");
  EXPECT_DOUBLE_EQ(c.levels[1].uplink_gbps, 51200);
  EXPECT_DOUBLE_EQ(c.levels[1].oversubscription, 1);

  const int leaf0 = c.FindDomain("leaf0"), leaf1 = c.FindDomain("leaf1");
  ASSERT_GE(leaf0, 0);
  ASSERT_GE(leaf1, 0);
  EXPECT_EQ(c.domains[leaf0].parent, c.FindDomain("spine0"));
  EXPECT_EQ(NodeNames(c, c.NodesUnder(leaf0)), Range("gpu", 1, 16, 3));
  EXPECT_EQ(NodeNames(c, c.NodesUnder(leaf1)), Range("gpu", 17, 32, 3));
  EXPECT_EQ(c.NodesUnder(c.FindDomain("spine0")).size(), 32u);
  EXPECT_EQ(c.nodes[c.FindNode("gpu017")].domain, leaf1);

  const int a = c.FindNode("gpu001"), b = c.FindNode("gpu016"), d = c.FindNode("gpu017");
  EXPECT_EQ(c.MeetLevel(a, b), c.FindLevel("leaf"));
  EXPECT_EQ(c.MeetLevel(a, d), c.FindLevel("spine"));
  EXPECT_EQ(c.MeetLevel(a, a), 2);

  ASSERT_EQ(c.profiles.size(), 1u);
  const HardwareProfile& p = c.profiles[0];
  EXPECT_EQ(p.topology_file,
            "../samples/nvidia-smi/24-h100-sxm-8gpu-nv18-8nic-pix-sglang30401.txt");
  ASSERT_EQ(p.topology.gpus.size(), 8u);
  ASSERT_EQ(p.topology.nics.size(), 8u);
  EXPECT_EQ(p.topology.gpu_model, "H100-SXM5-80GB");
  for (const Gpu& g : p.topology.gpus) {
    EXPECT_EQ(g.model, "H100-SXM5-80GB");
    EXPECT_EQ(g.memory_mib, 80 * 1024);
  }
  for (const Nic& n : p.topology.nics) {
    EXPECT_EQ(n.rate_gbps, 400.0);
    EXPECT_EQ(n.link_layer, LinkLayer::kInfiniBand);
  }
  EXPECT_EQ(c.rails.count, 8);
  EXPECT_EQ(c.rails.scope_level, "spine");
  EXPECT_TRUE(c.nvlink_domains.empty());
}

TEST(ClusterYaml, Gb200Nvl72Example) {
  Cluster c = LoadOrDie("data/clusters/gb200-nvl72.yaml");
  ASSERT_EQ(c.nodes.size(), 36u);
  EXPECT_EQ(c.TotalGpus(), 144);
  ASSERT_EQ(c.levels.size(), 2u);
  EXPECT_EQ(c.levels[1].name, "rack");
  EXPECT_DOUBLE_EQ(c.levels[1].oversubscription, 2);
  EXPECT_EQ(c.profiles[0].topology.gpus.size(), 4u);
  EXPECT_EQ(c.profiles[0].topology.gpu_model, "GB200");

  // Racks come from the generator, the spine lists them by name.
  const int rack0 = c.FindDomain("rack0"), rack1 = c.FindDomain("rack1");
  ASSERT_GE(rack0, 0);
  ASSERT_GE(rack1, 0);
  EXPECT_EQ(c.domains[rack0].parent, c.FindDomain("spine0"));
  EXPECT_EQ(c.domains[c.FindDomain("spine0")].children, (std::vector<int>{rack0, rack1}));
  EXPECT_EQ(NodeNames(c, c.NodesUnder(rack0)), Range("gb", 1, 18, 3));
  EXPECT_EQ(NodeNames(c, c.NodesUnder(rack1)), Range("gb", 19, 36, 3));

  ASSERT_EQ(c.nvlink_domains.size(), 2u);
  for (const NvlinkDomain& nv : c.nvlink_domains) {
    int gpus = 0;
    for (int n : nv.nodes) gpus += static_cast<int>(c.topology(n).gpus.size());
    EXPECT_EQ(gpus, 72) << nv.name;
    EXPECT_DOUBLE_EQ(nv.gpu_bandwidth_gbps, 900);
  }
  EXPECT_EQ(c.nodes[c.FindNode("gb018")].nvlink_domain, 0);
  EXPECT_EQ(c.nodes[c.FindNode("gb019")].nvlink_domain, 1);
  EXPECT_EQ(c.MeetLevel(c.FindNode("gb001"), c.FindNode("gb018")), 1);
  EXPECT_EQ(c.MeetLevel(c.FindNode("gb001"), c.FindNode("gb019")), 0);
  EXPECT_EQ(c.rails.count, 4);
}

TEST(ClusterYaml, MixedProfilesAndGenerators) {
  Cluster c = LoadOrDie("tests/topo/testdata/cluster/mixed.yaml");
  ASSERT_EQ(c.nodes.size(), 11u);
  EXPECT_EQ(c.TotalGpus(), 4 * 16 + 7 * 4);
  EXPECT_EQ(c.profiles[c.FindProfile("dgx2")].topology.gpus.size(), 16u);
  const NodeTopology& pc = c.profiles[c.FindProfile("pcie4")].topology;
  ASSERT_EQ(pc.nics.size(), 2u);
  EXPECT_EQ(pc.nics[1].link_layer, LinkLayer::kRoCE);
  EXPECT_EQ(c.nodes[c.FindNode("pc07")].health, Health::kUnhealthy);
  // Leaves: the explicit dgx-leaf, then tor0..2 over pc01..07 in threes; spines group leaves in
  // pairs; one zone over both spines.
  EXPECT_EQ(NodeNames(c, c.NodesUnder(c.FindDomain("tor2"))), (std::vector<std::string>{"pc07"}));
  EXPECT_EQ(c.domains[c.FindDomain("dgx-leaf")].parent, c.FindDomain("spine0"));
  EXPECT_EQ(c.domains[c.FindDomain("tor0")].parent, c.FindDomain("spine0"));
  EXPECT_EQ(c.domains[c.FindDomain("tor1")].parent, c.FindDomain("spine1"));
  EXPECT_EQ(c.domains[c.FindDomain("spine1")].parent, c.FindDomain("zone0"));
  EXPECT_EQ(c.MeetLevel(c.FindNode("dgx1"), c.FindNode("pc01")), 1);
  EXPECT_EQ(c.MeetLevel(c.FindNode("dgx1"), c.FindNode("pc04")), 0);
  EXPECT_EQ(c.MeetLevel(c.FindNode("pc01"), c.FindNode("pc03")), 2);
  EXPECT_DOUBLE_EQ(c.levels[2].oversubscription, 1.5);
}

TEST(ClusterYaml, NoNetworkIsAFlatCluster) {
  auto c = ParseClusterYaml(
      "profiles: [{name: s, synthetic: \"gpu:2 nvlink:4\"}]\n"
      "nodes: [{hosts: \"w[1-3]\", profile: s}]\n",
      "flat.yaml", "");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->name, "flat");
  EXPECT_EQ(c->TotalGpus(), 6);
  EXPECT_TRUE(c->levels.empty());
  EXPECT_EQ(c->MeetLevel(0, 1), -1);
}

// A valid spec; each invalid case below replaces one line (or a few characters) of it, so the
// expected line numbers can be read off here.
constexpr char kBase[] =
    "profiles:\n"                                                              // 1
    "  - name: s8\n"                                                           // 2
    "    synthetic: \"gpu:8 nvswitch:18 nics:8\"\n"                            // 3
    "nodes:\n"                                                                 // 4
    "  - hosts: \"n[01-08]\"\n"                                                // 5
    "    profile: s8\n"                                                        // 6
    "network:\n"                                                               // 7
    "  levels:\n"                                                              // 8
    "    - name: spine\n"                                                      // 9
    "    - name: leaf\n"                                                       // 10
    "      uplink_gbps: 3200\n"                                                // 11
    "  domains:\n"                                                             // 12
    "    - {name: spine0, level: spine}\n"                                     // 13
    "    - {name: leaf0, level: leaf, parent: spine0, nodes: \"n[01-04]\"}\n"  // 14
    "    - {name: leaf1, level: leaf, parent: spine0, nodes: \"n[05-08]\"}\n"  // 15
    "rails: {count: 8, scope: spine}\n"                                        // 16
    "nvlink_domains:\n"                                                        // 17
    "  - {name: nvl0, nodes: \"n[01-04]\", gpu_bandwidth_gbps: 450}\n";        // 18

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  size_t pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos) text.replace(pos, from.size(), to);
  return text;
}

TEST(ClusterYaml, BaseSpecIsValid) {
  auto c = ParseClusterYaml(kBase, "bad.yaml", "");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->TotalGpus(), 64);
  EXPECT_EQ(c->nvlink_domains[0].nodes.size(), 4u);
}

TEST(ClusterYaml, InvalidSpecsNameFileLineAndField) {
  struct Case {
    const char* from;
    const char* to;
    const char* expect;  // substring of the message
  };
  const Case cases[] = {
      {"    profile: s8\n", "    profile: dgx-h10\n",
       "bad.yaml:6: nodes[0].profile: unknown hardware profile \"dgx-h10\""},
      {"nodes:\n", "nodez:\n", "bad.yaml:4: nodez: unknown key"},
      {"      uplink_gbps: 3200\n", "      uplink_gps: 3200\n",
       "bad.yaml:11: network.levels[1].uplink_gps: unknown key (expected one of: name, "
       "uplink_gbps"},
      {"      uplink_gbps: 3200\n", "      uplink_gbps: -5\n",
       "bad.yaml:11: network.levels[1].uplink_gbps: must be >= 0, got -5"},
      {"      uplink_gbps: 3200\n", "      uplink_gbps: fast\n",
       "bad.yaml:11: network.levels[1].uplink_gbps: expected a number, got \"fast\""},
      {"      uplink_gbps: 3200\n", "      uplink_gbps: [1, 2]\n",
       "bad.yaml:11: network.levels[1].uplink_gbps: expected a number, got a list"},
      {"gpu_bandwidth_gbps: 450", "gpu_bandwidth_gbps: -450",
       "bad.yaml:18: nvlink_domains[0].gpu_bandwidth_gbps: must be > 0"},
      {"  - hosts: \"n[01-08]\"\n", "  - hosts: \"n[01-08,03]\"\n",
       "bad.yaml:5: nodes[0].hosts: duplicate node \"n03\" (already declared at line 5)"},
      {"  - hosts: \"n[01-08]\"\n", "  - hosts: \"n[01-\"\n", "bad.yaml:5: nodes[0].hosts: "},
      {"  - hosts: \"n[01-08]\"\n", "  - hosts: \"n[08-01]\"\n",
       "bad.yaml:5: nodes[0].hosts: bad range"},
      {"nodes: \"n[05-08]\"}", "nodes: \"n[04-08]\"}",
       "bad.yaml:15: network.domains[2].nodes: node \"n04\" is already in domain \"leaf0\""},
      {"nodes: \"n[05-08]\"}", "nodes: \"n[05-09]\"}",
       "bad.yaml:15: network.domains[2].nodes: unknown node \"n09\""},
      {"nodes: \"n[05-08]\"}", "nodes: \"n[05-07]\"}",
       "bad.yaml:5: nodes[0].hosts: node \"n08\" is in no network domain"},
      {"{name: leaf0, level: leaf,", "{name: leaf0, level: lef,",
       "bad.yaml:14: network.domains[1].level: unknown level \"lef\" (levels: spine, leaf)"},
      {"{name: leaf0, level: leaf, parent: spine0,", "{name: leaf0, level: leaf, parent: spine9,",
       "bad.yaml:14: network.domains[1].parent: unknown domain \"spine9\""},
      {"{name: leaf0, level: leaf, parent: spine0,", "{name: leaf0, level: leaf, parent: leaf1,",
       "bad.yaml:14: network.domains[1].parent: parent \"leaf1\" is at level \"leaf\""},
      {"{name: leaf0, level: leaf, parent: spine0,", "{name: leaf0, level: leaf,",
       "bad.yaml:14: network.domains[1]: domain \"leaf0\" at level \"leaf\" has no parent"},
      {"{name: leaf1,", "{name: leaf0,",
       "bad.yaml:15: network.domains[2].name: duplicate domain \"leaf0\" (first at line 14)"},
      {"{name: spine0, level: spine}", "{name: spine0, level: spine, parent: leaf0}",
       "bad.yaml:13: network.domains[0].parent: a domain at the top level"},
      {"rails: {count: 8, scope: spine}", "rails: {count: 8, scope: core}",
       "bad.yaml:16: rails.scope: unknown level \"core\""},
      {"rails: {count: 8,", "rails: {count: 9,",
       "bad.yaml:16: rails.count: 9 rails, but hardware profile \"s8\" has 8 NICs"},
      {"rails: {count: 8,", "rails: {count: eight,",
       "bad.yaml:16: rails.count: expected an integer, got \"eight\""},
      {"nodes: \"n[01-04]\", gpu", "nodes: \"n[01-04,09]\", gpu",
       "bad.yaml:18: nvlink_domains[0].nodes: unknown node \"n09\""},
      {"  - {name: nvl0, nodes: \"n[01-04]\", gpu_bandwidth_gbps: 450}\n",
       "  - {name: nvl0, nodes: \"n[01-04]\"}\n  - {name: nvl1, nodes: \"n[04-05]\"}\n",
       "bad.yaml:19: nvlink_domains[1].nodes: node \"n04\" is already in NVLink domain \"nvl0\""},
      {"    synthetic: \"gpu:8 nvswitch:18 nics:8\"\n",
       "    synthetic: \"gpu:8 nvswitch:18 nics:8\"\n    topology: x.txt\n",
       "bad.yaml:2: profiles[0]: give exactly one of topology: (a file) or synthetic:"},
      {"    synthetic: \"gpu:8 nvswitch:18 nics:8\"\n", "    topology: no/such/node.txt\n",
       "bad.yaml:3: profiles[0].topology: topology file not found: \"/nonexistent/no/such/"
       "node.txt\""},
      {"    synthetic: \"gpu:8 nvswitch:18 nics:8\"\n",
       "    synthetic: \"gpu:8 nvswitch:18 nics:8\"\n    nic_link_layer: omnipath\n",
       "bad.yaml:4: profiles[0].nic_link_layer: expected ib, roce or ethernet, got \"omnipath\""},
      {"    synthetic: \"gpu:8 nvswitch:18 nics:8\"\n",
       "    synthetic: \"gpu:8 nvswitch:18 nics:8\"\n    gpu_memory_gib: eighty\n",
       "bad.yaml:4: profiles[0].gpu_memory_gib: expected a number, got \"eighty\""},
      {"    synthetic: \"gpu:8 nvswitch:18 nics:8\"\n",
       "    synthetic: \"gpu:8 nvswitch:18 nics:8\"\n    gpu_modle: H100\n",
       "bad.yaml:4: profiles[0].gpu_modle: unknown key"},
      {"    synthetic: \"gpu:8 nvswitch:18 nics:8\"\n", "    synthetic: \"gpu:8 warp:9\"\n",
       "bad.yaml:3: profiles[0].synthetic: synthetic topology"},
      {"  - name: s8\n", "  - name: s8\n    name: s9\n",
       "bad.yaml:3: profiles[0].name: key given twice (first at line 2)"},
      {"    profile: s8\n", "    profile: s8\n    health: sick\n", "bad.yaml:7: nodes[0].health: "},
      {"    - name: spine\n", "    - name: spine\n      generate: {size: 0}\n",
       "bad.yaml:10: network.levels[0].generate.size: must be between 1 and"},
      {"    - name: spine\n", "    - name: spine\n      generate: {count: 5}\n",
       "bad.yaml:10: network.levels[0].generate.count: 5 groups but only 0 unattached domains"},
      {"nodes:\n  - hosts: \"n[01-08]\"\n    profile: s8\n", "nodes: \"n[01-08]\"\n\n\n",
       "bad.yaml:4: nodes: expected a list, got a scalar"},
      {"  domains:\n", "  domains:\n    - {name: x, level: leaf, nodes: n[01-02]}\n",
       "bad.yaml:13: YAML error: end of map flow not found (a host list such as gpu[001-016] "
       "inside { } or [ ] must be quoted)"},
      {"  levels:\n", "  levels: [\n", "bad.yaml:"},
      {"network:\n", "version: 2\nnetwork:\n", "bad.yaml:7: version: unsupported version 2"},
  };
  for (const Case& k : cases) {
    std::string text = Replace(kBase, k.from, k.to);
    auto c = ParseClusterYaml(text, "bad.yaml", "/nonexistent");
    ASSERT_THAT(c, StatusIs(StatusCode::kInvalidArgument, HasSubstr(k.expect))) << k.expect;
  }
}

TEST(ClusterYaml, EmptyAndNonMapDocuments) {
  for (const char* text : {"", "# only a comment\n", "- a\n- b\n", "just text\n"}) {
    auto c = ParseClusterYaml(text, "x.yaml", "");
    ASSERT_THAT(c, StatusIs(StatusCode::kInvalidArgument, HasSubstr("x.yaml"))) << text;
  }
}

// Found by fuzzing (fuzz/regressions/cluster_yaml): a spec of a few hundred bytes made a
// million nodes (2 s, 1 GB). A spec holds at most 131,072 nodes, and saying more is refused
// naming the limit.
TEST(ClusterYaml, MoreNodesThanTheLimitAreRefusedNamingIt) {
  auto ok = ParseClusterYaml(
      "profiles: [{name: s, synthetic: \"gpu:2 nvlink:4\"}]\n"
      "nodes: [{hosts: \"w[000001-131072]\", profile: s}]\n",
      "max.yaml", "");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->nodes.size(), 131072u);
  auto over = ParseClusterYaml(
      "profiles: [{name: s, synthetic: \"gpu:2 nvlink:4\"}]\n"
      "nodes: [{hosts: \"w[000001-131072]\", profile: s}, {hosts: x1, profile: s}]\n",
      "over.yaml", "");
  ASSERT_THAT(over, StatusIs(StatusCode::kInvalidArgument, HasSubstr("131072")));
  auto product = ParseClusterYaml(
      "profiles: [{name: s, synthetic: \"gpu:2 nvlink:4\"}]\n"
      "nodes: [{hosts: \"r[0-99]n[0-99]g[0-99]\", profile: s}]\n",
      "product.yaml", "");
  ASSERT_THAT(product, StatusIs(StatusCode::kInvalidArgument, HasSubstr("more than 131072")));
}

TEST(ClusterYaml, MissingFileIsNotFound) {
  auto c = ReadClusterYamlFile("/nonexistent/cluster.yaml");
  ASSERT_THAT(c, StatusIs(StatusCode::kNotFound, HasSubstr("/nonexistent/cluster.yaml")));
}

TEST(ClusterYaml, HostileInputNeverThrows) {
  // Deep nesting, anchors, tabs, binary junk: every one must come back as a Status.
  const std::vector<std::string> inputs = {
      std::string(2000, '[') + std::string(2000, ']'),
      "profiles: &a [*a]\n",
      "profiles:\n\t- name: x\n",
      std::string("\x00\x01\xff\xfe", 4),
      "profiles: [{name: s, synthetic: \"gpu:1\"}]\nnodes: [{hosts: \"n[1-99999999]\", "
      "profile: s}]\n",
      "? [a, b]\n: c\n",
  };
  for (const std::string& in : inputs) {
    auto c = ParseClusterYaml(in, "hostile.yaml", "");
    EXPECT_THAT(c, StatusIs(StatusCode::kInvalidArgument, HasSubstr("hostile.yaml:")));
  }
}

}  // namespace
}  // namespace toposched::topo::io
