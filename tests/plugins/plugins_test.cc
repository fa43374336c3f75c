// The domain, node, GPU, refine, share and score plugins as objects, each asked directly: what
// every rule of a choice point answers on the same input, one fact per line, and that the
// registry resolves a name to the object of its rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "placer/gang.h"
#include "plugins/domain_plugins.h"
#include "plugins/gpu_plugins.h"
#include "plugins/node_plugins.h"
#include "plugins/rail_plugins.h"
#include "plugins/refine_plugins.h"
#include "plugins/registry.h"
#include "plugins/score_plugins.h"
#include "plugins/share_plugins.h"
#include "state/link_model.h"
#include "testing/clusters.h"
#include "testing/placers.h"

namespace toposched::sched {
namespace {

using toposched::testing::H100Cluster;

const NodePlugin& Nodes(NodeRule r) { return NodePluginFor(r); }

// Bins of 3, 8, 5 and 8 GPUs, 10 wanted: best fit takes a largest bin whole, then the smallest
// that holds the rest; least allocated fills the largest first; in order fills bins in turn.
TEST(NodePlugins, EachRuleTakesBinsItsOwnWay) {
  const std::vector<int> caps = {3, 8, 5, 8};
  EXPECT_EQ(Nodes(NodeRule::kBestFit).Take(caps, 10), (std::vector<int>{2, 8, 0, 0}));
  EXPECT_EQ(Nodes(NodeRule::kLeastAllocated).Take(caps, 10), (std::vector<int>{0, 8, 0, 2}));
  EXPECT_EQ(Nodes(NodeRule::kInOrder).Take(caps, 10), (std::vector<int>{3, 7, 0, 0}));
  for (const NodePlugin* p : NodePlugins()) {
    EXPECT_TRUE(p->Take(caps, 25).empty()) << p->name() << ": 24 GPUs cannot hold 25";
    EXPECT_EQ(p->Take(caps, 0), (std::vector<int>{0, 0, 0, 0})) << p->name();
  }
}

// Free GPUs per node (-1: the job may not go there), a 4-GPU job.
TEST(NodePlugins, OneNodeByRule) {
  const std::vector<int> free = {-1, 4, 8, 4, 2};
  EXPECT_EQ(Nodes(NodeRule::kLeastAllocated).OneNode(free, 4), 2);
  EXPECT_EQ(Nodes(NodeRule::kInOrder).OneNode(free, 4), 1);
  EXPECT_EQ(Nodes(NodeRule::kBestFit).OneNode(free, 4), 1);
  EXPECT_TRUE(Nodes(NodeRule::kBestFit).ScoresOneNode());
  EXPECT_FALSE(Nodes(NodeRule::kLeastAllocated).ScoresOneNode());
  EXPECT_FALSE(Nodes(NodeRule::kInOrder).ScoresOneNode());
  for (const NodePlugin* p : NodePlugins()) {
    EXPECT_EQ(p->OneNode(free, 9), -1) << p->name() << ": no node has 9 free";
    EXPECT_EQ(p->scatters(), p->rule() == NodeRule::kSpread || p->rule() == NodeRule::kRandom)
        << p->name();
  }
}

TEST(GpuPlugins, FirstFreeAndPairScoreChooseFromTheFreeGpus) {
  const topo::NodeTopology& t = H100Cluster().topology(0);
  const std::vector<int> free = {1, 3, 5, 6};
  const GpuPlugin& first = GpuPluginFor(GpuRule::kFirstFree);
  EXPECT_EQ(first.Choose(t, free, 2), (std::vector<int>{1, 3}));
  EXPECT_TRUE(first.Choose(t, free, 5).empty());
  const GpuPlugin& pair = GpuPluginFor(GpuRule::kPairScore);
  EXPECT_TRUE(pair.costly());
  EXPECT_EQ(pair.Choose(t, free, 4), free);
  const std::vector<int> two = pair.Choose(t, free, 2);
  ASSERT_EQ(two.size(), 2u);
  for (int g : two) EXPECT_NE(std::find(free.begin(), free.end(), g), free.end()) << g;
  EXPECT_TRUE(GpuPluginFor(GpuRule::kCostModel).priced());
  EXPECT_FALSE(pair.priced());
  EXPECT_FALSE(first.priced());
}

// Shared GPUs: node 0 GPU 1 (300 milli of room), node 1 GPU 0 (600) and GPU 2 (250); free GPUs
// per node 2, 0, 5 (lowest free 0, none, 1). A 250-milli job.
ShareView Shares() {
  ShareView v;
  v.shared = {{0, 1, 300}, {1, 0, 600}, {1, 2, 250}};
  v.free = {2, 0, 5};
  v.lowest_free = {0, -1, 1};
  v.shared_total = 3;
  return v;
}

TEST(SharePlugins, EachRuleChoosesItsOwnShare) {
  const topo::Cluster& c = H100Cluster();
  ASSERT_GE(c.nodes.size(), 3u);
  const ShareView v = Shares();
  // The least room left after the job, cluster-wide: node 1's GPU 2, filled to 1000.
  const ShareChoice gpu = SharePluginFor(ShareRule::kGpuBestFit).Choose(v, 250, c);
  EXPECT_EQ(gpu.kind, ShareChoice::Kind::kShared);
  EXPECT_EQ(gpu.index, 2);
  EXPECT_EQ(gpu.why, "best fit among 3 shared GPUs with room");
  // The node with the least free milli (node 1: 850), on it the GPU with the least room.
  const ShareChoice node = SharePluginFor(ShareRule::kNodeBestFit).Choose(v, 250, c);
  EXPECT_EQ(node.kind, ShareChoice::Kind::kShared);
  EXPECT_EQ(node.index, 2);
  EXPECT_EQ(node.why,
            "node-best-fit node " + c.nodes[1].name + " (850 milli free, 3 nodes could take it)");
  // The node with the most free milli (node 2: 5,000): a free GPU opens.
  const ShareChoice spread = SharePluginFor(ShareRule::kLeastAllocated).Choose(v, 250, c);
  EXPECT_EQ(spread.kind, ShareChoice::Kind::kOpenFree);
  EXPECT_EQ(spread.node, 2);
  // The first node that can take it (node 0), its lowest-numbered GPU that can: free GPU 0.
  const ShareChoice first = SharePluginFor(ShareRule::kInOrder).Choose(v, 250, c);
  EXPECT_EQ(first.kind, ShareChoice::Kind::kOpenFree);
  EXPECT_EQ(first.node, 0);
  EXPECT_EQ(first.why, "in-order node " + c.nodes[0].name +
                           " (2300 milli free, 1 node could "
                           "take it)");
}

TEST(SharePlugins, NoShareWithRoomIsPlacedAsAOneGpuJobAndSaysWhy) {
  const topo::Cluster& c = H100Cluster();
  ShareView v = Shares();
  const ShareChoice gpu = SharePluginFor(ShareRule::kGpuBestFit).Choose(v, 700, c);
  EXPECT_EQ(gpu.kind, ShareChoice::Kind::kAsWhole);
  EXPECT_EQ(gpu.why, "no shared GPU has room (3 shared, most room 600 milli)");
  v.free = {0, 0, 0};
  v.lowest_free = {-1, -1, -1};
  for (const SharePlugin* p : SharePlugins()) {
    if (p->rule() == ShareRule::kGpuBestFit) continue;
    const ShareChoice none = p->Choose(v, 700, c);
    EXPECT_EQ(none.kind, ShareChoice::Kind::kAsWhole) << p->name();
    EXPECT_EQ(none.why, "no shared GPU has room (3 shared, most room 600 milli)") << p->name();
  }
  v.shared.clear();
  v.shared_total = 0;
  EXPECT_EQ(SharePluginFor(ShareRule::kGpuBestFit).Choose(v, 700, c).why, "no GPU is shared yet");
}

TEST(ScorePlugins, EachTermPricesItsOwnPart) {
  Placement one;
  one.parts = {NodeGpus{0, {}}};
  one.predicted_ms = 2.5;
  const ScoreInput in{2.5, 3, &one, nullptr, 0};
  EXPECT_EQ(ScorePluginFor(ScoreTerm::kCommTime).Ms(in), 2.5);
  EXPECT_EQ(ScorePluginFor(ScoreTerm::kFragmentation).Ms(in), 3);
  // What the single-node search's bound needs: no term falls as the predicted time grows.
  for (const ScorePlugin* p : ScorePlugins()) {
    for (int frag : {0, 3}) {
      EXPECT_LE(p->Ms(ScoreInput{0, frag}), p->Ms(ScoreInput{7.5, frag})) << p->name();
    }
  }
}

// On the 2:1 three-tier evaluation fabric a running job of 6 nodes (3 in leaf0, 3 in leaf1, 40 ms
// of DP all-reduce across them) loads both leaves' uplinks. A 4-node candidate with 2 nodes in
// each of those leaves over-asks them (5 node-widths on 4): its own 10 ms x 0.25 and the running
// job's 40 ms x 0.25 on each of the two links. On one node, or before its placement exists, it
// adds nothing.
TEST(ScorePlugins, ContentionPricesSharedLinksOnlyAcrossNodes) {
  const topo::Cluster& c = testing::LoadExampleCluster("eval-h100-3tier-2to1-512.yaml");
  auto node = [&](const std::string& name) {
    for (size_t n = 0; n < c.nodes.size(); ++n) {
      if (c.nodes[n].name == name) return static_cast<int>(n);
    }
    ADD_FAILURE() << name;
    return 0;
  };
  Placement running;
  for (const char* n : {"gpu001", "gpu002", "gpu003", "gpu009", "gpu010", "gpu011"}) {
    running.parts.push_back(NodeGpus{node(n), GpuMask::FirstN(8)});
  }
  running.dp_ms = 40.0;
  LinkModel links(c);
  AddToLinks(links, running);
  Placement x;
  for (const char* n : {"gpu004", "gpu005", "gpu012", "gpu013"}) {
    x.parts.push_back(NodeGpus{node(n), GpuMask::FirstN(8)});
  }
  x.dp_ms = 10.0;
  x.predicted_ms = 10.0;
  const ScorePlugin& contention = ScorePluginFor(ScoreTerm::kContention);
  EXPECT_NEAR(contention.Ms(ScoreInput{10.0, 0, &x, &links, 0}), 10.0 * 0.25 + 2 * 40.0 * 0.25,
              1e-9);
  EXPECT_EQ(contention.Ms(ScoreInput{10.0, 0, &x, nullptr, 0}), 0) << "without link loads";
  EXPECT_EQ(contention.Ms(ScoreInput{10.0, 0, nullptr, &links, 0}), 0) << "before a placement";
  Placement alone;
  alone.parts = {NodeGpus{node("gpu004"), GpuMask::FirstN(8)}};
  alone.dp_ms = 10.0;
  EXPECT_EQ(contention.Ms(ScoreInput{10.0, 0, &alone, &links, 0}), 0) << "on one node";
}

// Whatever the order a policy lists its scores in, they are summed in ScoreTerm order, a term
// listed twice once with the summed weight, a term weighted 0 left out.
TEST(ScorePlugins, APolicysScoresResolveInTermOrder) {
  PlacementPlugins p;
  p.scores = {{"contention", 1}, {"fragmentation", 0}, {"comm-time", 2}, {"comm-time", 0.5}};
  auto t = ResolvePlugins(p);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->scores.size(), 2u);
  EXPECT_EQ(t->scores[0].plugin, &ScorePluginFor(ScoreTerm::kCommTime));
  EXPECT_EQ(t->scores[0].weight, 2.5);
  EXPECT_EQ(t->scores[1].plugin, &ScorePluginFor(ScoreTerm::kContention));
  EXPECT_EQ(t->scores[1].weight, 1);
  EXPECT_EQ(t->weight(ScoreTerm::kFragmentation), 0);
}

// The groups of candidate domains, as "level:count" per group, lowest first.
std::vector<std::string> GroupsOf(const DomainPlugin& plugin, const topo::Cluster& c,
                                  const job::LevelConstraint& jc) {
  std::vector<std::vector<int>> network(c.domains.size()), nvlink(c.nvlink_domains.size());
  std::vector<int> all;
  for (size_t n = 0; n < c.nodes.size(); ++n) {
    all.push_back(static_cast<int>(n));
    if (c.nodes[n].nvlink_domain >= 0) nvlink[c.nodes[n].nvlink_domain].push_back(n);
  }
  std::vector<std::string> out;
  for (const DomainGroup& g : plugin.Groups(c, DomainNodes{network, nvlink, all}, jc)) {
    out.push_back(g.level + ":" + std::to_string(g.cands.size()));
    EXPECT_EQ(g.cands.size(), g.domain_ids.size()) << g.level;
  }
  return out;
}

job::LevelConstraint Required(const std::string& level) {
  job::LevelConstraint jc;
  jc.mode = job::ConstraintMode::kRequired;
  jc.level = level;
  return jc;
}

// The evaluation fabric: one zone over 4 spines over 8 leaves. "lowest-level" tries every leaf,
// then every spine, then the zone (one root: no "cluster" group); "cluster" tries the cluster
// whole. A required level bounds both: from the lowest level up to it, or that level alone.
TEST(DomainPlugins, EachRuleGivesItsOwnCandidateLevels) {
  const topo::Cluster& c = testing::LoadExampleCluster("eval-h100-3tier-2to1-512.yaml");
  const DomainPlugin& lowest = DomainPluginFor(DomainRule::kLowestLevel);
  const DomainPlugin& cluster = DomainPluginFor(DomainRule::kCluster);
  using V = std::vector<std::string>;
  EXPECT_EQ(GroupsOf(lowest, c, {}), (V{"leaf:8", "spine:4", "zone:1"}));
  EXPECT_EQ(GroupsOf(cluster, c, {}), (V{"cluster:1"}));
  EXPECT_EQ(GroupsOf(lowest, c, Required("spine")), (V{"leaf:8", "spine:4"}));
  EXPECT_EQ(GroupsOf(cluster, c, Required("spine")), (V{"spine:4"}));
  EXPECT_EQ(GroupsOf(lowest, c, Required("leaf")), (V{"leaf:8"}));
  for (const DomainPlugin* p : DomainPlugins()) {
    EXPECT_EQ(GroupsOf(*p, c, Required(job::kLevelNode)), V{}) << p->name() << ": one node only";
  }
}

// GB200 NVL72: a job required in one NVLink domain is tried in the NVLink domains, whatever the
// rule; the cluster candidate holds every node.
TEST(DomainPlugins, ARequiredNvlinkDomainIsTheSameUnderEveryRule) {
  const topo::Cluster& c = testing::Gb200Cluster();
  ASSERT_FALSE(c.nvlink_domains.empty());
  const std::string nvd = "nvlink-domain:" + std::to_string(c.nvlink_domains.size());
  for (const DomainPlugin* p : DomainPlugins()) {
    EXPECT_EQ(GroupsOf(*p, c, Required(job::kLevelNvlinkDomain)), std::vector<std::string>{nvd})
        << p->name();
  }
  std::vector<std::vector<int>> network(c.domains.size()), nvlink(c.nvlink_domains.size());
  std::vector<int> all(c.nodes.size());
  for (size_t n = 0; n < all.size(); ++n) all[n] = static_cast<int>(n);
  auto groups = DomainPluginFor(DomainRule::kCluster).Groups(c, {network, nvlink, all}, {});
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].cands[0].nodes->size(), c.nodes.size());
  EXPECT_EQ(groups[0].domain_ids[0], -1);
}

