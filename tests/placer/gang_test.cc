#include "placer/gang.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "job/job_spec.h"
#include "placer/gang_search.h"
#include "placer/policy.h"
#include "plugins/domain_plugins.h"
#include "plugins/gpu_plugins.h"
#include "plugins/node_plugins.h"
#include "plugins/rail_plugins.h"
#include "plugins/refine_plugins.h"
#include "plugins/share_plugins.h"
#include "state/link_model.h"
#include "testing/alloc_ids.h"
#include "testing/clusters.h"
#include "testing/status_matchers.h"
#include "topo/io/cluster_yaml.h"

namespace toposched::sched {
namespace {

using ::testing::Not;
using ::toposched::testing::HasSubstr;

using job::ConstraintMode;

const topo::Cluster& H100() { return testing::H100Cluster(); }
const topo::Cluster& Gb200() { return testing::Gb200Cluster(); }

const GangPlacer& GangPlacerOf(const topo::Cluster& c) {
  static auto* cache = new std::map<const topo::Cluster*, std::unique_ptr<GangPlacer>>();
  auto it = cache->find(&c);
  if (it != cache->end()) return *it->second;
  auto p = GangPlacer::Create(c);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return *cache->emplace(&c, std::move(p).value()).first->second;
}

ClusterState EmptyStateOf(const topo::Cluster& c) {
  StatusOr<ClusterState> s = ClusterState::Create(c);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(s).value();
}

std::vector<job::JobSpec> ExampleJobs() {
  auto jobs = job::ReadJobsFile(std::string(TS_SOURCE_DIR) + "/data/jobs/example-jobs.yaml");
  EXPECT_TRUE(jobs.ok()) << jobs.status().ToString();
  return jobs.ok() ? *jobs : std::vector<job::JobSpec>{};
}

job::JobSpec ExampleJob(const std::string& name) {
  for (const job::JobSpec& j : ExampleJobs()) {
    if (j.name == name) return j;
  }
  ADD_FAILURE() << "no example job " << name;
  return {};
}

job::JobSpec MakeJob(int tp, int pp, int dp) {
  job::JobSpec j;
  j.name = "test";
  j.layout.tp = tp;
  j.layout.pp = pp;
  j.layout.dp = dp;
  j.layout.dp_bytes = int64_t{1} << 30;
  j.layout.tp_bytes = tp > 1 ? int64_t{64} << 20 : 0;
  j.layout.pp_bytes = pp > 1 ? int64_t{64} << 20 : 0;
  EXPECT_TRUE(j.Normalize().ok());
  return j;
}

void Constrain(job::LevelConstraint& c, ConstraintMode mode, const std::string& level) {
  c.mode = mode;
  c.level = level;
}

// Holds `n` GPUs (positions 0..n-1) of a node under a fresh allocation id.
void Hold(ClusterState& s, int node, int n) {
  static int64_t next = 1000;
  if (n <= 0) return;
  ASSERT_TRUE(s.Allocate(testing::Alloc(next++), {NodeGpus{node, GpuMask::FirstN(n)}}).ok());
}

int LevelDomain(const topo::Cluster& c, int node, const std::string& level) {
  int li = c.FindLevel(level);
  for (int d : c.Ancestors(node)) {
    if (c.domains[d].level == li) return d;
  }
  return -1;
}

// Checks what every placement must satisfy: ranks 0..W-1 in order, distinct free GPUs, parts
// matching ranks, TP groups on one node (when asked), and a clean Allocate.
void CheckPlacement(ClusterState& s, const job::JobSpec& j, const Placement& p,
                    bool tp_on_node = true) {
  const int w = j.layout.WorldSize();
  ASSERT_EQ(static_cast<int>(p.ranks.size()), w);
  std::set<std::pair<int, int>> used;
  std::map<int, GpuMask> per_node;
  for (int r = 0; r < w; ++r) {
    EXPECT_EQ(p.ranks[r].rank, r);
    EXPECT_TRUE(used.insert({p.ranks[r].node, p.ranks[r].gpu}).second) << "rank " << r;
    EXPECT_TRUE(s.FreeMask(p.ranks[r].node).test(p.ranks[r].gpu)) << "rank " << r;
    per_node[p.ranks[r].node].set(p.ranks[r].gpu);
  }
  ASSERT_EQ(p.parts.size(), per_node.size());
  for (const NodeGpus& g : p.parts) EXPECT_EQ(g.gpus, per_node[g.node]);
  if (tp_on_node) {
    for (int r = 0; r < w; r += j.layout.tp) {
      for (int q : j.layout.TpGroup(r)) EXPECT_EQ(p.ranks[q].node, p.ranks[r].node) << q;
    }
  }
  if (w > 1) {  // one GPU communicates with nobody: 0 ms
    EXPECT_GT(p.predicted_ms, 0);
    EXPECT_GT(p.best_possible_ms, 0);
  }
  EXPECT_LE(p.best_possible_ms, p.predicted_ms * (1 + 1e-9));
  static int64_t id = 1;
  ASSERT_TRUE(s.Allocate(testing::Alloc(id++), p.parts).ok());
  Status inv = s.CheckInvariants();
  EXPECT_TRUE(inv.ok()) << inv.ToString();
}

TEST(GangOptions, Validate) {
  struct Case {
    std::function<void(GangPlacerOptions&)> edit;
    bool ok;
  };
  const Case cases[] = {
      {[](GangPlacerOptions&) {}, true},
      {[](GangPlacerOptions& o) {
         o.plugins.scores = {{"comm-time", -1}};
       },
       false},
      {[](GangPlacerOptions& o) { o.plugins.gpus = "random"; }, false},
      {[](GangPlacerOptions& o) { o.max_candidate_domains = 0; }, false},
      {[](GangPlacerOptions& o) { o.max_node_evaluations = 5000; }, false},
      {[](GangPlacerOptions& o) { o.node_select.beam_width = 0; }, false},
  };
  for (const Case& c : cases) {
    GangPlacerOptions o;
    c.edit(o);
    EXPECT_EQ(o.Validate().ok(), c.ok);
  }
}

// The plugins as data resolve once to their typed form: every registered name to its own value
// (the registry's order is the enums'), weights of a score listed twice summed, an unknown name
// refused with the known ones listed; the placer keeps the typed form.
TEST(GangOptions, PluginNamesResolveToTypedPlugins) {
  for (const char* slot : {"domain", "nodes", "gpus", "refine", "shares", "score"}) {
    EXPECT_FALSE(PluginNames(slot).empty()) << slot;
  }
  for (size_t i = 0; i < PluginNames("nodes").size(); ++i) {
    PlacementPlugins p;
    p.nodes = PluginNames("nodes")[i];
    if (p.nodes == "spread" || p.nodes == "random") {
      p.gpus = "first-free";
      p.refine = "none";
    }
    auto t = ResolvePlugins(p);
    ASSERT_TRUE(t.ok()) << p.nodes << ": " << t.status().ToString();
    EXPECT_EQ(t->nodes->name(), p.nodes);
    EXPECT_EQ(t->nodes, &NodePluginFor(t->nodes->rule()));
    EXPECT_EQ(t->scatters(), p.nodes == "spread" || p.nodes == "random");
  }
  for (const std::string& name : PluginNames("shares")) {
    PlacementPlugins p;
    p.shares = name;
    auto t = ResolvePlugins(p);
    ASSERT_TRUE(t.ok()) << name;
    EXPECT_EQ(t->shares->name(), name);
    EXPECT_EQ(t->shares, &SharePluginFor(t->shares->rule()));
  }
  PlacementPlugins p;
  p.domain = "cluster";
  p.gpus = "pair-score";
  p.refine = "none";
  p.scores = {{"comm-time", 1}, {"fragmentation", 0.5}, {"comm-time", 2}};
  auto t = ResolvePlugins(p);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->domain->rule(), DomainRule::kCluster);
  EXPECT_EQ(t->gpus->rule(), GpuRule::kPairScore);
  EXPECT_EQ(t->gpus->name(), "pair-score");
  EXPECT_EQ(t->refine->rule(), RefineRule::kNone);
  EXPECT_EQ(t->rails->rule(), RailRule::kAlign);
  EXPECT_FALSE(t->refine->refines());
  EXPECT_EQ(t->weight(ScoreTerm::kCommTime), 3);
  EXPECT_EQ(t->weight(ScoreTerm::kFragmentation), 0.5);
  EXPECT_EQ(t->weight(ScoreTerm::kContention), 0);
  p.refine = "anneal";
  auto bad = ResolvePlugins(p);
  EXPECT_EQ(bad.status().message(),
            "gang: unknown refine plugin \"anneal\" (known: local-search, none)");
  EXPECT_EQ(GangPlacerOf(H100()).plugins().weight(ScoreTerm::kContention),
            GangPlacerOptions().plugins.Weight("contention"));
}

TEST(Gang, Tp8Pp2Dp2LandsOnWholeNodesInOneLeafInMegatronOrder) {
  const topo::Cluster& c = H100();
  ClusterState s = EmptyStateOf(c);
  job::JobSpec j = MakeJob(8, 2, 2);
  Verdict v = GangPlacerOf(c).Place(s, j);
  ASSERT_TRUE(v.fit()) << v.Explain();
  const Placement& p = *v.placement;
  ASSERT_EQ(p.parts.size(), 4u);
  int leaf = LevelDomain(c, p.parts[0].node, "leaf");
  for (const NodeGpus& g : p.parts) {
    EXPECT_EQ(g.gpus.count(), 8);
    EXPECT_EQ(LevelDomain(c, g.node, "leaf"), leaf);
  }
  // Megatron order: a PP stage is TP·DP = 16 consecutive ranks on neighbouring nodes; stage 1
  // follows stage 0 in node order.
  const job::Layout& l = j.layout;
  EXPECT_EQ(l.RankOf(3, 1, 1), 3 + 8 * (1 + 2 * 1));
  int last_stage0 = -1, first_stage1 = 1 << 30;
  for (const RankSlot& r : p.ranks) {
    if (l.CoordOf(r.rank).pp == 0) last_stage0 = std::max(last_stage0, r.node);
    if (l.CoordOf(r.rank).pp == 1) first_stage1 = std::min(first_stage1, r.node);
  }
  EXPECT_LT(last_stage0, first_stage1);
  EXPECT_NEAR(p.predicted_ms, p.best_possible_ms, 1e-9);  // empty cluster: the best there is
  for (const RankSlot& r : p.ranks) EXPECT_GE(r.nic, 0);
  CheckPlacement(s, j, p);
}

// The example H100 cluster (NIC i next to GPU i, rails per spine) with 2:1 leaf uplinks, so a
// DP neighbour on another rail pays for it in predicted time.
const topo::Cluster& TaperedH100() {
  static const topo::Cluster* c = [] {
    auto* t = new topo::Cluster(H100());
    t->levels[t->FindLevel("leaf")].oversubscription = 2;
    t->Finalize();
    return t;
  }();
  return *c;
}

// Leaves only `free` GPUs of `node` free.
void HoldAllBut(ClusterState& s, int node, std::initializer_list<int> free) {
  static int64_t next = 5000;
  GpuMask held;
  for (int g = 0; g < s.GpuCount(node); ++g) {
    if (std::find(free.begin(), free.end(), g) == free.end()) held.set(g);
  }
  if (held.count() > 0) {
    ASSERT_TRUE(s.Allocate(testing::Alloc(next++), {NodeGpus{node, held}}).ok());
  }
}

int CrossedDpNeighbours(const job::JobSpec& j, const Placement& p) {
  int crossed = 0;
  for (int r = j.layout.tp; r < j.layout.WorldSize(); ++r) {
    if ((r / j.layout.tp) % j.layout.dp == 0) continue;
    const RankSlot& a = p.ranks[r - j.layout.tp];
    const RankSlot& b = p.ranks[r];
    if (a.node != b.node && a.nic != b.nic) ++crossed;
  }
  return crossed;
}

TEST(Gang, DpPeersOnDifferentNodesShareARail) {
  // Every node busy but two: gpu001 has GPUs 1-3 free, gpu002 GPUs 0-2. A TP2 DP2 job needs
  // both (one TP pair each); any two GPUs of a node are as fast inside it, and the node selector
  // alone takes GPUs 1, 2 on gpu001 and 0, 1 on gpu002: DP peers on rails 1-0 and 2-1.
  const topo::Cluster& c = TaperedH100();
  ClusterState s = EmptyStateOf(c);
  for (int n = 2; n < static_cast<int>(c.nodes.size()); ++n) HoldAllBut(s, n, {});
  HoldAllBut(s, 0, {1, 2, 3});
  HoldAllBut(s, 1, {0, 1, 2});
  job::JobSpec j = MakeJob(2, 1, 2);
  Verdict v = GangPlacerOf(c).Place(s, j);
  ASSERT_TRUE(v.fit()) << v.Explain();
  const Placement& p = *v.placement;
  ASSERT_EQ(p.parts.size(), 2u) << v.Explain();
  EXPECT_EQ(CrossedDpNeighbours(j, p), 0) << v.Explain();
  EXPECT_THAT(p.explanation, HasSubstr("DP neighbours across nodes on one rail: 2/2"))
      << p.explanation;
  // Peers on two rails would climb the 2:1 leaf uplink: twice the time.
  auto crossed = cost::CostModel(c).Evaluate(cost::Collective::kAllReduce,
                                             std::vector<cost::GpuRef>{{0, 1}, {1, 0}},
                                             static_cast<double>(j.layout.dp_bytes));
  ASSERT_TRUE(crossed.ok());
  EXPECT_NEAR(2 * p.dp_ms, crossed->time_ms, 0.05 * crossed->time_ms) << v.Explain();
  CheckPlacement(s, j, p);
}

TEST(Gang, PipelinePeersOnDifferentNodesShareARail) {
  // Two whole nodes free for a TP4 PP4 job: stages 0 and 1 fill gpu001, stages 2 and 3 gpu002.
  // In the node selector's order stage 1 sits on GPUs 4-7 and stage 2 on GPUs 0-3, so each
  // transfer between them would leave on one rail and arrive on another, through the 2:1 leaf
  // uplink. Aligned, every pipeline neighbour across the nodes keeps its rail.
  const topo::Cluster& c = TaperedH100();
  ClusterState s = EmptyStateOf(c);
  for (int n = 2; n < static_cast<int>(c.nodes.size()); ++n) HoldAllBut(s, n, {});
  job::JobSpec j = MakeJob(4, 4, 1);
  Verdict v = GangPlacerOf(c).Place(s, j);
  ASSERT_TRUE(v.fit()) << v.Explain();
  const Placement& p = *v.placement;
  ASSERT_EQ(p.parts.size(), 2u) << v.Explain();
  const cost::CostModel cost(c);
  const int stage = j.layout.tp * j.layout.dp;
  int across = 0;
  for (int r = stage; r < j.layout.WorldSize(); ++r) {
    const RankSlot& a = p.ranks[r - stage];
    const RankSlot& b = p.ranks[r];
    if (a.node == b.node) continue;
    ++across;
    EXPECT_TRUE(cost.SameRail({a.node, a.gpu}, {b.node, b.gpu}))
        << "rank " << r - stage << " on GPU " << a.gpu << " sends to rank " << r << " on GPU "
        << b.gpu;
  }
  EXPECT_EQ(across, 4);
  CheckPlacement(s, j, p);
}

// The same two jobs under rails "none" (the ablation of rail awareness): the node selector's
// choice stands, so the TP2 DP2 job's DP peers sit on two rails and the TP4 PP4 job's stage 1
// sends from GPUs 4-7 to stage 2 on GPUs 0-3; the cost model prices each against "align".
TEST(Gang, RailsNoneLeavesTheNodeSelectorsOrderAndPaysForIt) {
  const topo::Cluster& c = TaperedH100();
  GangPlacer::Options o;
  o.plugins.rails = "none";
  auto none = GangPlacer::Create(c, o);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ((*none)->plugins().rails->name(), "none");
  EXPECT_FALSE((*none)->plugins().rails->aligns());

  ClusterState s = EmptyStateOf(c);
  for (int n = 2; n < static_cast<int>(c.nodes.size()); ++n) HoldAllBut(s, n, {});
  ClusterState dp_state = s;
  HoldAllBut(dp_state, 0, {1, 2, 3});
  HoldAllBut(dp_state, 1, {0, 1, 2});
  const job::JobSpec dp = MakeJob(2, 1, 2);
  Verdict aligned = GangPlacerOf(c).Place(dp_state, dp);
  Verdict plain = (*none)->Place(dp_state, dp);
  ASSERT_TRUE(aligned.fit() && plain.fit()) << plain.Explain();
  EXPECT_EQ(CrossedDpNeighbours(dp, *aligned.placement), 0);
  EXPECT_EQ(CrossedDpNeighbours(dp, *plain.placement), 2) << plain.Explain();
  EXPECT_THAT(plain.placement->explanation, HasSubstr("on one rail: 0/2"))
      << plain.placement->explanation;
  EXPECT_NEAR(plain.placement->dp_ms, 2 * aligned.placement->dp_ms, 0.05 * plain.placement->dp_ms);
  CheckPlacement(dp_state, dp, *plain.placement);

  const job::JobSpec pp = MakeJob(4, 4, 1);
  aligned = GangPlacerOf(c).Place(s, pp);
  plain = (*none)->Place(s, pp);
  ASSERT_TRUE(aligned.fit() && plain.fit()) << plain.Explain();
  const cost::CostModel cost(c);
  const int stage = pp.layout.tp * pp.layout.dp;
  int crossed = 0;
  for (int r = stage; r < pp.layout.WorldSize(); ++r) {
    const RankSlot& a = plain.placement->ranks[r - stage];
    const RankSlot& b = plain.placement->ranks[r];
    if (a.node != b.node && !cost.SameRail({a.node, a.gpu}, {b.node, b.gpu})) ++crossed;
  }
  EXPECT_EQ(crossed, 4) << plain.Explain();
  EXPECT_GT(plain.placement->pp_ms, aligned.placement->pp_ms) << plain.Explain();
  CheckPlacement(s, pp, *plain.placement);
}

TEST(Gang, CrossedDpGroupsArePricedNotOnlyRankZeros) {
  // gpu001 has GPUs 0-3 free, gpu002 GPUs 0-1 and 6-7: a TP4 DP2 job puts TP index 0 and 1 on
  // one rail and TP index 2 and 3 on two (nothing else is free on gpu002). The step waits for
  // the crossed DP groups, so dp_ms is theirs, whatever rank 0's group costs.
  const topo::Cluster& c = TaperedH100();
  ClusterState s = EmptyStateOf(c);
  for (int n = 2; n < static_cast<int>(c.nodes.size()); ++n) HoldAllBut(s, n, {});
  HoldAllBut(s, 0, {0, 1, 2, 3});
  HoldAllBut(s, 1, {0, 1, 6, 7});
  job::JobSpec j = MakeJob(4, 1, 2);
  Verdict v = GangPlacerOf(c).Place(s, j);
  ASSERT_TRUE(v.fit()) << v.Explain();
  const Placement& p = *v.placement;
  EXPECT_EQ(CrossedDpNeighbours(j, p), 2) << v.Explain();
  EXPECT_THAT(p.explanation, HasSubstr("on one rail: 2/4")) << p.explanation;
  auto cost = cost::CostModel(c);
  double rank0 = 0, crossed = 0;
  for (int t = 0; t < 4; ++t) {
    std::vector<cost::GpuRef> g;
    for (int r : j.layout.DpGroup(t)) g.push_back({p.ranks[r].node, p.ranks[r].gpu});
    auto e = cost.Evaluate(cost::Collective::kAllReduce, g, static_cast<double>(j.layout.dp_bytes));
    ASSERT_TRUE(e.ok());
    if (t == 0) rank0 = e->time_ms;
    crossed = std::max(crossed, e->time_ms);
  }
  EXPECT_NEAR(crossed / rank0, 2.0, 0.1);  // NIC against NIC on two rails: the 2:1 uplink
  EXPECT_NEAR(p.dp_ms, crossed, 1e-9);
}

TEST(Gang, SingleNodeJobGoesToTheBestFittingNode) {
  const topo::Cluster& c = H100();
  ClusterState s = EmptyStateOf(c);
  // Node i has 8 - i % 8 free GPUs: nodes 4, 12, 20, 28 have exactly 4 free, node 5 has 3.
  for (int n = 0; n < static_cast<int>(c.nodes.size()); ++n) Hold(s, n, n % 8);
  job::JobSpec j = MakeJob(1, 1, 4);
  Verdict v = GangPlacerOf(c).Place(s, j);
  ASSERT_TRUE(v.fit()) << v.Explain();
  ASSERT_EQ(v.placement->parts.size(), 1u);
  EXPECT_EQ(v.placement->parts[0].node, 4);
  EXPECT_EQ(v.placement->parts[0].gpus, GpuMask::FromPositions(std::vector<int>{4, 5, 6, 7}));
  CheckPlacement(s, j, *v.placement);
}

// Verdicts on prepared states: kind and a piece of the explanation.
TEST(Gang, VerdictTable) {
  struct Case {
    std::string name;
    const topo::Cluster* cluster;
    std::function<void(const topo::Cluster&, ClusterState&)> setup;
    std::function<job::JobSpec()> job;
    VerdictKind kind;
    std::string explanation;  // substring of Verdict::Explain()
  };
  auto one_node_busy_per_leaf = [](const topo::Cluster&, ClusterState& s) {
    Hold(s, 0, 8);   // leaf0: 120 free
    Hold(s, 16, 4);  // leaf1: 124 free, but only 120 in whole TP groups... 15 nodes + 4
    Hold(s, 17, 4);
  };
  auto llama = [] { return ExampleJob("llama70b-pretrain"); };
  auto llama_required_leaf = [] {
    job::JobSpec j = ExampleJob("llama70b-pretrain");
    Constrain(j.constraints.job, ConstraintMode::kRequired, "leaf");
    return j;
  };
  auto half_nodes = [](const topo::Cluster& c, ClusterState& s) {
    for (int n = 0; n < static_cast<int>(c.nodes.size()); ++n) Hold(s, n, 4);
  };
  const Case cases[] = {
      {"preferred leaf falls back across leaves", &H100(), one_node_busy_per_leaf, llama,
       VerdictKind::kFit, "preferred leaf not met"},
      {"required leaf cannot fit", &H100(), one_node_busy_per_leaf, llama_required_leaf,
       VerdictKind::kUnschedulable,
       "needs 128 GPUs in TP groups of 8 in one leaf; largest free in a leaf is 120 (leaf0)"},
      {"tp=8 required node on half-used nodes", &H100(), half_nodes,
       [] { return ExampleJob("llama8b-sft"); }, VerdictKind::kUnschedulable,
       "needs 8 GPUs on one node (tp=8 required node); largest free on a node is 4 (gpu001)"},
      {"node summary", &H100(), half_nodes, [] { return ExampleJob("llama8b-sft"); },
       VerdictKind::kUnschedulable, "0/32 nodes usable: 32 lack free GPUs"},
      {"gpu model mismatch", &H100(), [](const topo::Cluster&, ClusterState&) {},
       [] {
         job::JobSpec j = MakeJob(1, 1, 2);
         j.constraints.gpu_model = "B200";
         return j;
       },
       VerdictKind::kUnresolvable, "32 wrong GPU model (want B200)"},
      {"more GPUs than the cluster", &H100(), [](const topo::Cluster&, ClusterState&) {},
       [] { return MakeJob(8, 1, 33); }, VerdictKind::kUnresolvable, "never fits"},
      {"tp larger than a node, required node", &H100(), [](const topo::Cluster&, ClusterState&) {},
       [] {
         job::JobSpec j = MakeJob(16, 1, 1);
         Constrain(j.constraints.tp, ConstraintMode::kRequired, "node");
         return j;
       },
       VerdictKind::kUnresolvable, "largest node has 8 GPUs"},
      {"unhealthy nodes are counted", &H100(),
       [](const topo::Cluster& c, ClusterState& s) {
         for (int n = 0; n < static_cast<int>(c.nodes.size()); ++n) {
           if (n < 2) {
             ASSERT_TRUE(s.SetNodeHealth(n, topo::Health::kUnhealthy).ok());
           } else {
             Hold(s, n, 8);
           }
         }
       },
       [] { return MakeJob(1, 1, 1); }, VerdictKind::kUnschedulable,
       "0/32 nodes usable: 30 lack free GPUs, 2 unhealthy"},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    ClusterState s = EmptyStateOf(*tc.cluster);
    tc.setup(*tc.cluster, s);
    job::JobSpec j = tc.job();
    Verdict v = GangPlacerOf(*tc.cluster).Place(s, j);
    EXPECT_EQ(VerdictKindName(v.kind), std::string(VerdictKindName(tc.kind))) << v.Explain();
    EXPECT_THAT(v.Explain(), HasSubstr(tc.explanation)) << v.Explain();
    EXPECT_EQ(v.placement.has_value(), tc.kind == VerdictKind::kFit);
    if (v.fit()) {
      std::set<int> leaves;
      for (const NodeGpus& g : v.placement->parts) {
        leaves.insert(LevelDomain(*tc.cluster, g.node, "leaf"));
      }
      EXPECT_EQ(leaves.size(), 2u);  // the only fitting case here crosses leaves
      CheckPlacement(s, j, *v.placement);
    }
  }
}

TEST(Gang, ExampleJobsInOnePassAreAllOrNothing) {
  const topo::Cluster& c = H100();
  ClusterState s = EmptyStateOf(c);
  int held = 0;
  int placed = 0;
  for (const job::JobSpec& j : ExampleJobs()) {
    SCOPED_TRACE(j.name);
    Verdict v = GangPlacerOf(c).Place(s, j);
    if (!v.fit()) {
      EXPECT_FALSE(v.reasons.empty());
      continue;
    }
    ++placed;
    held += j.layout.WorldSize();
    CheckPlacement(s, j, *v.placement, j.constraints.tp.mode == ConstraintMode::kRequired);
    EXPECT_EQ(c.TotalGpus() - s.ClusterCapacity().free_gpus, held);
  }
  EXPECT_GE(placed, 6);
  // The pass leaves 256 - 128 - 8 - 1 - 2 - 4 - 64 - 32 = 17 GPUs: another 128-GPU job pends,
  // and nothing changes.
  ClusterState before = s;
  Verdict v = GangPlacerOf(c).Place(s, ExampleJob("llama70b-pretrain"));
  EXPECT_EQ(v.kind, VerdictKind::kUnschedulable) << v.Explain();
  EXPECT_TRUE(s.CheckInvariants().ok());
  EXPECT_EQ(s.ClusterCapacity(), before.ClusterCapacity());
}

TEST(Gang, SmallJobsPackNodesAndRequiredNodeKeepsOneNode) {
  const topo::Cluster& c = H100();
  ClusterState s = EmptyStateOf(c);
  job::JobSpec bert = ExampleJob("bert-large-dp2");
  Verdict v = GangPlacerOf(c).Place(s, bert);
  ASSERT_TRUE(v.fit()) << v.Explain();
  EXPECT_EQ(v.placement->parts.size(), 1u);
  CheckPlacement(s, bert, *v.placement);
  // The next small job goes to the partly used node (best fit), not a fresh one.
  job::JobSpec vit = ExampleJob("vit-h-dp4");
  Verdict w = GangPlacerOf(c).Place(s, vit);
  ASSERT_TRUE(w.fit()) << w.Explain();
  EXPECT_EQ(w.placement->parts[0].node, v.placement->parts[0].node);
  CheckPlacement(s, vit, *w.placement);
}

TEST(Gang, Gb200Tp8RequiredNvlinkDomainUsesTwoTraysOfOneDomain) {
  const topo::Cluster& c = Gb200();
  ClusterState s = EmptyStateOf(c);
  job::JobSpec j = MakeJob(8, 1, 1);
  Constrain(j.constraints.tp, ConstraintMode::kRequired, job::kLevelNvlinkDomain);
  Verdict v = GangPlacerOf(c).Place(s, j);
  ASSERT_TRUE(v.fit()) << v.Explain();
  const Placement& p = *v.placement;
  ASSERT_EQ(p.parts.size(), 2u);
  int nvd = c.nodes[p.parts[0].node].nvlink_domain;
  EXPECT_GE(nvd, 0);
  for (const NodeGpus& g : p.parts) {
    EXPECT_EQ(g.gpus.count(), 4);
    EXPECT_EQ(c.nodes[g.node].nvlink_domain, nvd);
  }
  CheckPlacement(s, j, p, /*tp_on_node=*/false);

  // Two TP=8 groups with DP: every group stays inside one NVLink domain.
  job::JobSpec big = MakeJob(8, 1, 10);  // 80 GPUs: more than one 72-GPU domain holds
  Constrain(big.constraints.tp, ConstraintMode::kRequired, job::kLevelNvlinkDomain);
  Verdict w = GangPlacerOf(c).Place(s, big);
  ASSERT_TRUE(w.fit()) << w.Explain();
  for (int r = 0; r < 80; r += 8) {
    int d = c.nodes[w.placement->ranks[r].node].nvlink_domain;
    for (int q : big.layout.TpGroup(r)) {
      EXPECT_EQ(c.nodes[w.placement->ranks[q].node].nvlink_domain, d) << q;
    }
  }
  CheckPlacement(s, big, *w.placement, /*tp_on_node=*/false);
}

TEST(Gang, BestPossibleIsTheEmptyClusterTime) {
  const topo::Cluster& c = H100();
  ClusterState s = EmptyStateOf(c);
  // Leave 4 free GPUs on each node: an 8-GPU TP=1 job must span two nodes now.
  for (int n = 0; n < static_cast<int>(c.nodes.size()); ++n) Hold(s, n, 4);
  job::JobSpec j = MakeJob(1, 1, 8);
  Verdict v = GangPlacerOf(c).Place(s, j);
  ASSERT_TRUE(v.fit()) << v.Explain();
  EXPECT_EQ(v.placement->parts.size(), 2u);
  EXPECT_GT(v.placement->predicted_ms, v.placement->best_possible_ms);
  CheckPlacement(s, j, *v.placement);
}

// Contention (score "contention", state/link_model.h), on the 2:1 three-tier evaluation fabric:
// a running 48-GPU job crosses the uplinks of leaf0 and leaf1 with 3 nodes each; a 32-GPU job
// that must span two leaves fits equally well (same spare GPUs, same predicted time) under
// spine0 (2 free nodes in each of leaf0, leaf1) and spine1 (2 in each of leaf2, leaf3). Best
// fit takes spine0, where it would over-ask those two uplinks (5 node-widths on 4); with the
// running job's link loads toposched takes spine1 and names what spine0 would have cost.
TEST(GangContention, QuietLinksWinOverBestFitWhenTheRunningJobsLoadsArePassed) {
  const topo::Cluster& c = testing::LoadExampleCluster("eval-h100-3tier-2to1-512.yaml");
  const GangPlacer& placer = GangPlacerOf(c);
  ClusterState s = EmptyStateOf(c);
  const std::set<std::string> bg_nodes = {"gpu001", "gpu002", "gpu003",
                                          "gpu009", "gpu010", "gpu011"};
  const std::set<std::string> open = {"gpu004", "gpu005", "gpu012", "gpu013",
                                      "gpu017", "gpu018", "gpu025", "gpu026"};
  std::vector<NodeGpus> bg;
  for (size_t n = 0; n < c.nodes.size(); ++n) {
    const int id = static_cast<int>(n);
    if (bg_nodes.count(c.nodes[n].name)) {
      bg.push_back(NodeGpus{id, GpuMask::FirstN(8)});
    } else if (!open.count(c.nodes[n].name)) {
      Hold(s, id, 8);
    }
  }
  ASSERT_TRUE(s.Allocate(testing::Alloc(1), bg).ok());
  Placement bg_p;
  bg_p.parts = bg;
  bg_p.dp_ms = 40.0;  // its predicted DP all-reduce across the two leaves
  LinkModel links(c);
  AddToLinks(links, bg_p);

  const job::JobSpec x = MakeJob(1, 1, 32);
  auto spine_of = [&](const Verdict& v) {
    std::set<std::string> spines;
    for (const NodeGpus& g : v.placement->parts) {
      spines.insert(c.domains[LevelDomain(c, g.node, "spine")].name);
    }
    return spines;
  };
  const Verdict blind = placer.Place(s, x);
  ASSERT_TRUE(blind.fit()) << blind.Explain();
  EXPECT_EQ(spine_of(blind), std::set<std::string>{"spine0"});
  EXPECT_THAT(blind.placement->explanation, Not(HasSubstr("contention")));

  const Verdict seen = placer.Place(s, x, &links);
  ASSERT_TRUE(seen.fit()) << seen.Explain();
  EXPECT_EQ(spine_of(seen), std::set<std::string>{"spine1"}) << seen.Explain();
  EXPECT_DOUBLE_EQ(seen.placement->predicted_ms, blind.placement->predicted_ms);
  EXPECT_THAT(seen.placement->explanation, HasSubstr("on quieter links than spine0"))
      << seen.Explain();
  // On spine0, x's own slowdown and bg's: both links at 5/4 of their capacity.
  const LinkModel::Contention there =
      links.ContentionMs(links.UsageOf(blind.placement->parts), NetworkMs(*blind.placement));
  EXPECT_NEAR(there.others_ms, 2 * 40.0 * 0.25, 1e-9);
  EXPECT_NEAR(there.own_ms, NetworkMs(*blind.placement) * 0.25, 1e-9);
  // A policy that does not weigh contention ignores the loads.
  GangPlacerOptions kueue = PolicyOptions("kueue-tas").value();
  auto kp = GangPlacer::Create(c, kueue);
  ASSERT_TRUE(kp.ok());
  const Verdict k = (*kp)->Place(s, x, &links);
  ASSERT_TRUE(k.fit());
  EXPECT_EQ(spine_of(k), std::set<std::string>{"spine0"});

  // When both hide their DP all-reduce behind a backward pass longer than it takes at 5/4 of the
  // links' capacity (hidden up to factor 1.5), spine0 costs nobody a ms: best fit, no note.
  LinkModel hidden(c);
  AddToLinks(hidden, bg_p, /*dp_hide_factor=*/1.5);
  const Verdict h = placer.Place(s, x, &hidden, /*dp_hide_factor=*/1.5);
  ASSERT_TRUE(h.fit()) << h.Explain();
  EXPECT_EQ(spine_of(h), std::set<std::string>{"spine0"}) << h.Explain();
  EXPECT_THAT(h.placement->explanation, Not(HasSubstr("contention"))) << h.Explain();
  // Hiding less than its all-reduce takes (5 of 40 ms), bg's slowdown on spine0 is exposed as
  // before.
  LinkModel short_hide(c);
  AddToLinks(short_hide, bg_p, /*dp_hide_factor=*/0.125);
  const Verdict e = placer.Place(s, x, &short_hide);
  ASSERT_TRUE(e.fit()) << e.Explain();
  EXPECT_EQ(spine_of(e), std::set<std::string>{"spine1"}) << e.Explain();
}

// The score's group times through the placer's cache: a TP 2 × DP 4 × PP 2 job spread over
// random GPUs of 2-6 nodes of the evaluation cluster (512 GPUs, rails) scores the same, term by
// term, with the cache empty, with it holding the groups already, and without it; twice the
// gradient bytes on the same GPUs, and the same GPUs in reversed rank order, are priced anew; a
// cache whose keys reach their bound is emptied before it takes more.
TEST(GangScore, CachedGroupTimesGiveTheSameScoreAndStayBounded) {
  const topo::Cluster& c = testing::LoadExampleCluster("eval-h100-3tier-2to1-512.yaml");
  const cost::CostModel cost(c);
  job::Layout l;
  l.tp = 2;
  l.dp = 4;
  l.pp = 2;
  l.tp_bytes = int64_t{1} << 28;
  l.dp_bytes = int64_t{1} << 30;
  l.pp_bytes = int64_t{1} << 26;
  detail::BaselineCache cache;
  std::mt19937 rng(14);
  int orders_differ = 0;
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<std::pair<int, int>> gpus;  // node, GPU
    const int nodes = 2 + static_cast<int>(rng() % 5);
    const int first = static_cast<int>(rng() % (c.nodes.size() - 3 * nodes));
    for (int n = 0; n < nodes; ++n) {
      for (int g = 0; g < 8; ++g) gpus.emplace_back(first + n * (1 + trial % 3), g);
    }
    std::shuffle(gpus.begin(), gpus.end(), rng);
    Placement plain;
    for (int r = 0; r < l.WorldSize(); ++r) {
      plain.ranks.push_back(RankSlot{r, gpus[r].first, gpus[r].second, -1});
    }
    Placement miss = plain, hit = plain;
    const Status plain_ok = ScorePlacement(cost, l, plain);
    ASSERT_TRUE(plain_ok.ok()) << plain_ok.ToString();
    ASSERT_TRUE(ScorePlacement(cost, l, miss, cache.group_times).ok());
    const size_t held = cache.group_times.times.size();
    ASSERT_TRUE(ScorePlacement(cost, l, hit, cache.group_times).ok());
    EXPECT_EQ(cache.group_times.times.size(), held) << "the second score finds every group";
    for (const Placement* p : {&miss, &hit}) {
      EXPECT_EQ(p->dp_ms, plain.dp_ms);
      EXPECT_EQ(p->tp_ms, plain.tp_ms);
      EXPECT_EQ(p->pp_ms, plain.pp_ms);
      EXPECT_EQ(p->predicted_ms, plain.predicted_ms);
    }
    EXPECT_GT(plain.dp_ms, 0);
    // The same GPUs with twice the gradient bytes: the cache holds these groups at the old size.
    job::Layout heavier = l;
    heavier.dp_bytes *= 2;
    Placement plain2 = plain, cached2 = plain;
    ASSERT_TRUE(ScorePlacement(cost, heavier, plain2).ok());
    ASSERT_TRUE(ScorePlacement(cost, heavier, cached2, cache.group_times).ok());
    EXPECT_EQ(cached2.dp_ms, plain2.dp_ms);
    EXPECT_GT(plain2.dp_ms, plain.dp_ms);
    // The same GPUs in another rank order: every group holds the GPUs of a cached group, in
    // another order (the time depends on it: rings follow it across nodes).
    Placement turned = plain, turned_plain;
    std::reverse(turned.ranks.begin(), turned.ranks.end());
    for (int r = 0; r < l.WorldSize(); ++r) turned.ranks[r].rank = r;
    turned_plain = turned;
    ASSERT_TRUE(ScorePlacement(cost, l, turned_plain).ok());
    ASSERT_TRUE(ScorePlacement(cost, l, turned, cache.group_times).ok());
    EXPECT_EQ(turned.predicted_ms, turned_plain.predicted_ms);
    orders_differ += turned_plain.predicted_ms != plain.predicted_ms;
  }
  EXPECT_GT(orders_differ, 0) << "some reversed order prices differently";
  EXPECT_GT(cache.group_times.times.size(), 50u);
  cache.group_times.key_bytes = GroupTimes::kMaxKeyBytes - 1;
  Placement p;
  for (int r = 0; r < l.WorldSize(); ++r) p.ranks.push_back(RankSlot{r, r / 8, r % 8, -1});
  ASSERT_TRUE(ScorePlacement(cost, l, p, cache.group_times).ok());
  EXPECT_LT(cache.group_times.times.size(), 10u) << "emptied at the bound, then the new groups";
  EXPECT_GT(cache.group_times.times.size(), 0u);
  size_t bytes = 0;
  for (const auto& [key, ms] : cache.group_times.times) bytes += key.size();
  EXPECT_EQ(cache.group_times.key_bytes, bytes);
}

}  // namespace
}  // namespace toposched::sched
