#include "topo/io/slurm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/strings.h"
#include "testing/samples.h"
#include "testing/status_matchers.h"
#include "topo/io/cluster_yaml.h"
#include "topo/io/import.h"
#include "topo/synthetic.h"

namespace toposched::topo::io {
namespace {

using ::testing::AllOf;
using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

std::string Sample(const std::string& name) {
  auto text = ReadFileToString(testing::SourceDir() + "/data/samples/slurm/" + name);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? *text : "";
}

// The samples are documentation, not config files: 01 is groff source ('\-' is an escaped '-',
// '.nf'/'.fi' are markup), 03 is HTML with prose between <pre> blocks, 04/05 are Tcl strings
// with a ${dev} variable, 06 is HTML mixing slurm.conf and gres.conf. The parsers stay strict
// (a real config with such lines is wrong), so the tests pull out the config lines themselves.
std::vector<std::string> ConfLines(const std::string& text) { return Split(text, '\n'); }

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

std::string Ungroff(std::string s) {
  for (size_t p = s.find("\\-"); p != std::string::npos; p = s.find("\\-", p)) s.erase(p, 1);
  return s;
}

// Lines starting with one of the prefixes (case-sensitive), in order.
std::string Keep(const std::string& text, std::initializer_list<const char*> prefixes) {
  std::vector<std::string> out;
  for (const std::string& l : ConfLines(text)) {
    for (const char* p : prefixes) {
      if (StartsWith(l, p)) {
        out.push_back(l);
        break;
      }
    }
  }
  return Join(out);
}

// The text of the n-th <pre> ... </pre> block of sample 03 (the first opens before the excerpt).
std::string PreBlock(const std::string& text, int n) {
  std::vector<std::string> blocks(1);
  for (const std::string& l : ConfLines(text)) {
    if (StartsWith(l, "</pre>")) {
      blocks.emplace_back();
    } else if (!StartsWith(l, "# PROVENANCE")) {
      blocks.back() += l + "\n";
    }
  }
  std::string b = blocks.at(n);
  size_t pre = b.find("<pre>\n");
  return pre == std::string::npos ? b : b.substr(pre + 6);
}

// The body of `set gres_conf "..."` in the Tcl test samples, ${dev} replaced by /dev/nvidia.
std::string TclGresConf(const std::string& text) {
  size_t b = text.find("set gres_conf \"");
  EXPECT_NE(b, std::string::npos);
  b = text.find('\n', b) + 1;
  size_t e = text.find("\"\n", b);
  std::string body = text.substr(b, e - b);
  for (size_t p = body.find("${dev}"); p != std::string::npos; p = body.find("${dev}", p)) {
    body.replace(p, 6, "/dev/nvidia");
  }
  return body;
}

std::vector<std::string> DomainNodes(const SlurmTopology& t, int d) {
  std::vector<std::string> out;
  for (int n : t.domains[d].nodes) out.push_back(t.node_names[n]);
  return out;
}

int FindDomain(const SlurmTopology& t, const std::string& name) {
  for (size_t d = 0; d < t.domains.size(); ++d) {
    if (t.domains[d].name == name) return static_cast<int>(d);
  }
  return -1;
}

std::vector<std::string> Hosts(const std::string& expr) { return ExpandHostList(expr).value(); }

// ---- topology.conf samples ----

TEST(SlurmTopologyConf, Sample01TreePart) {
  std::string text =
      Keep(Ungroff(Sample("01-slurm-man-topology-conf-tree-block-ring.conf")), {"SwitchName", "#"});
  auto t = ParseTopologyConf(text, "01");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->kind, SlurmTopology::Kind::kTree);
  ASSERT_EQ(t->levels.size(), 2u);
  EXPECT_EQ(t->levels[0].name, "switch-0");
  EXPECT_EQ(t->levels[1].name, "switch-1");
  ASSERT_EQ(t->domains.size(), 4u);
  EXPECT_EQ(t->node_names.size(), 18u);
  const int s3 = FindDomain(*t, "s3");
  ASSERT_GE(s3, 0);
  EXPECT_EQ(t->domains[s3].level, 0);
  EXPECT_EQ(t->domains[s3].parent, -1);
  EXPECT_EQ(t->domains[s3].children.size(), 3u);
  const int s1 = FindDomain(*t, "s1");
  EXPECT_EQ(t->domains[s1].level, 1);
  EXPECT_EQ(t->domains[s1].parent, s3);
  EXPECT_EQ(DomainNodes(*t, s1), Hosts("dev[6-11]"));
}

TEST(SlurmTopologyConf, Sample01BlockPart) {
  std::string text = Keep(Ungroff(Sample("01-slurm-man-topology-conf-tree-block-ring.conf")),
                          {"BlockName", "BlockSizes"});
  auto t = ParseTopologyConf(text, "01");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->kind, SlurmTopology::Kind::kBlock);
  ASSERT_EQ(t->levels.size(), 1u);
  EXPECT_EQ(t->levels[0].name, "block");
  ASSERT_EQ(t->domains.size(), 4u);
  EXPECT_EQ(t->domains[3].name, "block4");
  EXPECT_EQ(DomainNodes(*t, 3), Hosts("node[97-128]"));
  EXPECT_EQ(t->block_sizes, (std::vector<int>{30, 120}));
  EXPECT_EQ(t->node_names.size(), 128u);
}