// A refine plugin's view of a search on the example H100 cluster: per node its free GPUs (the
// lowest-numbered), a plan built rank by rank node after node and priced by the real cost model
// (ScorePlacement), scored as the default policy scores it without link loads: predicted ms
// plus 0.05 ms per GPU left free on a used node.
class CostModelHandle : public RefineHandle {
 public:
  // unit: the GPUs a move carries (a TP group where each sits on one node, else 1); a node's
  // usable GPUs are its free ones rounded down to whole units, as the search counts them.
  CostModelHandle(const GangPlacer& placer, std::vector<int> free, job::Layout layout, int unit = 1)
      : placer_(placer), free_(std::move(free)), layout_(layout), unit_(unit) {
    const GangPlacerOptions& o = placer.options();
    limits_ = {o.max_refine_evaluations, o.max_refine_nodes, o.ranks_in_node_blocks};
    for (int& f : free_) {
      masks_.push_back(GpuMask::FirstN(f));
      f = f / unit * unit;
    }
  }
  const topo::Cluster& cluster() const override { return placer_.cluster(); }
  const cost::CostModel& cost() const override { return placer_.cost_model(); }
  const job::Layout& layout() const override { return layout_; }
  const SearchLimits& limits() const override { return limits_; }
  int unit() const override { return unit_; }
  int FreeOn(int node) const override { return free_[node]; }
  std::span<const int> Caps() const override { return free_; }
  int ProfileOf(int) const override { return 0; }
  const GpuMask& FreeMaskOf(int node) const override { return masks_[node]; }
  int GpusOn(int node) const override {
    return static_cast<int>(placer_.cluster().topology(node).gpus.size());
  }
  bool TpInNvlinkDomains() const override { return false; }
  bool Settled(const GangPlan&) const override { return false; }
  std::optional<Placement> Build(const GangPlan& plan) const override {
    ++builds;
    Placement p;
    for (const auto& [node, k] : plan.chunks) {
      for (int g = 0; g < k; ++g) {
        p.ranks.push_back(RankSlot{static_cast<int>(p.ranks.size()), node, g, g});
      }
      p.parts.push_back(NodeGpus{node, GpuMask::FirstN(k)});
    }
    std::sort(p.parts.begin(), p.parts.end(),
              [](const NodeGpus& a, const NodeGpus& b) { return a.node < b.node; });
    if (!ScorePlacement(cost(), layout_, p).ok()) return std::nullopt;
    return p;
  }
  double ScoreOf(const Placement& p, int frag) const override {
    return p.predicted_ms + 0.05 * frag;
  }
  bool RailsAligned() const override { return placer_.cluster().RailsPriced(); }
  mutable int builds = 0;

