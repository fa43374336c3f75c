#include "topo/node_topology.h"

#include <gtest/gtest.h>

#include "testing/status_matchers.h"
#include "topo/hardware.h"
#include "topo/synthetic.h"

namespace toposched::topo {
namespace {

using ::testing::AllOf;
using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

TEST(TopoPath, ParsesEveryNvidiaSmiLabel) {
  struct Case {
    const char* text;
    PathClass cls;
    int links;
  } cases[] = {{"NV1", PathClass::kNV, 1},  {"NV18", PathClass::kNV, 18},
               {"PIX", PathClass::kPIX, 0}, {"PXB", PathClass::kPXB, 0},
               {"PHB", PathClass::kPHB, 0}, {"NODE", PathClass::kNODE, 0},
               {"SYS", PathClass::kSYS, 0}, {"SOC", PathClass::kSYS, 0}};
  for (const auto& c : cases) {
    auto p = ParsePath(c.text);
    ASSERT_TRUE(p.ok()) << c.text;
    EXPECT_EQ(p->cls, c.cls) << c.text;
    EXPECT_EQ(p->nvlinks, c.links) << c.text;
  }
  EXPECT_EQ(PathName(*ParsePath("SOC")), "SYS");
  for (const char* bad : {"NV0", "NV", "NV65", "FOO", "", "pix2"}) {
    EXPECT_THAT(ParsePath(bad),
                StatusIs(StatusCode::kInvalidArgument,
                         HasSubstr("unknown path class \"" + std::string(bad) + "\"")))
        << bad;
  }
}

TEST(TopoPath, RanksBestFirst) {
  EXPECT_LT(PathRank({PathClass::kNV, 18}), PathRank({PathClass::kNV, 2}));
  EXPECT_LT(PathRank({PathClass::kNV, 1}), PathRank({PathClass::kPIX, 0}));
  EXPECT_LT(PathRank({PathClass::kPIX, 0}), PathRank({PathClass::kPXB, 0}));
  EXPECT_LT(PathRank({PathClass::kPHB, 0}), PathRank({PathClass::kNODE, 0}));
  EXPECT_LT(PathRank({PathClass::kNODE, 0}), PathRank({PathClass::kSYS, 0}));
}

TEST(TopoSynthetic, NvSwitchNodeIsSwitchedWithFullPortBandwidth) {
  auto t = MakeSyntheticTopology("gpu:8 nvswitch:18 model:H100 nics:8 nic_gbps:400");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE(t->nvswitch);
  EXPECT_EQ(t->gpus.size(), 8u);
  EXPECT_EQ(PathName(t->gpu_gpu(0, 7)), "NV18");
  EXPECT_EQ(t->gpus[3].nvlink_ports, 18);
  // H100: NVLink 4, 18 links x 25 GB/s.
  EXPECT_DOUBLE_EQ(PairBandwidthGbps(*t, 0, 7), 450.0);
  EXPECT_EQ(t->NvlinkIslands().size(), 1u);
}

TEST(TopoSynthetic, CubeMeshIsDirectAndHasNoSwitch) {
  auto t = MakeSyntheticTopology("gpu:8 cubemesh model:V100");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_FALSE(t->nvswitch);
  EXPECT_EQ(PathName(t->gpu_gpu(0, 1)), "NV2");
  EXPECT_EQ(PathName(t->gpu_gpu(0, 3)), "NV1");
  EXPECT_NE(t->gpu_gpu(0, 5).cls, PathClass::kNV);
  for (int g = 0; g < 8; ++g) EXPECT_EQ(t->gpus[g].nvlink_ports, 6) << g;
  EXPECT_DOUBLE_EQ(PairBandwidthGbps(*t, 0, 1), 50.0);  // 2 x 25 GB/s
}

TEST(TopoSynthetic, PcieClassesFollowTheTree) {
  auto t = MakeSyntheticTopology("gpu:8 pcie sockets:2 switches:4 nics:4");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(PathName(t->gpu_gpu(0, 1)), "PIX");   // same switch
  EXPECT_EQ(PathName(t->gpu_gpu(0, 2)), "NODE");  // other switch, same socket
  EXPECT_EQ(PathName(t->gpu_gpu(0, 4)), "SYS");   // other socket
  EXPECT_EQ(PathName(t->gpu_nic(0, 0)), "PIX");
  EXPECT_EQ(t->NearestNic(0), 0);
  EXPECT_EQ(t->NearestNic(7), 3);
  EXPECT_EQ(t->NvlinkIslands().size(), 8u);
  EXPECT_LT(PairBandwidthGbps(*t, 0, 4), PairBandwidthGbps(*t, 0, 1));
}

TEST(TopoSynthetic, RejectsUnknownKeys) {
  auto t = MakeSyntheticTopology("gpu:8 nvswich:18");
  ASSERT_THAT(t, StatusIs(StatusCode::kInvalidArgument, HasSubstr("nvswich")));
  EXPECT_THAT(MakeSyntheticTopology("gpu:0"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("gpu must be 1..72")));
  EXPECT_THAT(MakeSyntheticTopology("gpu:x"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("synthetic topology: gpu: ")));
}

TEST(TopoValidate, RejectsNvlinkToANicAndAsymmetry) {
  auto t = MakeSyntheticTopology("gpu:2 pcie nics:1");
  ASSERT_TRUE(t.ok());
  NodeTopology bad = *t;
  bad.set_path(bad.gpu_dev(0), bad.nic_dev(0), Path{PathClass::kNV, 2});
  EXPECT_THAT(bad.Validate(), StatusIs(StatusCode::kInvalidArgument, HasSubstr("NVLink between")));
  NodeTopology dup = *t;
  dup.gpus[1].index = 0;
  EXPECT_THAT(dup.Validate(), StatusIs(StatusCode::kInvalidArgument, "GPU index 0 appears twice"));
}

TEST(TopoFindDevice, GpusByIndexFieldAndNicsByName) {
  auto t = MakeSyntheticTopology("gpu:4 pcie nics:2");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  NodeTopology n = *t;
  // GPU indices need not equal positions: "GPU<n>" names the index field.
  n.gpus[0].index = 5;
  n.gpus[2].index = 0;
  EXPECT_EQ(n.FindDevice("GPU5"), n.gpu_dev(0));
  EXPECT_EQ(n.FindDevice("GPU0"), n.gpu_dev(2));
  EXPECT_EQ(n.FindDevice("GPU3"), n.gpu_dev(3));
  EXPECT_EQ(n.FindDevice("GPU2"), -1);
  EXPECT_EQ(n.FindDevice("mlx5_0"), n.nic_dev(0));
  EXPECT_EQ(n.FindDevice("mlx5_1"), n.nic_dev(1));
  EXPECT_EQ(n.device_name(n.FindDevice("mlx5_1")), "mlx5_1");
  EXPECT_EQ(n.FindDevice("mlx5_2"), -1);
  EXPECT_EQ(n.FindDevice(""), -1);
  EXPECT_EQ(n.FindDevice("GPU"), -1);
  EXPECT_EQ(n.FindDevice("GPU99999999999999999999"), -1);
  // Not "GPU" and a number: a NIC name.
  n.nics[1].name = "GPUx";
  EXPECT_EQ(n.FindDevice("GPUx"), n.nic_dev(1));
}

TEST(TopoHardware, EmbeddedTableLoadsAndKnowsModels) {
  const HardwareTable& hw = HardwareTable::Default();
  EXPECT_DOUBLE_EQ(hw.nvlink_link_gbps.at(4), 25.0);
  EXPECT_DOUBLE_EQ(hw.nvlink_link_gbps.at(5), 50.0);
  EXPECT_DOUBLE_EQ(hw.pcie_x16_gbps.at(5), 63.0);
  auto h100 = hw.Lookup("NVIDIA H100 80GB HBM3");
  ASSERT_TRUE(h100.has_value());
  EXPECT_EQ(h100->nvlink_gen, 4);
  EXPECT_EQ(h100->nvlink_ports, 18);
  auto gb200 = hw.Lookup("GB200");
  ASSERT_TRUE(gb200.has_value());
  EXPECT_EQ(gb200->nvlink_gen, 5);
  EXPECT_EQ(hw.Lookup("Tesla V100-SXM2-32GB")->nvlink_gen, 2);
  EXPECT_FALSE(hw.Lookup("").has_value());
  EXPECT_THAT(HardwareTable::FromJson("{"),
              StatusIs(StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("hardware table: "), HasSubstr("parse error"))));
}

}  // namespace
}  // namespace toposched::topo
