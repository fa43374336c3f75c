// Stage packing (plugins/stage_pack.h): counts per node whose every stage piece is thick, and the
// gang placer starting from them on the quality oracle's two-leaf H100 shape.
#include "plugins/stage_pack.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "sched/ilp_cases.h"
#include "testing/alloc_ids.h"
#include "testing/clusters.h"

namespace toposched::sched {
namespace {

// Each stage's pieces as (slot, units), from counts filled in slot order.
std::vector<std::vector<std::pair<int, int>>> Pieces(const std::vector<int>& counts, int s) {
  std::vector<std::vector<std::pair<int, int>>> stages(1);
  int in_stage = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    int left = counts[i];
    while (left > 0) {
      const int t = std::min(left, s - in_stage);
      stages.back().emplace_back(static_cast<int>(i), t);
      left -= t;
      in_stage += t;
      if (in_stage == s) {
        stages.emplace_back();
        in_stage = 0;
      }
    }
  }
  if (stages.back().empty()) stages.pop_back();
  return stages;
}

int Thinnest(const std::vector<std::vector<std::pair<int, int>>>& stages) {
  int m = 1 << 30;
  for (const auto& st : stages) {
    for (const auto& [slot, t] : st) m = std::min(m, t);
  }
  return m;
}

// A TP·PP·DP job of a 7B model.
job::JobSpec StageJob(int tp, int pp, int dp) {
  job::JobSpec j;
  j.name = "stages";
  j.layout.tp = tp;
  j.layout.pp = pp;
  j.layout.dp = dp;
  j.model_params = 7e9;
  EXPECT_TRUE(j.Normalize().ok());
  return j;
}

// Every stage holds at least `gpus` of its GPUs on each node it uses.
void ExpectStagePiecesOfAtLeast(const topo::Cluster& c, const job::JobSpec& j, const Placement& p,
                                int gpus) {
  const int stage = j.layout.tp * j.layout.dp;
  for (int s = 0; s < j.layout.pp; ++s) {
    std::map<int, int> per_node;
    for (int r = s * stage; r < (s + 1) * stage; ++r) ++per_node[p.ranks[r].node];
    for (const auto& [node, k] : per_node) {
      EXPECT_GE(k, gpus) << "stage " << s << " holds " << k << " GPUs of " << c.nodes[node].name;
    }
  }
}

TEST(StagePackTest, EveryStageGetsPiecesOfAtLeastThreeWhereFillingInOrderLeavesOne) {
  // Stages of 7 GPUs on nodes with 4, 6, 4, 6, 4 free: taking each node whole gives the third
  // stage 6 + 1. Three stages fit with pieces of 4 + 3 and 3 + 4.
  const std::vector<PackSlot> slots = {
      {4, 0, false}, {6, 0, false}, {4, 0, false}, {6, 0, false}, {4, 0, false}};
  const auto plans = StagePackCounts(slots, 7, 3, int64_t{1} << 16);
  ASSERT_EQ(plans.size(), 1u);  // no stage crosses a domain: one plan
  const auto stages = Pieces(plans[0], 7);
  ASSERT_EQ(stages.size(), 3u);
  EXPECT_EQ(Thinnest(stages), 3);
  for (size_t i = 0; i < slots.size(); ++i) EXPECT_LE(plans[0][i], slots[i].cap);
}

TEST(StagePackTest, AThickPlanThatCrossesDomainsComesWithTheThickestThatDoesNot) {
  // Stages of 4: domain 0 has nodes with 1, 1 and 2 free, domain 1 three nodes with 2. Pieces
  // of 2 need a stage across the domains; pieces of 1 keep each stage in one.
  const std::vector<PackSlot> slots = {{1, 0, false}, {1, 0, false}, {2, 0, false},
                                       {2, 1, false}, {2, 1, false}, {2, 1, false}};
  const auto plans = StagePackCounts(slots, 4, 2, int64_t{1} << 16);
  ASSERT_EQ(plans.size(), 2u);
  EXPECT_EQ(Thinnest(Pieces(plans[0], 4)), 2);
  EXPECT_EQ(Thinnest(Pieces(plans[1], 4)), 1);
  for (const auto& st : Pieces(plans[1], 4)) {
    std::set<int> groups;
    for (const auto& [slot, t] : st) groups.insert(slots[slot].group);
    EXPECT_EQ(groups.size(), 1u) << "a stage of the second plan crosses domains";
  }
}

TEST(StagePackTest, NodesOfTheCandidateDomainComeFirst) {
  // Two stages of 4 fit whole on either pair of 4-GPU nodes; the away pair is not taken.
  const std::vector<PackSlot> slots = {{4, 0, true}, {4, 0, true}, {4, 1, false}, {4, 1, false}};
  const auto plans = StagePackCounts(slots, 4, 2, int64_t{1} << 16);
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0], (std::vector<int>{0, 0, 4, 4}));
}

