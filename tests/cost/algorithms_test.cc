// Per-algorithm bandwidth models (src/cost/algorithms.h), table-driven.
#include "cost/algorithms.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace toposched::cost {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(AlgorithmsTest, DoubleBinaryTreeShapeAndTraffic) {
  struct Case {
    int islands;
    int depth;
    double max_traffic;
  };
  // Two islands: every byte crosses once per direction (traffic 1), the property that puts a
  // 2-node tree above the ring bound; three or four: an inner island carries twice the message.
  // The plain mirror lets a few islands be inner in both trees at larger counts (2.5 at 20).
  for (const Case& c :
       std::vector<Case>{{1, 1, 0}, {2, 2, 1}, {3, 2, 2}, {4, 3, 2}, {20, 5, 2.5}}) {
    SCOPED_TRACE(c.islands);
    DoubleBinaryTree t = MakeDoubleBinaryTree(c.islands);
    EXPECT_EQ(t.depth, c.depth);
    for (const std::vector<int>& parent : t.parents) {
      ASSERT_EQ(static_cast<int>(parent.size()), c.islands);
      EXPECT_EQ(std::count(parent.begin(), parent.end(), -1), 1);  // one root per tree
    }
    std::vector<double> traffic = TreeNetTraffic(t);
    EXPECT_DOUBLE_EQ(*std::max_element(traffic.begin(), traffic.end()), c.max_traffic);
    // Each tree has islands-1 edges, each counted half at both ends.
    EXPECT_DOUBLE_EQ(std::accumulate(traffic.begin(), traffic.end(), 0.0), 2.0 * (c.islands - 1));
  }
}

TEST(AlgorithmsTest, RingAllReduce) {
  struct Case {
    double edge;
    int ranks;
    double algbw;
  };
  for (const Case& c : std::vector<Case>{
           {360, 8, 360 * 8 / 14.0}, {368, 16, 368 * 16 / 30.0}, {23, 2, 23}, {100, 1, 0}}) {
    EXPECT_DOUBLE_EQ(RingAllReduceAlgBwGbps(c.edge, c.ranks), c.algbw) << c.ranks;
  }
}

TEST(AlgorithmsTest, TreeChainAndNetwork) {
  struct Case {
    int gpus;
    double ring;
    double chain;
  };
  for (const Case& c : std::vector<Case>{{1, 720, kInf}, {2, 720, 720}, {8, 720, 360}}) {
    EXPECT_EQ(TreeChainAlgBwGbps(c.gpus, c.ring), c.chain) << c.gpus;
  }
  struct Net {
    double net;
    double traffic;
    double algbw;
  };
  for (const Net& c : std::vector<Net>{{368, 1, 368}, {368, 2, 184}, {368, 0, kInf}}) {
    EXPECT_EQ(TreeNetAlgBwGbps(c.net, c.traffic), c.algbw) << c.traffic;
  }
}

TEST(AlgorithmsTest, Nvls) {
  struct Case {
    double busbw;
    int gpus;
    double algbw;
  };
  for (const Case& c :
       std::vector<Case>{{477, 8, 477 * 8 / 14.0}, {846, 72, 846 * 72 / 142.0}, {477, 1, 0}}) {
    EXPECT_DOUBLE_EQ(NvlsAllReduceAlgBwGbps(c.busbw, c.gpus), c.algbw) << c.gpus;
  }
}

TEST(AlgorithmsTest, NvlsTree) {
  struct Case {
    const char* name;
    double nvls_busbw, eff, net, traffic;
    int gpus;
    double algbw;
  };
  const double h100_inside = 477 * 8 / 14.0 * 0.857;
  const double b200_inside = 846 * 8 / 14.0 * 0.857;
  for (const Case& c : std::vector<Case>{
           // 2x H100 with 400 GB/s of NICs: the fabric binds, not the network.
           {"2x H100", 477, 0.857, 368, 1, 8, h100_inside},
           // 2x B200 with 400 GB/s of NICs: the network binds (each byte crosses once).
           {"2x B200", 846, 0.857, 368, 1, 8, 368},
           // 4+ nodes: an inner node carries twice the message, the network binds harder.
           {"4x B200", 846, 0.857, 368, 2, 8, 184},
           {"efficiency 1", 846, 1.0, 1000, 1, 8, b200_inside / 0.857},
       }) {
    EXPECT_DOUBLE_EQ(NvlsTreeAllReduceAlgBwGbps(c.nvls_busbw, c.gpus, c.eff, c.net, c.traffic),
                     c.algbw)
        << c.name;
  }
  // Above the ring's bound over the same NICs at two nodes: busbw 2(n-1)/n · 368 vs 368.
  EXPECT_GT(NvlsTreeAllReduceAlgBwGbps(846, 8, 0.857, 368, 1) * 30 / 16.0, 368 * 1.8);
}

}  // namespace
}  // namespace toposched::cost