 private:
  const GangPlacer& placer_;
  SearchLimits limits_;
  std::vector<int> free_;
  std::vector<GpuMask> masks_;
  job::Layout layout_;
  int unit_;
};

// An 8-GPU data-parallel job (2 GB gradients) started as 4 + 4 GPUs on gpu002 and gpu004 (8
// free each): local search spreads gpu002's share onto gpu004, one NVLink ring instead of a ring
// over two nodes' NICs (7.9 ms against 11.7 ms), and no GPU left free there; "none" keeps the
// start. Moving only among gpu001 (3 free), gpu003 (5 free) and gpu005 (2 free), from 3 + 5 GPUs,
// it stays there.
TEST(RefinePlugins, LocalSearchMovesTheJobWhereTheModelPricesItFasterAndNoneKeepsIt) {
  const GangPlacer& placer = testing::ExamplePlacer("h100-2rack.yaml");
  job::Layout layout;
  layout.dp = 8;
  layout.tp_bytes = 0;
  layout.pp_bytes = 0;
  layout.ep_bytes = 0;
  layout.dp_bytes = int64_t{2} << 30;
  const CostModelHandle h(placer, {3, 8, 5, 8, 2, 8}, layout);
  auto start = [&](std::vector<std::pair<int, int>> chunks, GangPlan& plan, Placement& p,
                   double& score) {
    plan = GangPlan{};
    for (const auto& [node, k] : chunks) h.AddChunk(plan, node, k);
    p = *h.Build(plan);
    p.domain = "leaf0";
    score = h.ScoreOf(p, plan.frag);
  };
  GangPlan plan;
  Placement p;
  double score = 0;
  start({{1, 4}, {3, 4}}, plan, p, score);
  const double start_score = score;
  EXPECT_EQ(plan.frag, 8);

  const RefinePlugin& none = RefinePluginFor(RefineRule::kNone);
  EXPECT_FALSE(none.refines());
  none.Refine(h, {0, 1, 2, 3, 4, 5}, 6, plan, p, score);
  EXPECT_EQ(plan.chunks, (std::vector<std::pair<int, int>>{{1, 4}, {3, 4}}));
  EXPECT_EQ(score, start_score);

  const RefinePlugin& local = RefinePluginFor(RefineRule::kLocalSearch);
  EXPECT_TRUE(local.refines());
  h.builds = 0;
  local.Refine(h, {0, 1, 2, 3, 4, 5}, 6, plan, p, score);
  EXPECT_EQ(plan.chunks, (std::vector<std::pair<int, int>>{{3, 8}}));
  EXPECT_EQ(plan.frag, 0);
  EXPECT_EQ(p.parts.size(), 1u);
  EXPECT_EQ(p.domain, "leaf0") << "the candidate domain's name stays";
  GangPlan whole;
  h.AddChunk(whole, 3, 8);
  EXPECT_EQ(p.predicted_ms, h.Build(whole)->predicted_ms);
  EXPECT_EQ(score, p.predicted_ms) << "no GPU left free";
  EXPECT_LT(score, start_score * 0.7) << "one NVLink ring against a ring over two nodes' NICs";
  EXPECT_GT(h.builds, 0);
  EXPECT_LE(h.builds, 2 * placer.options().max_refine_evaluations) << "within its budget";

  start({{0, 3}, {2, 5}}, plan, p, score);
  const double region_start = score;
  local.Refine(h, {0, 2, 4}, 3, plan, p, score);
  for (const auto& [node, k] : plan.chunks) {
    EXPECT_TRUE(node == 0 || node == 2 || node == 4) << "gpu00" << node + 1 << " is outside";
  }
  EXPECT_LE(score, region_start);
}

