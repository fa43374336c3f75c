// The score prices the slowest group of each kind, not rank 0's alone (placement/group_shape.h,
// ScorePlacement), on the two-rack H100 example cluster (gpu001-016 under leaf0, gpu017-032
// under leaf1).
#include "placement/group_shape.h"

#include <gtest/gtest.h>

#include <vector>

#include "cost/cost_model.h"
#include "placer/gang.h"
#include "testing/clusters.h"

namespace toposched::sched {
namespace {

const topo::Cluster& H100() { return testing::H100Cluster(); }

int Node(const std::string& name) {
  const int n = H100().FindNode(name);
  EXPECT_GE(n, 0) << name;
  return n;
}

// Ranks in order on (node, GPU) slots.
Placement On(const std::vector<std::pair<std::string, int>>& slots) {
  Placement p;
  for (const auto& [node, gpu] : slots) {
    p.ranks.push_back(RankSlot{static_cast<int>(p.ranks.size()), Node(node), gpu});
  }
  return p;
}

double AllReduceMs(const cost::CostModel& cost, const std::vector<cost::GpuRef>& gpus,
                   int64_t bytes) {
  auto e = cost.Evaluate(cost::Collective::kAllReduce, gpus, static_cast<double>(bytes));
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? e->time_ms : 0;
}

job::Layout Layout(int tp, int pp, int dp) {
  job::Layout l;
  l.tp = tp;
  l.pp = pp;
  l.dp = dp;
  l.dp_bytes = int64_t{1} << 30;
  l.tp_bytes = tp > 1 ? int64_t{64} << 20 : 0;
  l.pp_bytes = pp > 1 ? int64_t{64} << 20 : 0;
  return l;
}

TEST(GroupShapeTest, ShapesOrderByReachThenThinnestNodeThenNodes) {
  std::vector<int> scratch;
  // DP 4: two ranks on gpu001 and two on gpu002 (one leaf), then 3 + 1, then across leaves.
  const Placement even = On({{"gpu001", 0}, {"gpu001", 1}, {"gpu002", 0}, {"gpu002", 1}});
  const Placement thin = On({{"gpu001", 0}, {"gpu001", 1}, {"gpu001", 2}, {"gpu002", 0}});
  const Placement wide = On({{"gpu001", 0}, {"gpu001", 1}, {"gpu017", 0}, {"gpu017", 1}});
  const std::vector<int> all = {0, 1, 2, 3};
  const GroupShape e = ShapeOfGroup(H100(), even.ranks, all, scratch);
  const GroupShape t = ShapeOfGroup(H100(), thin.ranks, all, scratch);
  const GroupShape w = ShapeOfGroup(H100(), wide.ranks, all, scratch);
  EXPECT_EQ(e.nodes, 2);
  EXPECT_EQ(e.thinnest, 2);
  EXPECT_EQ(t.thinnest, 1);
  EXPECT_EQ(e.reach, H100().FindLevel("leaf"));
  EXPECT_EQ(w.reach, H100().FindLevel("spine"));
  EXPECT_TRUE(t.WorseThan(e));
  EXPECT_TRUE(w.WorseThan(t));  // reaching the spine outweighs a thinner node
  EXPECT_FALSE(e.WorseThan(e));
}

TEST(GroupShapeTest, TheSecondStagesDpGroupAcrossNodesIsPriced) {
  const cost::CostModel cost(H100());
  const job::Layout l = Layout(1, 2, 2);
  // Stage 0 (ranks 0, 1) inside gpu001; stage 1's DP group (ranks 2, 3) across gpu001, gpu002.
  Placement p = On({{"gpu001", 0}, {"gpu001", 1}, {"gpu001", 2}, {"gpu002", 0}});
  ASSERT_TRUE(ScorePlacement(cost, l, p).ok());
  const double stage0 = AllReduceMs(cost, {{Node("gpu001"), 0}, {Node("gpu001"), 1}}, l.dp_bytes);
  const double stage1 = AllReduceMs(cost, {{Node("gpu001"), 2}, {Node("gpu002"), 0}}, l.dp_bytes);
  EXPECT_GT(stage1, 2 * stage0);  // the network against NVLink
  EXPECT_DOUBLE_EQ(p.dp_ms, stage1);
  EXPECT_DOUBLE_EQ(p.predicted_ms, p.dp_ms + p.tp_ms + p.pp_ms);
}

TEST(GroupShapeTest, ADpGroupThroughAnotherTpIndexAcrossLeavesIsPriced) {
  const cost::CostModel cost(H100());
  const job::Layout l = Layout(2, 1, 2);  // ranks 0,1 | 2,3 are TP groups; DP groups {0,2} {1,3}
  // TP groups split over nodes (the placer's fallback): DP group {0, 2} inside leaf0, DP group
  // {1, 3} from leaf0 to leaf1.
  Placement p = On({{"gpu001", 0}, {"gpu001", 1}, {"gpu002", 0}, {"gpu017", 0}});
  EXPECT_EQ(WorstDpGroupRank(H100(), l, p.ranks), 1);
  ASSERT_TRUE(ScorePlacement(cost, l, p).ok());
  const double far = AllReduceMs(cost, {{Node("gpu001"), 1}, {Node("gpu017"), 0}}, l.dp_bytes);
  EXPECT_DOUBLE_EQ(p.dp_ms, far);
  // The TP group {2, 3} spans the leaves: the worst TP group, priced.
  EXPECT_EQ(WorstTpGroupRank(H100(), l, p.ranks), 2);
  auto tp = cost.Evaluate(cost::Collective::kAllReduce,
                          std::vector<cost::GpuRef>{{Node("gpu002"), 0}, {Node("gpu017"), 0}},
                          static_cast<double>(l.tp_bytes));
  ASSERT_TRUE(tp.ok());
  EXPECT_DOUBLE_EQ(p.tp_ms, tp->time_ms);
}

TEST(GroupShapeTest, EveryStageBoundaryIsPricedForPipelineTransfers) {
  const cost::CostModel cost(H100());
  const job::Layout l = Layout(1, 3, 1);
  // Stages 0 -> 1 inside gpu001, 1 -> 2 from leaf0 to leaf1.
  Placement p = On({{"gpu001", 0}, {"gpu001", 1}, {"gpu017", 0}});
  EXPECT_EQ(WorstPpPairRank(H100(), l, p.ranks), 1);
  ASSERT_TRUE(ScorePlacement(cost, l, p).ok());
  auto far = cost.Evaluate(cost::Collective::kSendRecv,
                           std::vector<cost::GpuRef>{{Node("gpu001"), 1}, {Node("gpu017"), 0}},
                           static_cast<double>(l.pp_bytes));
  ASSERT_TRUE(far.ok());
  EXPECT_DOUBLE_EQ(p.pp_ms, far->time_ms);
}

TEST(GroupShapeTest, GroupsAlikeLeaveRankZerosPrice) {
  const cost::CostModel cost(H100());
  const job::Layout l = Layout(1, 2, 2);
  // Each stage's DP group inside one node: nothing is worse than rank 0's groups.
  Placement p = On({{"gpu001", 0}, {"gpu001", 1}, {"gpu002", 0}, {"gpu002", 1}});
  EXPECT_EQ(WorstDpGroupRank(H100(), l, p.ranks), -1);
  ASSERT_TRUE(ScorePlacement(cost, l, p).ok());
  EXPECT_DOUBLE_EQ(p.dp_ms,
                   AllReduceMs(cost, {{Node("gpu001"), 0}, {Node("gpu001"), 1}}, l.dp_bytes));
}

}  // namespace
}  // namespace toposched::sched