TEST(StagePackTest, OneStageTakesTheThickestSharesAndTheThickestInsideOneDomain) {
  // DP 8 alone: 4 + 4 across two domains, or 6 + 1 + 1 inside domain 0.
  const std::vector<PackSlot> slots = {{6, 0, false}, {1, 0, false}, {1, 0, false}, {4, 1, false}};
  const auto plans = StagePackCounts(slots, 8, 1, int64_t{1} << 16);
  ASSERT_EQ(plans.size(), 2u);
  EXPECT_EQ(plans[0], (std::vector<int>{4, 0, 0, 4}));
  EXPECT_EQ(plans[1], (std::vector<int>{6, 1, 1, 0}));
}

// Slots holding pieces of two stages or more.
int SharedSlots(const std::vector<int>& counts, int s) {
  std::map<int, int> stages_of;
  for (const auto& st : Pieces(counts, s)) {
    for (const auto& [slot, t] : st) ++stages_of[slot];
  }
  int n = 0;
  for (const auto& [slot, k] : stages_of) n += k > 1 ? 1 : 0;
  return n;
}

TEST(StagePackTest, APlanThatSplitsANodeBetweenStagesComesWithOneThatSplitsNone) {
  // The quality table's case 1316 in TP groups of 2 (stages of 10): leaf 0 with 2, 3, 3 free,
  // leaf 1 with 2, 3, 1, 2, leaf 2 (one-NIC nodes) with 1, 4, 4, 4. The fewest nodes put the
  // first stage's last 2 units on the node that starts the second, whose one NIC then carries
  // both stages' DP traffic; 2, 3, 3, 2 | 4, 3, 3 splits no node, pieces as thick (2 units).
  const std::vector<PackSlot> slots = {{2, 0, false}, {3, 0, false}, {3, 0, false}, {2, 1, false},
                                       {3, 1, false}, {1, 1, false}, {2, 1, false}, {1, 2, false},
                                       {4, 2, false}, {4, 2, false}, {4, 2, false}};
  const auto plans = StagePackCounts(slots, 10, 2, int64_t{1} << 16);
  ASSERT_GE(plans.size(), 2u);
  EXPECT_EQ(SharedSlots(plans[0], 10), 1);
  EXPECT_EQ(SharedSlots(plans[1], 10), 0);
  EXPECT_EQ(Thinnest(Pieces(plans[1], 10)), Thinnest(Pieces(plans[0], 10)));
  int total = 0;
  for (int c : plans[1]) total += c;
  EXPECT_EQ(total, 20);
}

TEST(StagePackTest, FewestAwayNodesBeforeFewestCrossings) {
  // The quality table's case 905 (one stage of 12 TP pairs): leaves 0 and 1 of H100 nodes with
  // 1, 1, 3 and 1, 1, 1, 2 free pairs, leaf 2 of V100 nodes (away) with 2, 2, 2, 1. The thickest
  // shares take four V100 nodes; the fewest away nodes take one, crossing both H100 leaves.
  const std::vector<PackSlot> slots = {{1, 0, false}, {1, 0, false}, {3, 0, false}, {1, 1, false},
                                       {1, 1, false}, {1, 1, false}, {2, 1, false}, {2, 2, true},
                                       {2, 2, true},  {2, 2, true},  {1, 2, true}};
  const std::vector<int> few = StagePackFewestAway(slots, 12, 1, int64_t{1} << 16);
  ASSERT_EQ(few.size(), slots.size());
  int total = 0, away = 0;
  for (size_t i = 0; i < few.size(); ++i) {
    total += few[i];
    if (few[i] > 0 && slots[i].away) ++away;
  }
  EXPECT_EQ(total, 12);
  EXPECT_EQ(away, 1);
  const auto thick = StagePackCounts(slots, 12, 1, int64_t{1} << 16);
  ASSERT_FALSE(thick.empty());
  int thick_away = 0;
  for (size_t i = 0; i < thick[0].size(); ++i) thick_away += thick[0][i] > 0 && slots[i].away;
  EXPECT_GT(thick_away, 1);
  EXPECT_TRUE(StagePackFewestAway(slots, 12, 1, 8).empty());  // over the work bound
}