// Local search's starting plans for an 8-GPU DP job on the example H100 cluster, the candidate
// domain gpu001-gpu003 (3, 8 and 5 GPUs free) and the region every node (8, 2 and 8 more): the
// even spreads over the two and three roomiest nodes of the domain, and plans anchored on each
// roomiest node of a distinct free count — gpu002 whole among them. Every plan places the whole
// job on nodes of the region within their free GPUs. "none" builds no start.
TEST(RefinePlugins, LocalSearchStartsSpreadEvenlyAndAnchorOnTheRoomiestNodes) {
  const GangPlacer& placer = testing::ExamplePlacer("h100-2rack.yaml");
  job::Layout layout;
  layout.dp = 8;
  const CostModelHandle h(placer, {3, 8, 5, 8, 2, 8}, layout);
  const std::vector<int> domain = {0, 1, 2};
  const std::vector<int> region = {0, 1, 2, 3, 4, 5};
  EXPECT_TRUE(RefinePluginFor(RefineRule::kNone).StartPlans(h, domain, region).empty());
  const std::vector<GangPlan> starts =
      RefinePluginFor(RefineRule::kLocalSearch).StartPlans(h, domain, region);
  std::vector<std::vector<std::pair<int, int>>> chunks;
  for (const GangPlan& plan : starts) {
    int gpus = 0;
    for (const auto& [node, k] : plan.chunks) {
      EXPECT_LE(k, h.CapOn(node)) << "gpu00" << node + 1;
      gpus += k;
    }
    EXPECT_EQ(gpus, 8);
    chunks.push_back(plan.chunks);
  }
  using C = std::vector<std::pair<int, int>>;
  // Even spreads (two, then three nodes); anchors on gpu002 (8), gpu003 (5, the rest best fit
  // after it), gpu001 (3) and, from beyond the domain, gpu005 (2); the stage packer's thickest
  // shares, gpu002 whole again (the search prices a repeated plan once).
  EXPECT_EQ(chunks, (std::vector<C>{{{1, 4}, {2, 4}},
                                    {{0, 2}, {1, 3}, {2, 3}},
                                    {{1, 8}},
                                    {{2, 5}, {3, 3}},
                                    {{0, 3}, {2, 5}},
                                    {{4, 2}, {5, 6}},
                                    {{1, 8}}}));
  ASSERT_EQ(starts.size(), 7u);
  EXPECT_EQ(starts[0].frag, 5) << "gpu002 keeps 4 free, gpu003 1";
  EXPECT_EQ(starts[2].frag, 0);
}

