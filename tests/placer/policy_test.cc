#include "placer/policy.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>

#include "job/job_spec.h"
#include "placer/gang.h"
#include "testing/alloc_ids.h"
#include "testing/clusters.h"
#include "testing/status_matchers.h"
#include "topo/io/cluster_yaml.h"

namespace toposched::sched {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

const topo::Cluster& V100() {
  static const topo::Cluster* c = [] {
    auto r = topo::io::ReadClusterYamlFile(std::string(TS_SOURCE_DIR) +
                                           "/tests/sched/testdata/v100-4node.yaml");
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    r->Finalize();
    return new topo::Cluster(std::move(r).value());
  }();
  return *c;
}

const GangPlacer& PolicyPlacerOf(const topo::Cluster& c, const std::string& policy) {
  static auto* cache =
      new std::map<std::pair<const topo::Cluster*, std::string>, std::unique_ptr<GangPlacer>>();
  auto key = std::make_pair(&c, policy);
  auto it = cache->find(key);
  if (it != cache->end()) return *it->second;
  auto o = PolicyOptions(policy);
  EXPECT_TRUE(o.ok()) << o.status().ToString();
  auto p = GangPlacer::Create(c, *o);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return *cache->emplace(key, std::move(p).value()).first->second;
}

job::JobSpec Job(int tp, int dp) {
  job::JobSpec j;
  j.name = "j";
  j.layout.tp = tp;
  j.layout.dp = dp;
  j.layout.dp_bytes = int64_t{1} << 30;
  j.layout.tp_bytes = tp > 1 ? int64_t{64} << 20 : 0;
  EXPECT_TRUE(j.Normalize().ok());
  return j;
}

std::vector<int> GpusOn(const Placement& p, int node) {
  std::vector<int> out;
  for (const NodeGpus& g : p.parts) {
    if (g.node != node) continue;
    for (int i = 0; i < 128; ++i) {
      if (g.gpus.test(i)) out.push_back(i);
    }
  }
  return out;
}

TEST(PolicyTest, NamesAndErrors) {
  ASSERT_EQ(PolicyNames().size(), 9u);
  for (const std::string& n : PolicyNames()) {
    auto o = PolicyOptions(n);
    ASSERT_TRUE(o.ok()) << n;
    EXPECT_TRUE(o->Validate().ok()) << n;
  }
  auto bad = PolicyOptions("fastest");
  ASSERT_THAT(bad,
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("known: toposched, first-fit")));
  // Only toposched scores with the cost model.
  EXPECT_GT(PolicyOptions("toposched")->plugins.Weight("comm-time"), 0);
  EXPECT_EQ(PolicyOptions("kueue-tas")->plugins.Weight("comm-time"), 0);
}

TEST(PolicyTest, ConsolidatedLevelIsTheTightestPlaceOnTheEmptyCluster) {
  const topo::Cluster& c = testing::H100Cluster();  // 2 leaves of 16 nodes x 8 GPUs, one spine
  EXPECT_EQ(ConsolidatedLevel(c, 1), "node");
  EXPECT_EQ(ConsolidatedLevel(c, 8), "node");
  EXPECT_EQ(ConsolidatedLevel(c, 9), "leaf");
  EXPECT_EQ(ConsolidatedLevel(c, 128), "leaf");
  EXPECT_EQ(ConsolidatedLevel(c, 129), "spine");
  EXPECT_EQ(ConsolidatedLevel(c, 256), "spine");
  EXPECT_EQ(ConsolidatedLevel(c, 257), "");
  EXPECT_TRUE(PolicyWaitsForLocality("locality-relax"));
  EXPECT_FALSE(PolicyWaitsForLocality("best-fit"));
}

// On the cube-mesh, 5 of 8 GPUs: the lowest-numbered five (0-4) leave GPU 4's ring hop to a
// GPU without NVLink; the cost model finds a set whose ring closes over NVLink.
TEST(PolicyTest, CostModelGpuChoiceBeatsFirstFreeAndPairScoreOnCubeMesh) {
  const topo::Cluster& c = V100();
  auto st = ClusterState::Create(c);
  ASSERT_TRUE(st.ok());
  std::map<std::string, double> ms;
  for (const std::string& n : PolicyNames()) {
    Verdict v = PolicyPlacerOf(c, n).Place(*st, Job(1, 5));
    ASSERT_TRUE(v.fit()) << n << ": " << v.Explain();
    ms[n] = v.placement->predicted_ms;
  }
  for (const auto& [n, t] : ms) EXPECT_LE(ms["toposched"], t * (1 + 1e-9)) << n;
  EXPECT_LT(ms["toposched"] * 2, ms["first-fit"]);
  EXPECT_LT(ms["toposched"] * 2, ms["pair-score"]);
  // first-free hands out 0-4.
  Verdict ff = PolicyPlacerOf(c, "first-fit").Place(*st, Job(1, 5));
  EXPECT_EQ(GpusOn(*ff.placement, ff.placement->parts[0].node), (std::vector<int>{0, 1, 2, 3, 4}));
}