TEST(StagePackTest, ByBandwidthAOneNicNodeTakesAWholeStageOrNothing) {
  // The quality table's case 1091: four stages of 7 GPUs on H100 nodes (8 NICs of 46 GB/s)
  // with 8, 4 | 6, 2, 2, 6 free under leaves 0 and 1, and V100 nodes (one 8 GB/s NIC for 8
  // GPUs) with 4, 6, 8, 2 free under leaf 2. In units the thickest pieces split a stage over
  // V100 nodes, each piece with a share of one NIC; by bandwidth a V100 node takes a whole stage
  // (no network piece) or nothing, and the H100 pieces are as thick as that allows.
  std::vector<PackSlot> slots;
  for (int cap : {8, 4}) slots.push_back({cap, 0, false, 8, 46});
  for (int cap : {6, 2, 2, 6}) slots.push_back({cap, 1, false, 8, 46});
  for (int cap : {4, 6, 8, 2}) slots.push_back({cap, 2, false, 1, 8});
  const std::vector<int> bw = StagePackByBandwidth(slots, 7, 4, 1, int64_t{1} << 16);
  ASSERT_EQ(bw.size(), slots.size());
  const auto stages = Pieces(bw, 7);
  ASSERT_EQ(stages.size(), 4u);
  int whole_on_v100 = 0;
  for (const auto& st : stages) {
    for (const auto& [slot, t] : st) {
      if (slot < 6) continue;
      EXPECT_EQ(t, 7) << "a V100 node holds a piece of " << t << " GPUs";
      ++whole_on_v100;
    }
  }
  EXPECT_EQ(whole_on_v100, 1);
  const auto thick = StagePackCounts(slots, 7, 4, int64_t{1} << 16);
  ASSERT_FALSE(thick.empty());
  bool split_on_v100 = false;
  for (const auto& st : Pieces(thick[0], 7)) {
    for (const auto& [slot, t] : st) split_on_v100 = split_on_v100 || (slot >= 6 && t < 7);
  }
  EXPECT_TRUE(split_on_v100);
  slots[0].nics = 0;  // no NIC figures: no plan
  EXPECT_TRUE(StagePackByBandwidth(slots, 7, 4, 1, int64_t{1} << 16).empty());
}

TEST(StagePackTest, NothingBeyondTheWorkBoundOrTheFreeUnits) {
  const std::vector<PackSlot> slots = {{4, 0, false}, {4, 0, false}};
  EXPECT_TRUE(StagePackCounts(slots, 8, 0, int64_t{1} << 16).empty());
  EXPECT_TRUE(StagePackCounts(slots, 4, 2, 10).empty());
  EXPECT_TRUE(StagePackCounts(slots, 4, 3, int64_t{1} << 16).empty());  // 12 units on 8
}