// The same cluster and free GPUs for a TP 2 × DP 2 × PP 2 job (8 GPUs, stages of 4, TP groups
// each on one node): every start moves whole TP groups (even counts, so gpu001's third and
// gpu003's fifth free GPU stay free), and the stage-aligned starts cut both stages at node
// boundaries (counts of 4 or 8).
TEST(RefinePlugins, LocalSearchStartsKeepTpGroupsWholeAndAlignStagesWithNodes) {
  using C = std::vector<std::pair<int, int>>;
  const GangPlacer& placer = testing::ExamplePlacer("h100-2rack.yaml");
  job::Layout layout;
  layout.tp = 2;
  layout.dp = 2;
  layout.pp = 2;
  const CostModelHandle h(placer, {3, 8, 5, 8, 2, 8}, layout, /*unit=*/2);
  const std::vector<int> domain = {0, 1, 2};
  const std::vector<int> region = {0, 1, 2, 3, 4, 5};
  const std::vector<GangPlan> starts =
      RefinePluginFor(RefineRule::kLocalSearch).StartPlans(h, domain, region);
  ASSERT_FALSE(starts.empty());
  std::vector<C> chunks;
  int aligned = 0;
  for (const GangPlan& plan : starts) {
    int gpus = 0;
    bool stage_aligned = true;
    for (const auto& [node, k] : plan.chunks) {
      EXPECT_LE(k, h.CapOn(node)) << "gpu00" << node + 1;
      EXPECT_EQ(k % 2, 0) << "gpu00" << node + 1 << " splits a TP group";
      stage_aligned = stage_aligned && k % 4 == 0;
      gpus += k;
    }
    EXPECT_EQ(gpus, 8);
    aligned += stage_aligned;
    chunks.push_back(plan.chunks);
  }
  // Even spreads (two, then three nodes); stage-aligned (whole stages per node, best fit) on the
  // domain and on the region, both gpu002 whole; no stage pieces (a stage fits a node); anchors on
  // gpu002 (8), gpu003 (4 usable) and gpu001 (2 usable; gpu005's 2 is no new count); the stage
  // packer's thickest shares, gpu002 whole, and, since that puts both stages on one node, the same
  // thickness with no node split between stages: 4 + 4.
  EXPECT_EQ(chunks, (std::vector<C>{{{1, 4}, {2, 4}},
                                    {{0, 2}, {1, 4}, {2, 2}},
                                    {{1, 8}},
                                    {{1, 8}},
                                    {{1, 8}},
                                    {{2, 4}, {3, 4}},
                                    {{0, 2}, {1, 6}},
                                    {{1, 8}},
                                    {{1, 4}, {2, 4}}}));
  EXPECT_EQ(aligned, 7) << "all but the three-node spread and the gpu001 anchor";
}