TEST(SlurmTopologyConf, Sample01RingPartAndRawGroffAreRejected) {
  std::string sample = Ungroff(Sample("01-slurm-man-topology-conf-tree-block-ring.conf"));
  auto ring = ParseTopologyConf(Keep(sample, {"RingName"}), "ring.conf");
  ASSERT_THAT(ring, StatusIs(StatusCode::kInvalidArgument,
                             HasSubstr("ring.conf:1:1: unknown key \"RingName\"")));
  // Unstripped, the groff markup on line 2 is reported where it is.
  auto raw = ParseTopologyConf(Sample("01-slurm-man-topology-conf-tree-block-ring.conf"), "01");
  ASSERT_THAT(raw, StatusIs(StatusCode::kInvalidArgument,
                            HasSubstr("01:2:1: expected Key=Value, got \".nf\"")));
}

TEST(SlurmTopologyConf, Sample03ThreeLevelTree) {
  auto t = ParseTopologyConf(PreBlock(Sample("03-slurm-doc-topology-shtml-tree-linkspeed.conf"), 0),
                             "03a");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->levels.size(), 3u);
  const int s6 = FindDomain(*t, "s6"), s4 = FindDomain(*t, "s4"), s1 = FindDomain(*t, "s1");
  EXPECT_EQ(t->domains[s6].level, 0);
  EXPECT_EQ(t->domains[s4].level, 1);
  EXPECT_EQ(t->domains[s4].parent, s6);
  EXPECT_EQ(t->domains[s1].level, 2);
  EXPECT_EQ(t->domains[s1].parent, s4);
  EXPECT_EQ(DomainNodes(*t, s1), Hosts("tux[2-3]"));
  EXPECT_EQ(t->node_names.size(), 8u);
}

TEST(SlurmTopologyConf, Sample03ParallelSpinesWithLinkSpeed) {
  auto t = ParseTopologyConf(PreBlock(Sample("03-slurm-doc-topology-shtml-tree-linkspeed.conf"), 1),
                             "03b");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  // s4..s7 all list s[0-3]: one logical spine.
  ASSERT_EQ(t->domains.size(), 5u);
  const int spine = FindDomain(*t, "s[4-7]");
  ASSERT_GE(spine, 0);
  EXPECT_EQ(t->domains[spine].level, 0);
  EXPECT_EQ(t->domains[spine].children.size(), 4u);
  const int s3 = FindDomain(*t, "s3");
  EXPECT_EQ(t->domains[s3].parent, spine);
  EXPECT_EQ(DomainNodes(*t, s3), Hosts("tux[12-15]"));
  EXPECT_DOUBLE_EQ(t->link_speed[FindDomain(*t, "s0")], 900);
  EXPECT_DOUBLE_EQ(t->link_speed[s3], 1800);
  EXPECT_DOUBLE_EQ(t->link_speed[spine], 1800);
  EXPECT_DOUBLE_EQ(t->levels[1].uplink_gbps, 900);  // smallest at that level
  EXPECT_DOUBLE_EQ(t->levels[0].uplink_gbps, 1800);
}

