#include "cost/node_cost.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "topo/synthetic.h"

namespace toposched::cost {
namespace {

topo::NodeTopology Synth(const std::string& d) {
  auto t = topo::MakeSyntheticTopology(d);
  EXPECT_TRUE(t.ok()) << d << ": " << t.status().ToString();
  return *t;
}

std::vector<int> Range(int n) {
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

const double kNvEff = CostTables::Default().Efficiency(Transport::kNVLink);

struct RingCase {
  std::string topology;
  std::vector<int> gpus;
  double min_gbps, max_gbps;
  Transport bottleneck;
};

TEST(NodeCostTest, RingCapacityTable) {
  const std::vector<RingCase> cases = {
      // Switched fabric: the smallest port × NVLink efficiency, whatever the subset.
      {"gpu:8 nvswitch:18 model:H100", Range(8), 450 * kNvEff, 450 * kNvEff, Transport::kNVLink},
      {"gpu:8 nvswitch:18 model:H100", {1, 6}, 450 * kNvEff, 450 * kNvEff, Transport::kNVLink},
      {"gpu:8 nvswitch:12 model:A100", Range(8), 300 * kNvEff, 300 * kNvEff, Transport::kNVLink},
      {"gpu:8 nvswitch:18 model:B200", {0, 3, 5}, 900 * kNvEff, 900 * kNvEff, Transport::kNVLink},
      // DGX-1 cube-mesh: several rings over the 6 links per GPU (150 GB/s raw).
      {"gpu:8 cubemesh model:V100", Range(8), 0.85 * 150 * kNvEff, 150 * kNvEff,
       Transport::kNVLink},
      // A fully connected quad of the cube-mesh (4 links per GPU inside it).
      {"gpu:8 cubemesh model:V100",
       {0, 1, 2, 3},
       0.85 * 100 * kNvEff,
       100 * kNvEff,
       Transport::kNVLink},
      // 4 GPUs all-to-all NV6 (GH200 quad): 18 links per GPU.
      {"gpu:4 nvlink:6 model:GH200", Range(4), 0.85 * 450 * kNvEff, 450 * kNvEff,
       Transport::kNVLink},
      // A pair over one NV2 link bundle.
      {"gpu:8 cubemesh model:V100", {0, 1}, 50 * kNvEff, 50 * kNvEff, Transport::kNVLink},
      // GPU 0 and 5 share no NVLink and sit on different sockets: SHM through the host.
      {"gpu:8 cubemesh sockets:2 model:V100", {0, 5}, 1, 16, Transport::kShm},
      // PCIe only, 2 sockets: the ring must cross the sockets (SHM).
      {"gpu:8 pcie sockets:2 model:L40", Range(8), 10, 16, Transport::kShm},
      // PCIe only, one switch pair: P2P through the switch.
      {"gpu:8 pcie sockets:2 model:L40", {0, 1}, 31.5 * 0.7, 31.5 * 0.85, Transport::kPcieP2P},
  };
  for (const RingCase& c : cases) {
    NodeCostModel m(Synth(c.topology));
    std::vector<int> order(c.gpus.size());
    NodeCostModel::Ring r = m.BestRing(c.gpus, order.data());
    SCOPED_TRACE(c.topology);
    EXPECT_GE(r.gbps, c.min_gbps - 1e-9);
    EXPECT_LE(r.gbps, c.max_gbps + 1e-9);
    ASSERT_GE(r.from, 0);
    EXPECT_EQ(m.EdgeTransport(r.from, r.to), c.bottleneck);
    std::vector<int> sorted_order = order, sorted_gpus = c.gpus;
    std::sort(sorted_order.begin(), sorted_order.end());
    std::sort(sorted_gpus.begin(), sorted_gpus.end());
    EXPECT_EQ(sorted_order, sorted_gpus) << "ring order is a permutation of the set";
  }
}

TEST(NodeCostTest, SwitchedFabricIgnoresPairCountsBeyondThePort) {
  // NV18 between every pair of an NVSwitch node does not mean 18 links per pair: a GPU's 8-way
  // ring still gets only its own port.
  NodeCostModel m(Synth("gpu:8 nvswitch:18 model:H100"));
  EXPECT_TRUE(m.switched());
  EXPECT_DOUBLE_EQ(m.PortRawGbps(0), 450);
  EXPECT_DOUBLE_EQ(m.RingBusBwGbps(Range(8)), m.RingBusBwGbps(std::vector<int>{0, 1}));
}

TEST(NodeCostTest, PairTransportsFollowPathClasses) {
  NodeCostModel m(Synth("gpu:8 pcie sockets:2 switches:4 model:L40"));
  EXPECT_EQ(m.EdgePath(0, 1), "PIX");
  EXPECT_EQ(m.EdgeTransport(0, 1), Transport::kPcieP2P);
  EXPECT_EQ(m.EdgeTransport(0, 2), Transport::kPcieP2P);  // NODE: P2P through the socket
  EXPECT_EQ(m.EdgePath(0, 7), "SYS");
  EXPECT_EQ(m.EdgeTransport(0, 7), Transport::kShm);
  EXPECT_GT(m.EdgeGbps(0, 1), m.EdgeGbps(0, 7));
  EXPECT_LT(m.EdgeLatencyUs(0, 1), m.EdgeLatencyUs(0, 7));
}

TEST(NodeCostTest, NvlsOnlyWithNvlink4SwitchedFabric) {
  EXPECT_GT(NodeCostModel(Synth("gpu:8 nvswitch:18 model:H100")).NvlsBusBwGbps(Range(8)), 400);
  EXPECT_GT(NodeCostModel(Synth("gpu:8 nvswitch:18 model:B200")).NvlsBusBwGbps(Range(8)), 800);
  EXPECT_EQ(NodeCostModel(Synth("gpu:8 nvswitch:12 model:A100")).NvlsBusBwGbps(Range(8)), 0);
  EXPECT_EQ(NodeCostModel(Synth("gpu:4 nvlink:6 model:GH200")).NvlsBusBwGbps(Range(4)), 0);
  EXPECT_EQ(NodeCostModel(Synth("gpu:8 nvswitch:18 model:H100")).NvlsBusBwGbps(Range(1)), 0);
}

TEST(NodeCostTest, FastAllReduceTimeAgreesForSpanAndMask) {
  for (const char* d : {"gpu:8 nvswitch:18 model:H100", "gpu:8 cubemesh model:V100",
                        "gpu:8 pcie sockets:2 model:L40"}) {
    NodeCostModel m(Synth(d));
    std::vector<int> set = {0, 2, 3, 6};
    const double bytes = 1 << 30;
    EXPECT_DOUBLE_EQ(m.AllReduceTimeMs(set, bytes), m.AllReduceTimeMs(uint64_t{0b01001101}, bytes))
        << d;
    EXPECT_GT(m.AllReduceTimeMs(set, bytes), 0) << d;
    EXPECT_EQ(m.AllReduceTimeMs(std::vector<int>{3}, bytes), 0) << d;
    // More bytes, more time; the latency floor shows at 0 bytes.
    EXPECT_LT(m.AllReduceTimeMs(set, bytes), m.AllReduceTimeMs(set, 2 * bytes)) << d;
    EXPECT_GT(m.AllReduceTimeMs(set, 0), 0) << d;
  }
}

TEST(NodeCostTest, NetworkSideOfGpus) {
  NodeCostModel p5(Synth("gpu:8 nvswitch:18 model:H100 nics:32 nic_gbps:100 linklayer:roce"));
  EXPECT_EQ(p5.NicsOf(0).size(), 8u);  // every EFA NIC behind the GPU's switch
  EXPECT_TRUE(p5.Gdr(0));
  EXPECT_EQ(p5.NetTransport(0), Transport::kNetIB);
  NodeCostModel ib(Synth("gpu:8 nvswitch:12 model:A100 nics:8 nic_gbps:200 linklayer:ib"));
  EXPECT_NEAR(ib.NetGbps(0), 2 * 25 * CostTables::Default().Efficiency(Transport::kNetIB), 1e-9);
  // One NIC on socket 0: GPUs of socket 1 reach it over SYS, without GPUDirect RDMA.
  NodeCostModel far(Synth("gpu:8 pcie sockets:2 nics:1 nic_gbps:200 linklayer:ib model:L40"));
  EXPECT_TRUE(far.Gdr(0));
  EXPECT_FALSE(far.Gdr(7));
  EXPECT_LT(far.NetGbps(7), far.NetGbps(0));
  NodeCostModel eth(Synth("gpu:4 nvlink:6 nics:4 nic_gbps:100 linklayer:ethernet model:GH200"));
  EXPECT_EQ(eth.NetTransport(0), Transport::kNetSocket);
  NodeCostModel none(Synth("gpu:8 nvswitch:18 model:H100"));
  EXPECT_TRUE(none.NicsOf(0).empty());
  EXPECT_EQ(none.NetTransport(0), Transport::kNetSocket);
  EXPECT_EQ(none.NicName(-1), "host-eth");
}

// Exact bottleneck search against brute force over all permutations.
TEST(BottleneckCycleTest, ExactMatchesBruteForce) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> val(0, 9);
  for (int k = 2; k <= 7; ++k) {
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<double> cap(k * k, 0);
      for (int i = 0; i < k; ++i)
        for (int j = 0; j < k; ++j)
          if (i != j) cap[i * k + j] = val(rng);
      std::vector<int> perm(k - 1);
      std::iota(perm.begin(), perm.end(), 1);
      double brute = 0;
      do {
        double b = cap[0 * k + perm[0]];
        for (int i = 0; i + 1 < k - 1; ++i) b = std::min(b, cap[perm[i] * k + perm[i + 1]]);
        b = std::min(b, cap[perm.back() * k + 0]);
        brute = std::max(brute, b);
      } while (std::next_permutation(perm.begin(), perm.end()));
      std::vector<int> order(k);
      double got = BottleneckCycle(k, cap.data(), order.data());
      EXPECT_DOUBLE_EQ(got, brute) << "k=" << k;
      if (got > 0) {
        double check = 1e18;
        for (int i = 0; i < k; ++i) check = std::min(check, cap[order[i] * k + order[(i + 1) % k]]);
        EXPECT_DOUBLE_EQ(check, got);
      }
    }
  }
}

TEST(BottleneckCycleTest, HeuristicBeyondExactLimitFindsAValidCycle) {
  const int k = 14;
  std::vector<double> cap(k * k, 1.0);
  // A hidden wide ring 0 -> 2 -> 4 ... -> 13 -> 0 (even then odd).
  std::vector<int> wide;
  for (int i = 0; i < k; i += 2) wide.push_back(i);
  for (int i = 1; i < k; i += 2) wide.push_back(i);
  for (int i = 0; i < k; ++i) cap[wide[i] * k + wide[(i + 1) % k]] = 5.0;
  std::vector<int> order(k);
  double got = BottleneckCycle(k, cap.data(), order.data());
  EXPECT_GE(got, 1.0);
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < k; ++i) EXPECT_EQ(sorted[i], i);
}

}  // namespace
}  // namespace toposched::cost
