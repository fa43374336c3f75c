// topo::io::ClusterFromSlurmTopology / ReadSlurmTopologyCluster and FormatClusterYaml: every
// example cluster survives export to topology.conf and import back; a hand-written three-tier
// topology.conf with 116 switches is read as written; bad options and oversized files fail.
#include "topo/io/slurm_cluster.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/strings.h"
#include "testing/samples.h"
#include "testing/status_matchers.h"
#include "topo/io/cluster_yaml.h"
#include "topo/io/json_io.h"
#include "topo/io/slurm.h"

namespace toposched::topo::io {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

namespace fs = std::filesystem;

const std::string kH100 = testing::SourceDir() +
                          "/data/samples/nvidia-smi/24-h100-sxm-8gpu-nv18-8nic-pix-sglang30401.txt";
const std::string kV100 =
    testing::SourceDir() +
    "/data/samples/nvidia-smi/02-v100-sxm2-8gpu-dgx1like-2socket-1nic-oneflow-dlperf.txt";
const std::string kDgx2Hwloc =
    testing::SourceDir() + "/data/samples/hwloc-xml/hwloc-nvidiaDGX2.xml";
const std::string kThreeTier =
    testing::SourceDir() + "/tests/topo/testdata/slurm-3tier-116-switches.conf";

std::vector<std::string> ExampleClusters() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(testing::SourceDir() + "/data/clusters")) {
    if (e.path().extension() == ".yaml") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Import options that give every node its original node topology file, and every level its
// original name and oversubscription (neither is in topology.conf).
SlurmClusterOptions OptionsLike(const Cluster& c, const std::string& spec_dir) {
  SlurmClusterOptions o;
  o.cluster_name = c.name;
  for (size_t p = 0; p < c.profiles.size(); ++p) {
    std::vector<std::string> hosts;
    for (const ClusterNode& n : c.nodes) {
      if (n.profile == static_cast<int>(p)) hosts.push_back(n.name);
    }
    if (hosts.empty()) continue;
    // A synthetic profile has no file: its model goes through the JSON reader instead.
    fs::path file = fs::path(spec_dir) / c.profiles[p].topology_file;
    if (c.profiles[p].topology_file.empty()) {
      file = fs::path(::testing::TempDir()) / (c.name + "-" + c.profiles[p].name + ".json");
      std::ofstream(file) << TopologyToJson(c.profiles[p].topology);
    }
    o.node_topology.emplace_back(CompressHostList(hosts), file.string());
  }
  for (const NetworkLevel& l : c.levels) {
    o.level_names.push_back(l.name);
    o.oversubscription[l.name] = l.oversubscription;
  }
  return o;
}

// domain name -> (level name, parent name, node names sorted)
using DomainShape = std::tuple<std::string, std::string, std::vector<std::string>>;
std::map<std::string, DomainShape> Domains(const Cluster& c) {
  std::map<std::string, DomainShape> out;
  for (const NetworkDomain& d : c.domains) {
    std::vector<std::string> nodes;
    for (int n : d.nodes) nodes.push_back(c.nodes[n].name);
    std::sort(nodes.begin(), nodes.end());
    out[d.name] = {c.levels[d.level].name, d.parent < 0 ? "" : c.domains[d.parent].name, nodes};
  }
  return out;
}

// node name -> (lowest domain name, GPU count)
std::map<std::string, std::pair<std::string, size_t>> Nodes(const Cluster& c) {
  std::map<std::string, std::pair<std::string, size_t>> out;
  for (size_t n = 0; n < c.nodes.size(); ++n) {
    const int d = c.nodes[n].domain;
    out[c.nodes[n].name] = {d < 0 ? "" : c.domains[d].name,
                            c.topology(static_cast<int>(n)).gpus.size()};
  }
  return out;
}

void ExpectSameNetwork(const Cluster& want, const Cluster& got, const std::string& what) {
  ASSERT_EQ(got.levels.size(), want.levels.size()) << what;
  for (size_t l = 0; l < want.levels.size(); ++l) {
    EXPECT_EQ(got.levels[l].name, want.levels[l].name) << what << " level " << l;
    EXPECT_DOUBLE_EQ(got.levels[l].uplink_gbps, want.levels[l].uplink_gbps) << what << " " << l;
    EXPECT_DOUBLE_EQ(got.levels[l].oversubscription, want.levels[l].oversubscription)
        << what << " level " << l;
  }
  EXPECT_EQ(Domains(got), Domains(want)) << what;
  EXPECT_EQ(Nodes(got), Nodes(want)) << what;
}

TEST(SlurmClusterImport, EveryExampleClusterRoundTripsThroughTreeTopologyConf) {
  const std::vector<std::string> files = ExampleClusters();
  ASSERT_GE(files.size(), 3u);
  for (const std::string& file : files) {
    auto c = ReadClusterYamlFile(file);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    SlurmExportOptions tree;
    tree.topology = SlurmExportOptions::Topology::kTree;
    auto ex = ExportSlurm(*c, tree);
    ASSERT_TRUE(ex.ok()) << file << ": " << ex.status().ToString();
    auto parsed = ParseTopologyConf(ex->topology_conf, "topology.conf");
    ASSERT_TRUE(parsed.ok()) << file << ": " << parsed.status().ToString();
    const std::string dir = fs::path(file).parent_path().string();
    auto imported = ClusterFromSlurmTopology(*parsed, OptionsLike(*c, dir));
    ASSERT_TRUE(imported.ok()) << file << ": " << imported.status().ToString();
    ExpectSameNetwork(*c, *imported, file);

    // And through the spec writer: the YAML reads back as the same network.
    auto yaml = FormatClusterYaml(*imported, "round trip of " + file);
    ASSERT_TRUE(yaml.ok()) << yaml.status().ToString();
    auto again = ParseClusterYaml(*yaml, "imported.yaml", dir);
    ASSERT_TRUE(again.ok()) << again.status().ToString() << "\n" << *yaml;
    ExpectSameNetwork(*c, *again, file + " (YAML)");
  }
}

TEST(SlurmClusterImport, BlockTopologyConfGivesOneDomainPerNvlinkDomain) {
  int with_blocks = 0;
  for (const std::string& file : ExampleClusters()) {
    auto c = ReadClusterYamlFile(file);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    if (c->nvlink_domains.empty()) continue;
    ++with_blocks;
    auto ex = ExportSlurm(*c);  // kAuto: block for NVLink domains
    ASSERT_TRUE(ex.ok()) << ex.status().ToString();
    ASSERT_EQ(ex->topology_kind, "block") << file;
    auto parsed = ParseTopologyConf(ex->topology_conf, "topology.conf");
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    SlurmClusterOptions o = OptionsLike(*c, fs::path(file).parent_path().string());
    o.level_names.clear();
    o.oversubscription.clear();
    auto imported = ClusterFromSlurmTopology(*parsed, o);
    ASSERT_TRUE(imported.ok()) << imported.status().ToString();
    ASSERT_EQ(imported->levels.size(), 1u) << file;
    EXPECT_EQ(imported->levels[0].name, "block") << file;
    std::map<std::string, std::vector<std::string>> want, got;
    for (const NvlinkDomain& nv : c->nvlink_domains) {
      for (int n : nv.nodes) want[nv.name].push_back(c->nodes[n].name);
    }
    for (const NetworkDomain& d : imported->domains) {
      for (int n : d.nodes) got[d.name].push_back(imported->nodes[n].name);
    }
    EXPECT_EQ(got, want) << file;
  }
  EXPECT_GE(with_blocks, 1);
}

class ThreeTier : public ::testing::Test {
 protected:
  void SetUp() override {
    SlurmClusterOptions o;
    o.default_topology = kH100;
    auto c = ReadSlurmTopologyCluster(kThreeTier, o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    cluster_ = std::move(c).value();
  }
  int DomainsAt(int level) const {
    int n = 0;
    for (const NetworkDomain& d : cluster_.domains) n += d.level == level;
    return n;
  }
  Cluster cluster_;
};

TEST_F(ThreeTier, HasThreeLevelsNamedByDepth) {
  ASSERT_EQ(cluster_.levels.size(), 3u);
  EXPECT_EQ(cluster_.levels[0].name, "switch-0");
  EXPECT_EQ(cluster_.levels[1].name, "switch-1");
  EXPECT_EQ(cluster_.levels[2].name, "switch-2");
}

TEST_F(ThreeTier, CountsDomainsPerTier) {
  EXPECT_EQ(DomainsAt(0), 1);  // core1..core4 share their cabling: one logical core
  EXPECT_EQ(DomainsAt(1), 16);
  EXPECT_EQ(DomainsAt(2), 96);
}

TEST_F(ThreeTier, MergesTheParallelCores) { EXPECT_GE(cluster_.FindDomain("core[1-4]"), 0); }

TEST_F(ThreeTier, EveryAggregationSwitchHasSixLeaves) {
  for (const NetworkDomain& d : cluster_.domains) {
    if (d.level != 1) continue;
    EXPECT_EQ(d.children.size(), 6u) << d.name;
  }
}

TEST_F(ThreeTier, NodesPerLeaf) {
  EXPECT_EQ(cluster_.nodes.size(), 372u);
  for (int l = 0; l < 96; ++l) {
    char name[16];
    std::snprintf(name, sizeof name, "leaf%03d", l);
    const int d = cluster_.FindDomain(name);
    ASSERT_GE(d, 0) << name;
    EXPECT_EQ(cluster_.domains[d].nodes.size(), l < 90 ? 4u : 2u) << name;
  }
}

TEST_F(ThreeTier, HandEditedLinesReadAsTheirNeighbours) {
  // leaf013's host list is written out of order, leaf040's node by node, agg07's continued.
  auto under = [&](const std::string& domain) {
    std::vector<std::string> names;
    for (int n : cluster_.NodesUnder(cluster_.FindDomain(domain))) {
      names.push_back(cluster_.nodes[n].name);
    }
    std::sort(names.begin(), names.end());
    return names;
  };
  EXPECT_EQ(under("leaf013"), ExpandHostList("gpu[0053-0056]").value());
  EXPECT_EQ(under("leaf040"), ExpandHostList("gpu[0161-0164]").value());
  EXPECT_EQ(under("agg07"), ExpandHostList("gpu[0169-0192]").value());
}

TEST_F(ThreeTier, LinkSpeedGivesEachTierItsUplink) {
  EXPECT_DOUBLE_EQ(cluster_.levels[0].uplink_gbps, 0);
  EXPECT_DOUBLE_EQ(cluster_.levels[1].uplink_gbps, 12800);
  EXPECT_DOUBLE_EQ(cluster_.levels[2].uplink_gbps, 3200);
}

TEST_F(ThreeTier, SpecWithTheMergedCoreReadsBack) {
  auto yaml = FormatClusterYaml(cluster_);
  ASSERT_TRUE(yaml.ok()) << yaml.status().ToString();
  EXPECT_THAT(*yaml, HasSubstr("{name: \"agg00\", level: \"switch-1\", parent: \"core[1-4]\"}"));
  auto again = ParseClusterYaml(*yaml, "fabric.yaml", "/");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ExpectSameNetwork(cluster_, *again, "three-tier spec");
}

TEST(SlurmClusterImport, LevelNamesAndOversubscriptionPriceTheClimb) {
  SlurmClusterOptions o;
  o.default_topology = kH100;
  o.level_names = {"core", "agg", "leaf"};
  o.oversubscription = {{"leaf", 2}, {"agg", 4}};
  auto c = ReadSlurmTopologyCluster(kThreeTier, o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const int a = c->FindNode("gpu0001"), same_leaf = c->FindNode("gpu0002");
  const int same_agg = c->FindNode("gpu0005"), other_agg = c->FindNode("gpu0025");
  EXPECT_DOUBLE_EQ(c->Oversubscription(a, same_leaf), 1);
  EXPECT_DOUBLE_EQ(c->Oversubscription(a, same_agg), 2);
  EXPECT_DOUBLE_EQ(c->Oversubscription(a, other_agg), 8);
}

TEST(SlurmClusterImport, NodeTopologyOverridesByHostListLaterWins) {
  SlurmClusterOptions o;
  o.default_topology = kH100;
  o.node_topology = {{"gpu[0001-0008]", kV100}, {"gpu0008", kDgx2Hwloc}};
  auto c = ReadSlurmTopologyCluster(kThreeTier, o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->profiles.size(), 3u);
  EXPECT_EQ(c->profiles[c->nodes[c->FindNode("gpu0001")].profile].topology_file, kV100);
  EXPECT_EQ(c->profiles[c->nodes[c->FindNode("gpu0008")].profile].topology_file, kDgx2Hwloc);
  EXPECT_EQ(c->profiles[c->nodes[c->FindNode("gpu0009")].profile].topology_file, kH100);
  EXPECT_EQ(c->topology(c->FindNode("gpu0008")).gpus.size(), 16u);  // DGX-2, from hwloc XML
}

TEST(SlurmClusterImport, BadOptionsNameWhatIsWrong) {
  struct Case {
    const char* what;
    SlurmClusterOptions options;
    const char* expect;
    StatusCode code = StatusCode::kInvalidArgument;
  };
  auto with = [](auto edit) {
    SlurmClusterOptions o;
    o.default_topology = kH100;
    edit(o);
    return o;
  };
  const Case cases[] = {
      {"unknown level", with([](auto& o) { o.oversubscription["spine"] = 2; }),
       "oversubscription for unknown level \"spine\" (levels: switch-0, switch-1, switch-2)"},
      {"ratio", with([](auto& o) { o.oversubscription["switch-2"] = 0; }),
       "oversubscription of level \"switch-2\": must be a number > 0"},
      {"names", with([](auto& o) {
         o.level_names = {"spine", "leaf"};
       }),
       "level names: 2 given, the Slurm topology has 3 levels"},
      {"repeated name", with([](auto& o) {
         o.level_names = {"a", "b", "a"};
       }),
       "level names: \"a\" given twice"},
      {"unknown node", with([](auto& o) {
         o.node_topology = {{"gpu9999", kV100}};
       }),
       "node topology for \"gpu9999\": node \"gpu9999\" is not in the Slurm topology"},
      {"bad host list", with([](auto& o) {
         o.node_topology = {{"gpu[1-", kV100}};
       }),
       "node topology host list \"gpu[1-\""},
      {"no file", with([](auto& o) {
         o.default_topology.clear();
         o.node_topology = {{"gpu[0001-0004]", kV100}};
       }),
       "node \"gpu0005\" has no topology file"},
      {"missing file", with([](auto& o) { o.default_topology = "/nonexistent/node.txt"; }),
       "/nonexistent/node.txt", StatusCode::kNotFound},
  };
  for (const Case& k : cases) {
    auto c = ReadSlurmTopologyCluster(kThreeTier, k.options);
    ASSERT_THAT(c, StatusIs(k.code, HasSubstr(k.expect))) << k.what;
  }
}

TEST(SlurmClusterImport, BrokenTopologyConfNamesFileLineAndColumn) {
  const std::string path = ::testing::TempDir() + "/broken-topology.conf";
  std::ofstream(path) << "SwitchName=s0 Switches=s1\n# the leaf\nSwitchName=s1 Nodes=a[1-\n";
  SlurmClusterOptions o;
  o.default_topology = kH100;
  auto c = ReadSlurmTopologyCluster(path, o);
  ASSERT_THAT(c, StatusIs(StatusCode::kInvalidArgument, HasSubstr(path + ":3:21: Nodes=: ")));
}

TEST(SlurmClusterImport, RefusesOversizedTopologyConf) {
  const std::string path = ::testing::TempDir() + "/huge-topology.conf";
  { std::ofstream(path) << "SwitchName=s0 Nodes=a1\n"; }
  fs::resize_file(path, kMaxTopologyConfBytes + 1);  // sparse: no real 16 MiB written
  SlurmClusterOptions o;
  o.default_topology = kH100;
  auto c = ReadSlurmTopologyCluster(path, o);
  ASSERT_THAT(c,
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("more than the limit of 16777216")));
}

TEST(SlurmClusterImport, EmptyTopologyConfHasNothingToImport) {
  SlurmClusterOptions o;
  o.default_topology = kH100;
  auto parsed = ParseTopologyConf("# nothing here\n", "empty.conf");
  ASSERT_TRUE(parsed.ok());
  auto c = ClusterFromSlurmTopology(*parsed, o);
  ASSERT_THAT(
      c, StatusIs(StatusCode::kInvalidArgument, HasSubstr("no SwitchName= or BlockName= lines")));
}

}  // namespace
}  // namespace toposched::topo::io
