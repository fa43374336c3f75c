// Among equally fast sets with equally good leftovers, the selector keeps a job on one socket.
#include <gtest/gtest.h>

#include "select/node_select.h"
#include "topo/io/import.h"

namespace toposched::sched {
namespace {

GpuMask NumaMask(std::initializer_list<int> p) {
  return GpuMask::FromPositions(std::vector<int>(p));
}

TEST(NodeSelectNumaTest, EqualSetsPreferOneSocket) {
  // Real 8x H100 node: NV18 between every pair, GPU0-3 on NUMA 0, GPU4-7 on NUMA 1.
  auto t = topo::io::ImportTopologyFile(
      std::string(TS_SOURCE_DIR) +
          "/data/samples/nvidia-smi/24-h100-sxm-8gpu-nv18-8nic-pix-sglang30401.txt",
      topo::io::TopoFormat::kAuto);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto s = NodeSelector::Create(*t, CostModelObjective(*t), {}, nullptr);
  ASSERT_TRUE(s.ok());
  NodeRequest r;
  r.gpus = 4;
  // Free 2-7: {2,3,4,5} and {4,5,6,7} are equally fast and leave equal pairs; only the second
  // stays on one socket.
  auto c = (*s)->SelectUncached(NumaMask({2, 3, 4, 5, 6, 7}), r);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->gpus, NumaMask({4, 5, 6, 7}));
  // Free 1-6, k = 3: {1,2,3} or {4,5,6}, never a set across both sockets.
  r.gpus = 3;
  c = (*s)->SelectUncached(NumaMask({1, 2, 3, 4, 5, 6}), r);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->gpus == NumaMask({1, 2, 3}) || c->gpus == NumaMask({4, 5, 6}));
}

}  // namespace
}  // namespace toposched::sched