// Each registry lists its plugins in the order of their rule's enum, under the slot's names.
template <typename P, typename RuleOf>
void ExpectRegistry(const std::vector<const P*>& plugins, const std::string& slot, RuleOf rule_of) {
  ASSERT_EQ(PluginNames(slot).size(), plugins.size()) << slot;
  for (size_t i = 0; i < plugins.size(); ++i) {
    EXPECT_EQ(static_cast<size_t>(rule_of(*plugins[i])), i) << slot;
    EXPECT_EQ(PluginNames(slot)[i], plugins[i]->name()) << slot;
  }
}

TEST(PlacementPlugins, TheRegistryResolvesEachNameToTheObjectOfItsRule) {
  auto rule = [](const auto& plugin) { return plugin.rule(); };
  ExpectRegistry(DomainPlugins(), "domain", rule);
  ExpectRegistry(NodePlugins(), "nodes", rule);
  ExpectRegistry(GpuPlugins(), "gpus", rule);
  ExpectRegistry(RefinePlugins(), "refine", rule);
  ExpectRegistry(RailPlugins(), "rails", rule);
  ExpectRegistry(SharePlugins(), "shares", rule);
  ExpectRegistry(ScorePlugins(), "score", [](const ScorePlugin& s) { return s.term(); });
  PlacementPlugins p;
  p.gpus = "first-free";
  p.shares = "in-order";
  auto t = ResolvePlugins(p);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->gpus, &GpuPluginFor(GpuRule::kFirstFree));
  EXPECT_EQ(t->shares, &SharePluginFor(ShareRule::kInOrder));
  EXPECT_EQ(t->nodes, &NodePluginFor(NodeRule::kBestFit));
  EXPECT_EQ(t->domain, &DomainPluginFor(DomainRule::kLowestLevel));
  EXPECT_EQ(t->refine, &RefinePluginFor(RefineRule::kLocalSearch));
  EXPECT_EQ(t->rails, &RailPluginFor(RailRule::kAlign));
  p.gpus = "nvlink-first";
  EXPECT_EQ(
      ResolvePlugins(p).status().message(),
      "gang: unknown gpus plugin \"nvlink-first\" (known: cost-model, pair-score, first-free)");
}

}  // namespace
}  // namespace toposched::sched
