// Causes tied to the node's topology: a socket fallback names the node's RDMA NICs, the
// NCCL_IB_HCA value and the cost model's predicted slowdown; a node without RDMA NICs says so.
#include <gtest/gtest.h>

#include <string>

#include "diag/diagnose.h"
#include "topo/io/cluster_yaml.h"
#include "topo/synthetic.h"

namespace toposched::diag {
namespace {

const std::string kFallback = std::string(TS_SOURCE_DIR) +
                              "/data/interruption-logs/"
                              "1-socket-fallback-libibverbs-missing-detectron2-4730.log";

TEST(DiagnoseTopology, SocketFallbackNamesTheNodesNicsAndTheSlowdown) {
  auto c =
      topo::io::ReadClusterYamlFile(std::string(TS_SOURCE_DIR) + "/data/clusters/h100-2rack.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const int idx = c->FindNode("gpu017");
  ASSERT_GE(idx, 0);
  NodeContext node{"gpu017", c->topology(idx)};
  auto d = DiagnoseFiles({kFallback}, &node);
  ASSERT_TRUE(d.ok());
  ASSERT_FALSE(d->causes.empty());
  const Cause& top = d->causes.front();
  EXPECT_EQ(top.category, Category::kNcclTransportFallback);
  EXPECT_NE(top.topology.find("gpu017"), std::string::npos) << top.topology;
  EXPECT_NE(top.topology.find("mlx5_0..mlx5_7"), std::string::npos) << top.topology;
  EXPECT_NE(top.topology.find("x slower"), std::string::npos) << top.topology;
  EXPECT_NE(top.fix.find("NCCL_IB_HCA=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7"),
            std::string::npos)
      << top.fix;
  EXPECT_NE(top.fix.find("NCCL_SOCKET_IFNAME=enp36s0f1"), std::string::npos) << top.fix;
  EXPECT_NE(top.fix.find("libibverbs"), std::string::npos) << top.fix;
}

TEST(DiagnoseTopology, NodeWithoutRdmaNicsSaysSocketIsItsOnlyPath) {
  auto t = topo::MakeSyntheticTopology("gpu:8 nvswitch:18");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  NodeContext node{"ws1", *t};
  auto d = DiagnoseFiles({kFallback}, &node);
  ASSERT_TRUE(d.ok());
  ASSERT_FALSE(d->causes.empty());
  EXPECT_EQ(d->causes.front().category, Category::kNcclTransportFallback);
  EXPECT_NE(d->causes.front().topology.find("no IB/RoCE NIC"), std::string::npos);
}

}  // namespace
}  // namespace toposched::diag