// The topology-oblivious baselines place GPU by GPU: spread hands each GPU to the node with the
// most free GPUs (a 4-GPU job on the empty 4-node cluster gets one GPU per node); random draws
// free GPUs, the same draw for the same state and job, and another with another seed.
TEST(PolicyTest, SpreadAndRandomIgnoreTheTopology) {
  const topo::Cluster& c = V100();
  auto st = ClusterState::Create(c);
  ASSERT_TRUE(st.ok());
  Verdict s = PolicyPlacerOf(c, "spread").Place(*st, Job(1, 4));
  ASSERT_TRUE(s.fit()) << s.Explain();
  EXPECT_EQ(s.placement->parts.size(), 4u);
  for (const NodeGpus& p : s.placement->parts) EXPECT_EQ(p.gpus.count(), 1);
  Verdict packed = PolicyPlacerOf(c, "toposched").Place(*st, Job(1, 4));
  ASSERT_TRUE(packed.fit());
  EXPECT_GT(s.placement->predicted_ms, packed.placement->predicted_ms);

  Verdict r1 = PolicyPlacerOf(c, "random").Place(*st, Job(1, 8));
  Verdict r2 = PolicyPlacerOf(c, "random").Place(*st, Job(1, 8));
  ASSERT_TRUE(r1.fit() && r2.fit());
  EXPECT_EQ(r1.placement->ranks, r2.placement->ranks);
  int gpus = 0;
  for (const NodeGpus& p : r1.placement->parts) gpus += p.gpus.count();
  EXPECT_EQ(gpus, 8);
  auto other = PolicyOptions("random");
  ASSERT_TRUE(other.ok());
  other->seed = 7;
  auto placer = GangPlacer::Create(c, *other);
  ASSERT_TRUE(placer.ok());
  Verdict r3 = (*placer)->Place(*st, Job(1, 8));
  ASSERT_TRUE(r3.fit());
  EXPECT_NE(r1.placement->ranks, r3.placement->ranks);

  auto bad = PolicyOptions("spread");
  ASSERT_TRUE(bad.ok());
  bad->plugins.gpus = "cost-model";
  EXPECT_THAT(bad->Validate(),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("plugins.nodes \"spread\" places GPU by GPU: it needs gpus "
                                 "\"first-free\" and refine \"none\"")));
}

// Node choice: spread puts a small job on the emptiest node, packing and node order on the
// partly used one.
TEST(PolicyTest, SpreadVersusPackNodeChoice) {
  const topo::Cluster& c = V100();
  auto st = ClusterState::Create(c);
  ASSERT_TRUE(st.ok());
  GpuMask six;
  for (int g = 0; g < 6; ++g) six.set(g);
  ASSERT_TRUE(st->Allocate(testing::Alloc(1), {NodeGpus{1, six}}).ok());  // dgx2: 2 free
  auto node_of = [&](const std::string& policy) {
    Verdict v = PolicyPlacerOf(c, policy).Place(*st, Job(1, 2));
    EXPECT_TRUE(v.fit()) << policy;
    return v.fit() ? c.nodes[v.placement->parts[0].node].name : "";
  };
  EXPECT_EQ(node_of("first-fit"), "dgx1");   // emptiest, first on ties
  EXPECT_EQ(node_of("best-fit"), "dgx2");    // fullest that holds it
  EXPECT_EQ(node_of("slurm-tree"), "dgx1");  // first in node order that holds it
  EXPECT_EQ(node_of("toposched"), "dgx2");
}

// 12 GPUs (TP 4 x DP 3) when leaf0 has only two half-free nodes: cluster-wide best fit takes a
// whole node of leaf1 and tops up in leaf0 (two leaves); the level-aware policies stay in leaf1.
TEST(PolicyTest, LevelAwarePoliciesStayInOneLeaf) {
  const topo::Cluster& c = testing::H100Cluster();
  auto st = ClusterState::Create(c);
  ASSERT_TRUE(st.ok());
  GpuMask low4, all8;
  for (int g = 0; g < 8; ++g) {
    all8.set(g);
    if (g < 4) low4.set(g);
  }
  int64_t id = 1;
  for (int n = 0; n < 16; ++n)
    ASSERT_TRUE(st->Allocate(testing::Alloc(id++), {NodeGpus{n, n < 2 ? low4 : all8}}).ok());
  auto leaves = [&](const std::string& policy) {
    Verdict v = PolicyPlacerOf(c, policy).Place(*st, Job(4, 3));
    EXPECT_TRUE(v.fit()) << policy << ": " << v.Explain();
    std::set<int> ls;
    if (v.fit()) {
      for (const NodeGpus& g : v.placement->parts) ls.insert(c.nodes[g.node].domain);
    }
    return ls.size();
  };
  EXPECT_EQ(leaves("best-fit"), 2u);
  EXPECT_EQ(leaves("pair-score"), 2u);
  EXPECT_EQ(leaves("toposched"), 1u);
  EXPECT_EQ(leaves("kueue-tas"), 1u);
  EXPECT_EQ(leaves("slurm-tree"), 1u);
}

}  // namespace
}  // namespace toposched::sched
