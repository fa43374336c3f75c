#include "select/rank_order.h"

#include <gtest/gtest.h>

#include <map>

#include "testing/status_matchers.h"
#include "topo/synthetic.h"

namespace toposched::sched {
namespace {

using ::toposched::testing::HasSubstr;

std::map<std::string, std::string> Env(const RankLayout& l) { return {l.env.begin(), l.env.end()}; }

TEST(RankOrderTest, NicsSpreadAcrossEquallyNearRails) {
  // 8 GPUs, 4 switches, 8 NICs: two GPUs and two NICs per switch.
  auto t = topo::MakeSyntheticTopology("gpu:8 pcie sockets:2 switches:4 nics:8");
  ASSERT_TRUE(t.ok());
  std::vector<int> order = {0, 1, 2, 3};
  std::vector<int> nics = AssignNics(*t, order);
  ASSERT_EQ(nics.size(), 4u);
  std::set<int> distinct(nics.begin(), nics.end());
  EXPECT_EQ(distinct.size(), 4u);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(t->gpu_nic(order[r], nics[r]).cls, topo::PathClass::kPIX);
  }
}

TEST(RankOrderTest, SharesANicOnlyWhenNoEquallyNearOneIsFree) {
  auto t = topo::MakeSyntheticTopology("gpu:8 pcie sockets:2 switches:4 nics:4");
  ASSERT_TRUE(t.ok());
  // GPUs 0 and 1 share switch 0 and its one NIC.
  std::vector<int> nics = AssignNics(*t, std::vector<int>{0, 1});
  EXPECT_EQ(nics[0], nics[1]);
  EXPECT_EQ(t->gpu_nic(0, nics[0]).cls, topo::PathClass::kPIX);
}

TEST(RankOrderTest, EnvironmentAndNumaBinding) {
  auto t = topo::MakeSyntheticTopology("gpu:8 pcie sockets:2 switches:4 nics:4");
  ASSERT_TRUE(t.ok());
  RankLayout l = LayOutRanks(*t, std::vector<int>{6, 4, 0, 2}, 2);
  auto env = Env(l);
  EXPECT_EQ(env["CUDA_DEVICE_ORDER"], "PCI_BUS_ID");
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "6,4,0,2");
  EXPECT_EQ(env["NCCL_IB_HCA"], "=mlx5_3,mlx5_2,mlx5_0,mlx5_1");
  EXPECT_EQ(env["TOPOSCHED_NUMA_NODES"], "1,1,0,0");
  EXPECT_EQ(env["TOPOSCHED_CPU_LISTS"], "16-31;16-31;0-15;0-15");
  ASSERT_EQ(l.ranks.size(), 4u);
  EXPECT_EQ(l.ranks[0].gpu_index, 6);
  EXPECT_EQ(l.ranks[2].tp_group, 1);
  EXPECT_TRUE(l.ranks[0].gpudirect);
  EXPECT_TRUE(l.warnings.empty()) << l.warnings[0];
}

TEST(RankOrderTest, WarnsAboutSlowPaths) {
  auto t = topo::MakeSyntheticTopology("gpu:8 pcie sockets:2 switches:4 nics:1");
  ASSERT_TRUE(t.ok());
  // One NIC under switch 0: GPUs elsewhere reach it through the host; TP group {0,4} spans the
  // sockets.
  RankLayout l = LayOutRanks(*t, std::vector<int>{0, 4}, 2);
  ASSERT_EQ(l.warnings.size(), 2u);
  EXPECT_THAT(l.warnings[0], HasSubstr("no GPUDirect RDMA")) << l.warnings[0];
  EXPECT_THAT(l.warnings[0], HasSubstr("rank 1 GPU4->mlx5_0 SYS")) << l.warnings[0];
  EXPECT_THAT(l.warnings[1], HasSubstr("TP group 0 (GPUs 0,4) crosses sockets")) << l.warnings[1];

  auto eth = topo::MakeSyntheticTopology("gpu:2 pcie nics:1 linklayer:ethernet");
  ASSERT_TRUE(eth.ok());
  l = LayOutRanks(*eth, std::vector<int>{0, 1}, 1);
  ASSERT_EQ(l.warnings.size(), 1u);
  EXPECT_THAT(l.warnings[0], HasSubstr("TCP"));
  EXPECT_EQ(Env(l).count("NCCL_IB_HCA"), 0u);

  auto none = topo::MakeSyntheticTopology("gpu:2 nvlink:2");
  ASSERT_TRUE(none.ok());
  l = LayOutRanks(*none, std::vector<int>{1, 0}, 1);
  ASSERT_EQ(l.warnings.size(), 1u);
  EXPECT_THAT(l.warnings[0], HasSubstr("no NIC"));
  EXPECT_EQ(l.ranks[0].nic, -1);
}

}  // namespace
}  // namespace toposched::sched
