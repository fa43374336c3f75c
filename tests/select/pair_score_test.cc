#include "select/pair_score.h"

#include <gtest/gtest.h>

#include "topo/synthetic.h"

namespace toposched::sched {
namespace {

TEST(PairScoreTest, Scores) {
  EXPECT_EQ(PairScore({topo::PathClass::kNV, 2}), 200);
  EXPECT_EQ(PairScore({topo::PathClass::kNV, 18}), 1800);
  EXPECT_EQ(PairScore({topo::PathClass::kPIX, 0}), 50);
  EXPECT_EQ(PairScore({topo::PathClass::kPXB, 0}), 40);
  EXPECT_EQ(PairScore({topo::PathClass::kPHB, 0}), 30);
  EXPECT_EQ(PairScore({topo::PathClass::kNODE, 0}), 20);
  EXPECT_EQ(PairScore({topo::PathClass::kSYS, 0}), 10);
}

TEST(PairScoreTest, PicksTheBestSetOfTheBestPartition) {
  auto t = topo::MakeSyntheticTopology("gpu:8 cubemesh model:V100");
  ASSERT_TRUE(t.ok());
  std::vector<int> all = {0, 1, 2, 3, 4, 5, 6, 7};
  // Quads score 2+2+1+1+1+2 links = 900 each; the partition into the two quads wins.
  std::vector<int> four = PairScoreSelect(*t, all, 4);
  EXPECT_TRUE(four == std::vector<int>({0, 1, 2, 3}) || four == std::vector<int>({4, 5, 6, 7}));
  EXPECT_EQ(SetPairScore(*t, four), 900);
  std::vector<int> two = PairScoreSelect(*t, all, 2);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(t->gpu_gpu(two[0], two[1]).nvlinks, 2);
  // Padding: 3 of 8 pads one slot; the choice is still a full set of real GPUs.
  std::vector<int> three = PairScoreSelect(*t, all, 3);
  EXPECT_EQ(three.size(), 3u);
  EXPECT_TRUE(PairScoreSelect(*t, std::vector<int>{0, 1}, 3).empty());
  EXPECT_EQ(PairScoreSelect(*t, std::vector<int>{5, 1}, 2), std::vector<int>({1, 5}));
  // 4 free, k = 3: two sets with two pads; a partition must keep one set whole.
  EXPECT_EQ(PairScoreSelect(*t, std::vector<int>{0, 1, 2, 4}, 3).size(), 3u);
}

}  // namespace
}  // namespace toposched::sched