TEST(SlurmTopologyConf, Sample03PrunedTreeAppliesToCluster) {
  auto t = ParseTopologyConf(PreBlock(Sample("03-slurm-doc-topology-shtml-tree-linkspeed.conf"), 2),
                             "03c");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->domains.size(), 5u);
  EXPECT_EQ(t->levels.size(), 2u);

  Cluster c;
  c.name = "tux";
  c.profiles.push_back({"p", "", MakeSyntheticTopology("gpu:4 nvlink:4").value()});
  for (const std::string& n : Hosts("tux[0-17]")) c.nodes.push_back({n, 0, -1, -1});
  c.Finalize();
  Status s = ApplySlurmTopology(*t, c);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(c.levels.size(), 2u);
  const int tux0 = c.FindNode("tux0");
  EXPECT_EQ(c.MeetLevel(tux0, c.FindNode("tux3")), 1);
  EXPECT_EQ(c.MeetLevel(tux0, c.FindNode("tux4")), 0);
  EXPECT_EQ(c.nodes[c.FindNode("tux16")].domain, -1);  // not in the topology: unattached
  EXPECT_EQ(c.NodesUnder(c.FindDomain("s4")).size(), 16u);

  // A topology naming a node the cluster lacks is refused and leaves the cluster alone.
  Cluster small = c;
  small.nodes.resize(8);
  for (auto& d : small.domains) d.nodes.clear();
  for (auto& n : small.nodes) n.domain = -1;
  small.levels.clear();
  small.domains.clear();
  small.Finalize();
  Status bad = ApplySlurmTopology(*t, small);
  ASSERT_THAT(bad, StatusIs(StatusCode::kInvalidArgument, HasSubstr("node \"tux8\"")));
  EXPECT_TRUE(small.domains.empty());
}

TEST(SlurmTopologyConf, ContinuationCommentsAndCaseInsensitiveKeys) {
  auto t = ParseTopologyConf(
      "# leaf switches\n"
      "switchname=l0 NODES=a[1-2]   # two nodes\n"
      "SwitchName=l1 \\\n"
      "   Nodes=a[3-4]\n"
      "\n"
      "SwitchName=top Switches=l[0-1] linkspeed=100\n",
      "t.conf");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->domains.size(), 3u);
  EXPECT_EQ(DomainNodes(*t, FindDomain(*t, "l1")), Hosts("a[3-4]"));
  EXPECT_DOUBLE_EQ(t->levels[0].uplink_gbps, 100);
}

TEST(SlurmTopologyConf, ErrorsNameLineAndColumn) {
  struct Case {
    const char* text;
    const char* expect;
  } cases[] = {
      {"SwitchName=s0 Nodes=a[1-2]\nSwitchName=s1 Switches=s[0,9]\n",
       "t.conf:2:24: switch \"s1\": Switches= names undefined switch \"s9\""},
      {"SwitchName=s0 Nodes=a1\n\nSwitchName=s0 Nodes=a2\n",
       "t.conf:3:12: switch \"s0\" already defined at line 1"},
      {"SwitchName=s0 Switches=s1\nSwitchName=s1 Switches=s0\n",
       "t.conf:1:12: switch \"s0\" is part of a cycle"},
      {"SwitchName=s0 Nodes=a[1-3]\nSwitchName=s1 Nodes=a[3-4]\n",
       "t.conf:2:21: node \"a3\" is under switch \"s0\" and \"s1\""},
      {"SwitchName=s0 Nodes=a[1-\n", "t.conf:1:21: Nodes=: unbalanced"},
      {"SwitchName=s0 Nodes=a1 Speed=3\n",
       "t.conf:1:24: unknown key \"Speed\" (expected one of: SwitchName, Switches"},
      {"SwitchName=s0 Nodes=a1 LinkSpeed=fast\n", "t.conf:1:34: LinkSpeed= must be a positive"},
      {"SwitchName=s0 Nodes=a1\nBlockName=b0 Nodes=a2\n",
       "t.conf:2:1: tree (SwitchName=) and block"},
      {"Nodes=a1 SwitchName=s0\n",
       "t.conf:1:1: a line must start with the switch or block name, got \"Nodes\""},
      {"SwitchName=s0 Nodes=a1 Nodes=a2\n",
       "t.conf:1:24: key \"Nodes\" given twice (first at 1:15)"},
      {"SwitchName=s0 a1\n", "t.conf:1:15: expected Key=Value, got \"a1\""},
      {"SwitchName=l0 Nodes=a1\nSwitchName=l1 Nodes=a2\nSwitchName=x Switches=l0\n"
       "SwitchName=y Switches=l[0-1]\n",
       "t.conf:4:23: switch \"l0\" has several parents (\"x\", \"y\") that are not "
       "interchangeable"},
      {"BlockName=b0 Nodes=a[1-4]\nBlockName=b1 Nodes=a[4-5]\n",
       "t.conf:2:20: node \"a4\" is in block \"b0\" and in \"b1\""},
      {"BlockName=b0\n", "t.conf:1:1: block \"b0\": no Nodes="},
      {"BlockName=b0 Nodes=a1\nBlockSizes=4,2\n", "t.conf:2:12: BlockSizes= must be increasing"},
      {"BlockSizes=4\n", "t.conf:1:1: BlockSizes= without any BlockName= line"},
      // A continued line reports the physical line and column of the token.
      {"SwitchName=s0 \\\n    Nodes=a[1-\n", "t.conf:2:11: Nodes=: unbalanced"},
      {"SwitchName=s0 Nodes=a1\n  SwitchName=s1 Switches=s0 Nodes=a[1-2]\n",
       "t.conf:2:35: node \"a1\" is under switch \"s0\" and \"s1\""},
  };
  for (const Case& k : cases) {
    auto t = ParseTopologyConf(k.text, "t.conf");
    ASSERT_THAT(t, StatusIs(StatusCode::kInvalidArgument, HasSubstr(k.expect))) << k.text;
  }
}