// A case of the 2,000-case quality table (`ilp_quality_bench --table 2000 --only 1386`): 32 GPUs,
// TP 2, PP 4, DP 4 of a 7B model, on h100-16 with these GPUs free. Filling nodes whole leaves a
// stage with one TP group on a node; the oracle's optimum is 20.65 ms, the placer gave 39.67 ms
// before stage packing.
TEST(StagePackTest, ThePlacerKeepsEveryStagesPiecesThickOnTheQualityShape) {
  auto shape = ilp::LoadShapeTools("h100-16");
  ASSERT_TRUE(shape.ok()) << shape.status().ToString();
  const topo::Cluster& c = *(*shape)->cluster;
  StatusOr<ClusterState> st = ClusterState::Create(c);
  ASSERT_TRUE(st.ok());
  const std::map<std::string, std::vector<int>> free = {{"h01", {0, 4}},
                                                        {"h02", {}},
                                                        {"h03", {1, 2}},
                                                        {"h04", {0, 1, 2, 3, 4, 5, 6, 7}},
                                                        {"h05", {0, 1, 4, 6}},
                                                        {"h06", {0, 6}},
                                                        {"h07", {1, 2, 3, 4, 5, 7}},
                                                        {"h08", {0, 1, 4, 5, 6, 7}},
                                                        {"h09", {}},
                                                        {"h10", {0, 2, 4, 5}},
                                                        {"h11", {0, 1, 2, 3, 5, 7}},
                                                        {"h12", {}},
                                                        {"h13", {1, 3, 4, 5, 6, 7}},
                                                        {"h14", {}},
                                                        {"h15", {0, 1, 2, 3, 4, 5, 6, 7}},
                                                        {"h16", {1, 2, 3, 4, 5, 7}}};
  int64_t id = 100;
  for (const auto& [name, gpus] : free) {
    const int n = c.FindNode(name);
    ASSERT_GE(n, 0) << name;
    GpuMask held;
    for (int g = 0; g < st->GpuCount(n); ++g) {
      if (std::find(gpus.begin(), gpus.end(), g) == gpus.end()) held.set(g);
    }
    if (held.count() > 0) {
      ASSERT_TRUE(st->Allocate(testing::Alloc(id++), {NodeGpus{n, held}}).ok());
    }
  }
  const job::JobSpec j = StageJob(2, 4, 4);
  const Verdict v = (*shape)->placer->Place(*st, j);
  ASSERT_TRUE(v.fit()) << v.Explain();
  const Placement& p = *v.placement;
  // Every stage's DP groups: at least two of their ranks on each node (two TP groups).
  ExpectStagePiecesOfAtLeast(c, j, p, 4);
  const ilp::OracleResult opt = (*shape)->oracle->SolveByBranchAndBound(*st, j);
  ASSERT_EQ(opt.status, ilp::OracleStatus::kOptimal) << opt.reason;
  EXPECT_LE(p.predicted_ms, opt.placement->predicted_ms * 1.05)
      << "placer " << p.predicted_ms << " ms, optimum " << opt.placement->predicted_ms << " ms";
}

// On a large cluster the whole region is too large for the packer's bound, and the candidate
// leaf alone is packed: the evaluation's 256-node fabric (leaves of 16), every node with 2 GPUs
// free but leaf0's first seven, which have 4, 6, 4, 6, 4, 4 and 3. A TP1 PP4 DP7 job fits there
// with every stage on two nodes, 4 + 3 or 3 + 4; taking leaf0's nodes whole leaves a stage 6 + 1.
TEST(StagePackTest, OnALargeClusterTheCandidateLeafAloneIsPacked) {
  const topo::Cluster& c = testing::LoadExampleCluster("eval-h100-3tier-2to1.yaml");
  auto placer = GangPlacer::Create(c);
  ASSERT_TRUE(placer.ok()) << placer.status().ToString();
  StatusOr<ClusterState> st = ClusterState::Create(c);
  ASSERT_TRUE(st.ok());
  const std::vector<int> leaf0_free = {4, 6, 4, 6, 4, 4, 3};
  int64_t id = 1;
  for (int n = 0; n < static_cast<int>(c.nodes.size()); ++n) {
    const int keep = n < static_cast<int>(leaf0_free.size()) ? leaf0_free[n] : (n < 16 ? 0 : 2);
    GpuMask held;
    for (int g = keep; g < st->GpuCount(n); ++g) held.set(g);
    if (held.count() > 0) {
      ASSERT_TRUE(st->Allocate(testing::Alloc(id++), {NodeGpus{n, held}}).ok());
    }
  }
  const job::JobSpec j = StageJob(1, 4, 7);
  const Verdict v = (*placer)->Place(*st, j);
  ASSERT_TRUE(v.fit()) << v.Explain();
  ExpectStagePiecesOfAtLeast(c, j, *v.placement, 3);
}

}  // namespace
}  // namespace toposched::sched
