#include "topo/cluster.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "testing/status_matchers.h"
#include "topo/synthetic.h"

namespace toposched::topo {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

// core > spine > leaf, plus a second root "island" holding n4 directly:
//   core0 ─ spine0 ─ leaf0 {n0, n1}
//         │        └ leaf1 {n2}
//         └ spine1 ─ leaf2 {n3}
//   island {n4}
Cluster MakeSmallCluster() {
  Cluster c;
  c.name = "small";
  HardwareProfile p;
  p.name = "s8";
  p.topology = MakeSyntheticTopology("gpu:8 nvswitch:18 nics:8").value();
  c.profiles.push_back(p);
  c.levels = {{"core", 0, 1}, {"spine", 12800, 1}, {"leaf", 3200, 2}};
  auto add_domain = [&](const std::string& name, int level, int parent) {
    NetworkDomain d;
    d.name = name;
    d.level = level;
    d.parent = parent;
    c.domains.push_back(d);
    int id = static_cast<int>(c.domains.size()) - 1;
    if (parent >= 0) c.domains[parent].children.push_back(id);
    return id;
  };
  int core0 = add_domain("core0", 0, -1);
  int spine0 = add_domain("spine0", 1, core0);
  int spine1 = add_domain("spine1", 1, core0);
  int leaf0 = add_domain("leaf0", 2, spine0);
  int leaf1 = add_domain("leaf1", 2, spine0);
  int leaf2 = add_domain("leaf2", 2, spine1);
  int island = add_domain("island", 0, -1);
  const int attach[] = {leaf0, leaf0, leaf1, leaf2, island};
  for (int i = 0; i < 5; ++i) {
    ClusterNode n;
    n.name = "n" + std::to_string(i);
    n.domain = attach[i];
    c.nodes.push_back(n);
    c.domains[attach[i]].nodes.push_back(i);
  }
  NvlinkDomain nv;
  nv.name = "nvl0";
  nv.nodes = {0, 1};
  nv.gpu_bandwidth_gbps = 900;
  c.nvlink_domains.push_back(nv);
  c.nodes[0].nvlink_domain = 0;
  c.nodes[1].nvlink_domain = 0;
  c.rails = {8, "core"};
  c.Finalize();
  return c;
}

TEST(ClusterModel, SmallClusterValidates) {
  Cluster c = MakeSmallCluster();
  Status s = c.Validate();
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(c.TotalGpus(), 40);
  EXPECT_EQ(c.topology(3).gpus.size(), 8u);
}

TEST(ClusterModel, FindsByName) {
  Cluster c = MakeSmallCluster();
  EXPECT_EQ(c.FindNode("n3"), 3);
  EXPECT_EQ(c.FindNode("n9"), -1);
  EXPECT_EQ(c.FindDomain("leaf2"), 5);
  EXPECT_EQ(c.FindDomain("leaf9"), -1);
  EXPECT_EQ(c.FindLevel("spine"), 1);
  EXPECT_EQ(c.FindLevel("zone"), -1);
  EXPECT_EQ(c.FindProfile("s8"), 0);
  EXPECT_EQ(c.FindProfile("s9"), -1);
}

TEST(ClusterModel, LookupsStayCorrectAfterEditsWithoutFinalize) {
  Cluster c = MakeSmallCluster();
  c.nodes[2].name = "renamed";
  EXPECT_EQ(c.FindNode("n2"), -1);
  EXPECT_EQ(c.FindNode("renamed"), 2);
  ClusterNode extra;
  extra.name = "n5";
  c.nodes.push_back(extra);
  EXPECT_EQ(c.FindNode("n5"), 5);
  c.Finalize();
  EXPECT_EQ(c.FindNode("renamed"), 2);
  EXPECT_EQ(c.FindNode("n5"), 5);
  Cluster unfinalized;  // never finalized: linear scans
  unfinalized.levels = {{"a", 0, 1}, {"b", 0, 1}};
  EXPECT_EQ(unfinalized.FindLevel("b"), 1);
}

TEST(ClusterModel, AncestorsGoFromLowestDomainToRoot) {
  Cluster c = MakeSmallCluster();
  EXPECT_EQ(c.Ancestors(0), (std::vector<int>{3, 1, 0}));
  EXPECT_EQ(c.Ancestors(3), (std::vector<int>{5, 2, 0}));
  EXPECT_EQ(c.Ancestors(4), (std::vector<int>{6}));
  EXPECT_TRUE(c.Ancestors(99).empty());
}

TEST(ClusterModel, MeetLevel) {
  Cluster c = MakeSmallCluster();
  struct Case {
    int a, b, level;
  } cases[] = {
      {0, 1, 2},   // same leaf
      {0, 2, 1},   // same spine
      {2, 3, 0},   // same core only
      {0, 4, -1},  // different roots
      {3, 3, 3},   // same node: levels.size()
  };
  for (const Case& k : cases) {
    EXPECT_EQ(c.MeetLevel(k.a, k.b), k.level) << k.a << "," << k.b;
    EXPECT_EQ(c.MeetLevel(k.b, k.a), k.level) << k.b << "," << k.a;
  }
}

TEST(ClusterModel, RailOversubscriptionByRail) {
  // Leaves 2:1, spines and core 1:1; rails per core (MakeSmallCluster).
  Cluster c = MakeSmallCluster();
  struct Case {
    int a, b;
    double tree, same, cross;
  } cases[] = {
      {0, 1, 1, 1, 2},  // one leaf: same rail stays on the rail switch, another rail climbs
      {0, 2, 2, 1, 2},  // two leaves of one spine: same rail skips the leaf uplinks
      {2, 3, 2, 1, 2},  // meet at the core, the rails' scope
      {0, 4, 2, 2, 2},  // different roots: the tree's figure
      {3, 3, 1, 1, 1},  // one node
  };
  for (const Case& k : cases) {
    for (auto [a, b] : {std::pair{k.a, k.b}, std::pair{k.b, k.a}}) {
      const Cluster::RailFactors f = c.RailOversubscription(a, b);
      EXPECT_EQ(f.tree, k.tree) << a << "," << b;
      EXPECT_EQ(f.tree, c.Oversubscription(a, b)) << a << "," << b;
      EXPECT_EQ(f.same_rail, k.same) << a << "," << b;
      EXPECT_EQ(f.cross_rail, k.cross) << a << "," << b;
    }
  }
  // Rails per spine: nodes under different spines pay the tree on every rail.
  c.rails.scope_level = "spine";
  EXPECT_EQ(c.RailOversubscription(2, 3).same_rail, 2);
  EXPECT_EQ(c.RailOversubscription(0, 2).same_rail, 1);
  // Rails per leaf: a rail switch per leaf; two leaves' nodes pay the tree.
  c.rails.scope_level = "leaf";
  EXPECT_EQ(c.RailOversubscription(0, 2).same_rail, 2);
  EXPECT_EQ(c.RailOversubscription(0, 1).same_rail, 1);
  EXPECT_EQ(c.RailOversubscription(0, 1).cross_rail, 2);
  // One rail set for the cluster.
  c.rails.scope_level = "";
  EXPECT_EQ(c.RailOversubscription(2, 3).same_rail, 1);
  EXPECT_TRUE(c.RailsPriced());
  c.rails.scope_level = "leaf";  // another rail still climbs the leaf's 2:1 uplink
  EXPECT_TRUE(c.RailsPriced());
  c.rails.scope_level = "";
  c.levels[2].oversubscription = 1;  // nothing tapered below the top: rails change no time
  EXPECT_FALSE(c.RailsPriced());
  EXPECT_EQ(c.RailOversubscription(0, 1).cross_rail, 1);
  c.levels[2].oversubscription = 2;
  // No rails: every factor is the tree's.
  c.rails.count = 0;
  EXPECT_FALSE(c.RailsPriced());
  const Cluster::RailFactors f = c.RailOversubscription(0, 1);
  EXPECT_EQ(f.same_rail, 1);
  EXPECT_EQ(f.cross_rail, 1);
  EXPECT_EQ(c.RailOversubscription(0, 2).same_rail, 2);
}

TEST(ClusterModel, NodesUnderIsRecursiveAndSorted) {
  Cluster c = MakeSmallCluster();
  EXPECT_EQ(c.NodesUnder(c.FindDomain("core0")), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(c.NodesUnder(c.FindDomain("spine0")), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(c.NodesUnder(c.FindDomain("leaf2")), (std::vector<int>{3}));
  EXPECT_EQ(c.NodesUnder(c.FindDomain("island")), (std::vector<int>{4}));
  EXPECT_TRUE(c.NodesUnder(-1).empty());
}

TEST(ClusterModel, BrokenParentChainDoesNotHang) {
  Cluster c = MakeSmallCluster();
  c.domains[0].parent = 3;  // core0 under leaf0: a cycle
  EXPECT_LE(c.Ancestors(0).size(), c.domains.size() + 1);
  EXPECT_THAT(c.Validate(), StatusIs(StatusCode::kInvalidArgument, HasSubstr("parent")));
}

TEST(ClusterModel, ValidateNamesTheBrokenInvariant) {
  struct Case {
    const char* what;
    std::function<void(Cluster&)> mutate;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"duplicate node", [](Cluster& c) { c.nodes[1].name = "n0"; }, "duplicate node name \"n0\""},
      {"duplicate domain", [](Cluster& c) { c.domains[4].name = "leaf0"; },
       "duplicate network domain name \"leaf0\""},
      {"empty level name", [](Cluster& c) { c.levels[1].name = ""; }, "has an empty name"},
      {"parent two levels up",
       [](Cluster& c) {
         c.domains[3].parent = 0;  // leaf0 directly under core0
         c.domains[1].children = {4};
         c.domains[0].children.push_back(3);
       },
       "network domain \"leaf0\" at level \"leaf\": parent \"core0\" must be one level up"},
      {"children not mirrored", [](Cluster& c) { c.domains[1].children.pop_back(); },
       "network domain \"leaf1\": parent \"spine0\" does not list it"},
      {"child listed twice", [](Cluster& c) { c.domains[2].children.push_back(5); },
       "child \"leaf2\" listed twice"},
      {"node in two leaves", [](Cluster& c) { c.domains[4].nodes.push_back(0); },
       "node \"n0\" is in network domain \"leaf0\" and in \"leaf1\""},
      {"node domain mismatch", [](Cluster& c) { c.nodes[2].domain = 3; },
       "node \"n2\": its domain \"leaf0\" does not list it"},
      {"level out of range", [](Cluster& c) { c.domains[6].level = 7; },
       "network domain \"island\": level 7 out of range"},
      {"profile out of range", [](Cluster& c) { c.nodes[0].profile = 3; },
       "node \"n0\": hardware profile id 3 out of range"},
      {"NVLink domains overlap",
       [](Cluster& c) {
         NvlinkDomain nv;
         nv.name = "nvl1";
         nv.nodes = {1, 2};
         c.nvlink_domains.push_back(nv);
       },
       "node \"n1\" is in NVLink domain \"nvl0\" and in \"nvl1\""},
      {"NVLink back-pointer", [](Cluster& c) { c.nodes[3].nvlink_domain = 0; },
       "node \"n3\": nvlink_domain does not match"},
      {"negative uplink", [](Cluster& c) { c.levels[2].uplink_gbps = -1; },
       "network level \"leaf\": uplink_gbps must be >= 0"},
      {"zero oversubscription", [](Cluster& c) { c.levels[2].oversubscription = 0; },
       "network level \"leaf\": oversubscription must be > 0"},
      {"rails scope", [](Cluster& c) { c.rails.scope_level = "zone"; },
       "rails.scope: unknown network level \"zone\""},
      {"more rails than NICs", [](Cluster& c) { c.rails.count = 9; },
       "rails.count 9 exceeds the 8 NICs of hardware profile \"s8\""},
  };
  for (const Case& k : cases) {
    Cluster c = MakeSmallCluster();
    k.mutate(c);
    Status s = c.Validate();
    ASSERT_THAT(s, StatusIs(StatusCode::kInvalidArgument, HasSubstr(k.message))) << k.what;
  }
}

TEST(ClusterModel, TenThousandNodeLookups) {
  Cluster c;
  c.profiles.push_back({"p", "", MakeSyntheticTopology("gpu:8 nvswitch:18").value()});
  c.levels = {{"leaf", 0, 1}};
  for (int i = 0; i < 10000; ++i) {
    ClusterNode n;
    n.name = "node" + std::to_string(i);
    c.nodes.push_back(n);
  }
  c.Finalize();
  for (int i = 0; i < 10000; i += 7) EXPECT_EQ(c.FindNode("node" + std::to_string(i)), i);
  EXPECT_EQ(c.TotalGpus(), 80000);
  EXPECT_TRUE(c.Validate().ok());
}

}  // namespace
}  // namespace toposched::topo