// ---- gres.conf samples ----

TEST(SlurmGresConf, Sample04LinksHybrid) {
  auto g = ParseGresConf(TclGresConf(Sample("04-slurm-testsuite-gres-conf-links-hybrid-c10.conf")),
                         "04");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ASSERT_EQ(g->size(), 8u);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ((*g)[i].node, "");
    EXPECT_EQ((*g)[i].type, "tesla");
    EXPECT_EQ((*g)[i].file, "/dev/nvidia" + std::to_string(i));
    EXPECT_EQ((*g)[i].minor, i);
    EXPECT_EQ((*g)[i].cores, (std::vector<int>{0, 1, 2, 3}));
    ASSERT_EQ((*g)[i].links.size(), 8u);
    EXPECT_EQ((*g)[i].links[i], -1);
  }
  EXPECT_EQ((*g)[0].links, (std::vector<int>{-1, 2, 2, 0, 0, 0, 0, 0}));
  EXPECT_EQ((*g)[5].links, (std::vector<int>{0, 0, 0, 1, 1, -1, 0, 0}));
  EXPECT_EQ((*g)[7].links, (std::vector<int>{0, 0, 0, 0, 0, 0, 2, -1}));
}

TEST(SlurmGresConf, Sample05MixedCaseCoresKey) {
  auto g = ParseGresConf(
      TclGresConf(Sample("05-slurm-testsuite-gres-conf-links-a100-sorted-b5.conf")), "05");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ASSERT_EQ(g->size(), 8u);
  EXPECT_EQ((*g)[0].type, "a100");
  EXPECT_EQ((*g)[0].cores, (std::vector<int>{0, 1}));
  EXPECT_EQ((*g)[4].cores, (std::vector<int>{2, 3}));
  EXPECT_EQ((*g)[0].links, (std::vector<int>{0, 0, 0, -1, 0, 0, 0, 0}));
  EXPECT_EQ((*g)[3].links, (std::vector<int>{-1, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(SlurmGresConf, Sample06ManualAffinity) {
  // Keep the gres.conf lines (the sample also shows slurm.conf lines and slurmd -C output).
  std::string text = Keep(Sample("06-slurm-doc-gres-a100-pcie-l3cache-as-socket-cores.conf"),
                          {"AutoDetect", "NodeName=node0 Autodetect", "# Manually"});
  auto g = ParseGresConf(text, "06");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ASSERT_EQ(g->size(), 2u);
  EXPECT_EQ((*g)[0].node, "node0");
  EXPECT_EQ((*g)[1].file, "/dev/nvidia1");
  EXPECT_EQ((*g)[1].minor, 1);
  EXPECT_EQ((*g)[0].cores.size(), 16u);
  EXPECT_EQ((*g)[1].cores.front(), 16);
  EXPECT_EQ((*g)[1].cores.back(), 31);
  EXPECT_TRUE((*g)[0].links.empty());
}

TEST(SlurmGresConf, RangesCountsAndOtherGres) {
  auto g = ParseGresConf(
      "AutoDetect=off\n"
      "NodeName=gpu[01-02] Name=gpu Type=a100 File=/dev/nvidia[0-3] Cores=0-3\n"
      "NodeName=big Name=gpu Count=2\n"
      "NodeName=gpu01 Name=mps Count=400\n"
      "Name=gpu File=/dev/nvidia0 Links=-1\n",
      "g.conf");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ASSERT_EQ(g->size(), 8u + 2u + 1u);
  EXPECT_EQ((*g)[0].node, "gpu01");
  EXPECT_EQ((*g)[3].file, "/dev/nvidia3");
  EXPECT_EQ((*g)[4].node, "gpu02");
  EXPECT_EQ((*g)[4].minor, 0);
  EXPECT_EQ((*g)[8].node, "big");
  EXPECT_EQ((*g)[8].minor, -1);
  EXPECT_EQ((*g)[10].links, (std::vector<int>{-1}));
}

TEST(SlurmGresConf, ErrorsNameLineAndColumn) {
  struct Case {
    const char* text;
    const char* expect;
  } cases[] = {
      {"AutoDetect=off\nName=gpu File=/dev/nvidia[0-1] Links=-1,2\n",
       "g.conf:2:32: Links= needs a line with a single device"},
      {"Name=gpu File=/dev/nvidia0 Colour=red\n", "g.conf:1:28: unknown key \"Colour\""},
      {"Name=gpu File=/dev/nvidia0 Cores=3-1\n", "g.conf:1:34: Cores=: "},
      {"Name=gpu File=/dev/nvidia0 Links=-1,x\n", "g.conf:1:34: Links=: bad item \"x\""},
      {"Name=gpu File=/dev/nvidia0 Links=-2\n", "g.conf:1:34: Links=: bad item \"-2\""},
      {"\n# c\nName=gpu File=/dev/nvidia[0-1] Count=3\n", "g.conf:3:38: Count=3 but File= names 2"},
      {"NodeName=n1 Type=a100 File=/dev/nvidia0\n", "g.conf:1:1: missing Name="},
      {"Name=gpu Type=a100\n", "g.conf:1:1: a gpu line needs File= or Count="},
      {"\nNodeName=n[1- Name=gpu Count=1\n", "g.conf:2:10: NodeName=: unbalanced"},
      {"NodeName=n[1- AutoDetect=nvml\n", "g.conf:1:10: NodeName=: unbalanced"},
      {"NodeName=n1\n", "g.conf:1:1: missing Name="},
  };
  for (const Case& k : cases) {
    auto g = ParseGresConf(k.text, "g.conf");
    ASSERT_THAT(g, StatusIs(StatusCode::kInvalidArgument, HasSubstr(k.expect))) << k.text;
  }
}

// ---- export and round trip ----

Cluster LoadExample(const std::string& name) {
  auto c = ReadClusterYamlFile(testing::SourceDir() + "/data/clusters/" + name);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(c).value() : Cluster();
}

// Same tree: domain names, node membership, parent names and depth.
void ExpectSameTree(const Cluster& c, const SlurmTopology& t) {
  ASSERT_EQ(t.kind, SlurmTopology::Kind::kTree);
  ASSERT_EQ(t.domains.size(), c.domains.size());
  EXPECT_EQ(t.levels.size(), c.levels.size());
  for (const NetworkDomain& d : t.domains) {
    const int cd = c.FindDomain(d.name);
    ASSERT_GE(cd, 0) << d.name;
    EXPECT_EQ(d.level, c.domains[cd].level) << d.name;
    const std::string want_parent =
        c.domains[cd].parent < 0 ? "" : c.domains[c.domains[cd].parent].name;
    EXPECT_EQ(d.parent < 0 ? "" : t.domains[d.parent].name, want_parent) << d.name;
    std::set<std::string> got, want;
    for (int n : d.nodes) got.insert(t.node_names[n]);
    for (int n : c.domains[cd].nodes) want.insert(c.nodes[n].name);
    EXPECT_EQ(got, want) << d.name;
  }
}

// Every node's gres lines carry its GPUs' NVLink counts and CPU affinity.
void ExpectGresMatchesTopology(const Cluster& c, const std::string& gres_conf,
                               const std::string& type) {
  auto gres = ParseGresConf(gres_conf, "gres.conf");
  ASSERT_TRUE(gres.ok()) << gres.status().ToString();
  std::map<std::string, std::vector<GresGpu>> by_node;
  for (const GresGpu& g : *gres) by_node[g.node].push_back(g);
  ASSERT_EQ(by_node.size(), c.nodes.size());
  for (size_t n = 0; n < c.nodes.size(); ++n) {
    const NodeTopology& t = c.topology(static_cast<int>(n));
    const auto& gpus = by_node[c.nodes[n].name];
    ASSERT_EQ(gpus.size(), t.gpus.size()) << c.nodes[n].name;
    for (size_t a = 0; a < t.gpus.size(); ++a) {
      const GresGpu& g = gpus[a];
      EXPECT_EQ(g.type, type);
      EXPECT_EQ(g.minor, t.gpus[a].index);
      ASSERT_TRUE(t.gpus[a].cpus.has_value());
      EXPECT_EQ(g.cores, SlurmCoresOf(InferSlurmCpuLayout(t), *t.gpus[a].cpus))
          << c.nodes[n].name << " GPU" << a;
      ASSERT_EQ(g.links.size(), t.gpus.size());
      for (size_t b = 0; b < t.gpus.size(); ++b) {
        const Path& p = t.gpu_gpu(static_cast<int>(a), static_cast<int>(b));
        int want = a == b ? -1 : (p.cls == PathClass::kNV ? p.nvlinks : 0);
        EXPECT_EQ(g.links[b], want) << c.nodes[n].name << " GPU" << a << "-" << b;
      }
    }
  }
}

TEST(SlurmExport, H100TreeRoundTrip) {
  Cluster c = LoadExample("h100-2rack.yaml");
  auto ex = ExportSlurm(c);
  ASSERT_TRUE(ex.ok()) << ex.status().ToString();
  EXPECT_EQ(ex->topology_kind, "tree");
  EXPECT_THAT(ex->topology_conf, HasSubstr("SwitchName=leaf0 Nodes=gpu[001-016] LinkSpeed=51200\n"))
      << ex->topology_conf;
  EXPECT_THAT(ex->topology_conf, HasSubstr("SwitchName=spine0 Switches=leaf[0-1]\n"));
  // Identical nodes share one line per GPU.
  EXPECT_THAT(ex->gres_conf, HasSubstr("AutoDetect=off\n"));
  // Cores= are Slurm's logical core ids: CPUs 0-47,96-143 of a 192-CPU, 2-thread node are
  // cores 0-47 (CPU c+96 is the second thread of core c).
  EXPECT_THAT(ex->gres_conf, HasSubstr("NodeName=gpu[001-032] Name=gpu Type=h100 File=/dev/nvidia0 "
                                       "Cores=0-47 Links=-1,18,18,18,18,18,18,18\n"))
      << ex->gres_conf;
  EXPECT_THAT(ex->gres_conf, HasSubstr("File=/dev/nvidia7 Cores=48-95 "
                                       "Links=18,18,18,18,18,18,18,-1\n"));
  EXPECT_THAT(ex->nodes_conf, HasSubstr("NodeName=gpu001 CPUs=192 Sockets=2 CoresPerSocket=48 "
                                        "ThreadsPerCore=2 Gres=gpu:h100:8\n"))
      << ex->nodes_conf;

  auto t = ParseTopologyConf(ex->topology_conf, "topology.conf");
  ASSERT_TRUE(t.ok()) << t.status().ToString() << "\n" << ex->topology_conf;
  ExpectSameTree(c, *t);
  EXPECT_DOUBLE_EQ(t->levels[1].uplink_gbps, c.levels[1].uplink_gbps);
  ExpectGresMatchesTopology(c, ex->gres_conf, "h100");

  // Back onto the cluster: the same meeting levels for every pair.
  Cluster again = c;
  ASSERT_TRUE(ApplySlurmTopology(*t, again).ok());
  for (size_t a = 0; a < c.nodes.size(); a += 5) {
    for (size_t b = 0; b < c.nodes.size(); b += 3) {
      EXPECT_EQ(again.MeetLevel(a, b), c.MeetLevel(a, b)) << a << "," << b;
    }
  }
  EXPECT_EQ(again.rails.scope_level, "");  // "spine" is now "switch-0"

  SlurmExportOptions block;
  block.topology = SlurmExportOptions::Topology::kBlock;
  // no NVLink domains
  EXPECT_THAT(ExportSlurm(c, block),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("cluster \"h100-2rack\" has no NVLink domains to write as "
                                 "topology/block blocks")));
}

TEST(SlurmExport, Gb200BlockAndTreeRoundTrip) {
  Cluster c = LoadExample("gb200-nvl72.yaml");
  auto ex = ExportSlurm(c);
  ASSERT_TRUE(ex.ok()) << ex.status().ToString();
  EXPECT_EQ(ex->topology_kind, "block");
  EXPECT_THAT(ex->topology_conf, HasSubstr("BlockName=nvl72-rack0 Nodes=gb[001-018]\n"))
      << ex->topology_conf;
  auto t = ParseTopologyConf(ex->topology_conf, "topology.conf");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->kind, SlurmTopology::Kind::kBlock);
  ASSERT_EQ(t->domains.size(), c.nvlink_domains.size());
  for (size_t v = 0; v < c.nvlink_domains.size(); ++v) {
    EXPECT_EQ(t->domains[v].name, c.nvlink_domains[v].name);
    std::vector<std::string> want;
    for (int n : c.nvlink_domains[v].nodes) want.push_back(c.nodes[n].name);
    EXPECT_EQ(DomainNodes(*t, static_cast<int>(v)), want);
  }
  EXPECT_EQ(t->block_sizes, (std::vector<int>{18, 36}));
  ExpectGresMatchesTopology(c, ex->gres_conf, "gb200");
  EXPECT_THAT(ex->gres_conf, HasSubstr("NodeName=gb[001-036] Name=gpu Type=gb200 File=/dev/nvidia2 "
                                       "Cores=72-143 Links=18,18,-1,18\n"))
      << ex->gres_conf;

  SlurmExportOptions tree;
  tree.topology = SlurmExportOptions::Topology::kTree;
  auto ex_tree = ExportSlurm(c, tree);
  ASSERT_TRUE(ex_tree.ok());
  auto tt = ParseTopologyConf(ex_tree->topology_conf, "topology.conf");
  ASSERT_TRUE(tt.ok()) << tt.status().ToString();
  ExpectSameTree(c, *tt);
}

TEST(SlurmExport, GroupsOnlyIdenticalNodesAndRefusesUnwritableNames) {
  Cluster c;
  c.name = "two-kinds";
  c.profiles.push_back({"a", "", MakeSyntheticTopology("gpu:2 nvlink:4 model:A100").value()});
  c.profiles.push_back({"b", "", MakeSyntheticTopology("gpu:2 pcie model:L4").value()});
  c.nodes = {{"x1", 0, -1, -1}, {"x2", 1, -1, -1}, {"x3", 0, -1, -1}};
  c.Finalize();
  auto ex = ExportSlurm(c);
  ASSERT_TRUE(ex.ok()) << ex.status().ToString();
  EXPECT_THAT(ex->gres_conf, HasSubstr("NodeName=x[1,3] Name=gpu Type=a100 File=/dev/nvidia1 "))
      << ex->gres_conf;
  EXPECT_THAT(ex->gres_conf, HasSubstr("NodeName=x2 Name=gpu Type=l4 File=/dev/nvidia0 "));
  EXPECT_THAT(ex->gres_conf, HasSubstr("Links=-1,4\n"));
  EXPECT_THAT(ex->gres_conf, HasSubstr("Links=0,-1\n"));
  c.nodes[1].name = "bad name";
  c.Finalize();
  auto bad = ExportSlurm(c);
  ASSERT_THAT(bad, StatusIs(StatusCode::kInvalidArgument, HasSubstr("\"bad name\"")));
}

// CPU layouts as Slurm counts them, from the real samples' CPU affinity columns.
TEST(InferSlurmCpuLayout, SamplesAndSynthetic) {
  const struct {
    const char* file;
    int cpus, sockets, cores_per_socket, threads;
    std::vector<int> gpu0_cores, gpu7_cores;
  } cases[] = {
      // "0-11,24-35" / "12-23,36-47": 2 sockets x 12 cores x 2 threads.
      {"02-v100-sxm2-8gpu-dgx1like-2socket-1nic-oneflow-dlperf.txt", 48, 2, 12, 2,
       *ParseIntList("0-11"), *ParseIntList("12-23")},
      // "0-47,96-143" / "48-95,144-191": 2 x 48 x 2.
      {"24-h100-sxm-8gpu-nv18-8nic-pix-sglang30401.txt", 192, 2, 48, 2, *ParseIntList("0-47"),
       *ParseIntList("48-95")},
      // One list "0-23" for every GPU: no sign of SMT, one socket.
      {"01-v100-sxm2-8gpu-hybrid-cubemesh-paddle-fleetx.txt", 24, 1, 24, 1, *ParseIntList("0-23"),
       *ParseIntList("0-23")},
  };
  for (const auto& c : cases) {
    auto t = ImportTopologyFile(std::string(TS_SOURCE_DIR) + "/data/samples/nvidia-smi/" + c.file,
                                TopoFormat::kAuto);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    SlurmCpuLayout l = InferSlurmCpuLayout(*t);
    EXPECT_EQ(l.cpus, c.cpus) << c.file;
    EXPECT_EQ(l.sockets, c.sockets) << c.file;
    EXPECT_EQ(l.cores_per_socket, c.cores_per_socket) << c.file;
    EXPECT_EQ(l.threads_per_core, c.threads) << c.file;
    EXPECT_EQ(SlurmCoresOf(l, *t->gpus[t->gpu_pos(0)].cpus), c.gpu0_cores) << c.file;
    EXPECT_EQ(SlurmCoresOf(l, *t->gpus[t->gpu_pos(7)].cpus), c.gpu7_cores) << c.file;
  }
  // Nothing known about CPUs: no layout, no Cores=.
  auto bare = ImportTopologyFile(std::string(TS_SOURCE_DIR) + "/data/samples/nvidia-smi/" +
                                     "02-v100-sxm2-8gpu-dgx1like-2socket-1nic-oneflow-dlperf.txt",
                                 TopoFormat::kAuto);
  ASSERT_TRUE(bare.ok());
  for (Gpu& g : bare->gpus) g.cpus.reset();
  for (NumaNode& n : bare->numa_nodes) n.cpus.clear();
  EXPECT_EQ(InferSlurmCpuLayout(*bare).cpus, 0);
  EXPECT_TRUE(SlurmCoresOf(InferSlurmCpuLayout(*bare), {0, 1}).empty());
}

// Found by fuzzing (fuzz/regressions/slurm): a 643-byte block line whose bracket groups
// multiply to a million host names took 0.6 s (13 s under ASan). One list now stops at 131,072
// names and a file's lists at 262,144 in all, each refusal naming its line and the limit.
TEST(SlurmTopologyConfLimits, HostListProductsAreBoundedPerListAndPerFile) {
  const std::string file =
      std::string(TS_SOURCE_DIR) + "/fuzz/regressions/slurm/timeout-bracket-product-a27edbea";
  auto t = ParseTopologyConf(toposched::testing::ReadFileText(file), "fuzzed.conf");
  ASSERT_THAT(t, StatusIs(StatusCode::kInvalidArgument, HasSubstr("fuzzed.conf:2:")));
  // Its names are also longer than a host name may be (fuzz/regressions/slurm/oom-*): that
  // refusal comes first now. A product of short names meets the count limit.
  auto product = ParseTopologyConf("BlockName=b1 Nodes=r[0-99]n[0-99]g[0-99]\n", "p.conf");
  ASSERT_THAT(product,
              StatusIs(StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("p.conf:1:"), HasSubstr("more than 131072 hosts"))));

  std::string three;
  for (int b = 0; b < 3; ++b) {
    three +=
        "BlockName=b" + std::to_string(b) + " Nodes=n" + std::to_string(b) + "x[000000-099999]\n";
  }
  auto all = ParseTopologyConf(three, "big.conf");
  ASSERT_THAT(
      all, StatusIs(StatusCode::kInvalidArgument,
                    AllOf(HasSubstr("big.conf:3:"), HasSubstr("more than 262144 names in all"))));
}

}  // namespace
}  // namespace toposched::topo::io
