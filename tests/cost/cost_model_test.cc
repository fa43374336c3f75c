#include "cost/cost_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "cost/test_cluster.h"
#include "testing/status_matchers.h"
#include "topo/synthetic.h"

namespace toposched::cost {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

using testing::MakeCluster;

constexpr double kGiB = 1073741824.0;

std::vector<GpuRef> Gpus(int nodes, int per_node) {
  std::vector<GpuRef> out;
  for (int n = 0; n < nodes; ++n)
    for (int g = 0; g < per_node; ++g) out.push_back(GpuRef{n, g});
  return out;
}

// The seed example of the issue: 1 GiB AllReduce over 8 GPUs on full NVLink, over PCIe, and
// across two nodes over 200 Gb/s InfiniBand. Ranges from published nccl-tests results.
struct SeedCase {
  std::string name;
  std::string topology;
  int nodes;
  Algorithm algorithm;
  double busbw_min, busbw_max;
  double ms_min, ms_max;
  std::string expect_algorithm;
  Transport bottleneck;
};

TEST(CostModelTest, SeedExample) {
  const std::vector<SeedCase> cases = {
      // Published: 479 GB/s with NVLS (Azure ND H100 v5), ~360-390 ring.
      {"8x H100 NVSwitch", "gpu:8 nvswitch:18 model:H100", 1, Algorithm::kAuto, 440, 480, 3.9, 4.5,
       "nvls", Transport::kNVLink},
      {"8x H100 NVSwitch, ring", "gpu:8 nvswitch:18 model:H100", 1, Algorithm::kRing, 340, 390, 4.8,
       5.6, "ring", Transport::kNVLink},
      // PCIe gen4, two sockets: the ring crosses the socket interconnect through host memory.
      {"8x PCIe gen4, 2 sockets", "gpu:8 pcie sockets:2 model:L40", 1, Algorithm::kAuto, 10, 20, 90,
       190, "ring", Transport::kShm},
      // 2x DGX A100, 8x HDR: the deepops sample publishes 181.6 GB/s at 1 GiB (ring, 2020 NCCL);
      // current NCCL uses the tree at two nodes, which sends each byte over the network once.
      {"2x 8 A100, 8x HDR IB", "gpu:8 nvswitch:12 model:A100 nics:8 nic_gbps:200 linklayer:ib", 2,
       Algorithm::kAuto, 160, 240, 8, 12.5, "tree", Transport::kNVLink},
      {"2x 8 A100, 8x HDR IB, ring",
       "gpu:8 nvswitch:12 model:A100 nics:8 nic_gbps:200 linklayer:ib", 2, Algorithm::kRing, 170,
       192, 10, 12, "ring", Transport::kNetIB},
  };
  for (const SeedCase& c : cases) {
    SCOPED_TRACE(c.name);
    topo::Cluster cl = MakeCluster(c.topology, c.nodes);
    CostModel m(cl);
    auto est = m.Evaluate(Collective::kAllReduce, Gpus(c.nodes, 8), kGiB, c.algorithm);
    ASSERT_TRUE(est.ok()) << est.status().ToString();
    EXPECT_GE(est->busbw_gbps, c.busbw_min);
    EXPECT_LE(est->busbw_gbps, c.busbw_max);
    EXPECT_GE(est->time_ms, c.ms_min);
    EXPECT_LE(est->time_ms, c.ms_max);
    EXPECT_EQ(AlgorithmName(est->algorithm), c.expect_algorithm);
    EXPECT_EQ(est->bottleneck.transport, c.bottleneck);
    EXPECT_NEAR(est->busbw_gbps, est->algbw_gbps * 2 * (8.0 * c.nodes - 1) / (8.0 * c.nodes), 1e-9);
    EXPECT_EQ(est->ranks, 8 * c.nodes);
    EXPECT_EQ(est->nodes, c.nodes);
  }
}

TEST(CostModelTest, NamesRoundTrip) {
  for (Collective c : {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                       Collective::kAllToAll, Collective::kSendRecv}) {
    auto p = ParseCollective(CollectiveName(c));
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(*p, c);
  }
  for (Algorithm a : {Algorithm::kAuto, Algorithm::kRing, Algorithm::kTree,
                      Algorithm::kHierarchical, Algorithm::kNvls, Algorithm::kDirect}) {
    auto p = ParseAlgorithm(AlgorithmName(a));
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(*p, a);
  }
  EXPECT_EQ(*ParseCollective("all_reduce"), Collective::kAllReduce);
  EXPECT_EQ(*ParseCollective("All-Gather"), Collective::kAllGather);
  EXPECT_EQ(*ParseCollective("p2p"), Collective::kSendRecv);
  EXPECT_THAT(
      ParseCollective("broadcast"),
      StatusIs(StatusCode::kInvalidArgument, HasSubstr("unknown collective \"broadcast\"")));
  EXPECT_THAT(ParseAlgorithm("collnet"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("unknown algorithm \"collnet\"")));
  EXPECT_STREQ(TransportName(Transport::kNetIB), "NET/IB");
  EXPECT_STREQ(TransportName(Transport::kPcieP2P), "PCIe P2P");
}

TEST(CostModelTest, BusFactors) {
  struct F {
    Collective c;
    int n;
    double want;
  };
  for (const F& f : std::vector<F>{{Collective::kAllReduce, 8, 1.75},
                                   {Collective::kAllReduce, 2, 1.0},
                                   {Collective::kAllGather, 8, 0.875},
                                   {Collective::kReduceScatter, 4, 0.75},
                                   {Collective::kAllToAll, 16, 0.9375},
                                   {Collective::kSendRecv, 8, 1.0},
                                   {Collective::kAllReduce, 1, 0.0}}) {
    EXPECT_DOUBLE_EQ(BusFactor(f.c, f.n), f.want) << CollectiveName(f.c) << " " << f.n;
  }
}

TEST(CostModelTest, BadInput) {
  topo::Cluster cl = MakeCluster("gpu:8 nvswitch:18 model:H100", 2);
  CostModel m(cl);
  std::vector<GpuRef> empty;
  EXPECT_THAT(m.Evaluate(Collective::kAllReduce, empty, kGiB),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("cost: empty GPU set")));
  std::vector<GpuRef> dup = {{0, 1}, {0, 1}};
  EXPECT_THAT(
      m.Evaluate(Collective::kAllReduce, dup, kGiB),
      StatusIs(StatusCode::kInvalidArgument, HasSubstr("cost: GPU gpu001/GPU1 listed twice")));
  std::vector<GpuRef> bad_node = {{0, 1}, {5, 1}};
  EXPECT_THAT(m.Evaluate(Collective::kAllReduce, bad_node, kGiB),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("cost: node id 5 out of range")));
  std::vector<GpuRef> bad_gpu = {{0, 1}, {0, 8}};
  EXPECT_THAT(m.Evaluate(Collective::kAllReduce, bad_gpu, kGiB),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("cost: node \"gpu001\" has no GPU position 8")));
  std::vector<GpuRef> ok = Gpus(1, 8);
  EXPECT_THAT(m.Evaluate(Collective::kAllReduce, ok, -1),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("cost: bytes must be a finite number >= 0")));
  EXPECT_THAT(
      m.Evaluate(Collective::kAllGather, ok, kGiB, Algorithm::kTree),
      StatusIs(StatusCode::kInvalidArgument, HasSubstr("cost: tree applies to allreduce only")));
  EXPECT_THAT(m.Evaluate(Collective::kAllToAll, ok, kGiB, Algorithm::kRing),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("cost: alltoall has only the direct algorithm")));
  EXPECT_THAT(
      m.Evaluate(Collective::kAllReduce, ok, kGiB, Algorithm::kDirect),
      StatusIs(StatusCode::kInvalidArgument, HasSubstr("cost: allreduce has no direct algorithm")));
  EXPECT_THAT(m.Evaluate(Collective::kAllReduce, ok, kGiB, Algorithm::kHierarchical),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("cost: hierarchical needs GPUs on 2+ nodes")));
  topo::Cluster a100 = MakeCluster("gpu:8 nvswitch:12 model:A100", 1);
  EXPECT_THAT(
      CostModel(a100).Evaluate(Collective::kAllReduce, ok, kGiB, Algorithm::kNvls),
      StatusIs(StatusCode::kInvalidArgument,
               HasSubstr("cost: nvls needs every GPU on one NVSwitch fabric with NVLink SHARP")));
}

// A bad set is refused naming its first bad GPU in the order given, whatever comes after it,
// by Evaluate and TimeMs alike.
TEST(CostModelTest, ABadSetNamesItsFirstBadGpu) {
  topo::Cluster cl = MakeCluster("gpu:8 nvswitch:18 model:H100", 2);
  CostModel m(cl);
  const std::vector<std::pair<std::vector<GpuRef>, std::string>> cases = {
      {{{0, 1}, {1, 2}, {0, 1}, {9, 0}}, "cost: GPU gpu001/GPU1 listed twice"},
      {{{0, 1}, {9, 0}, {0, 1}}, "cost: node id 9 out of range"},
      {{{1, 3}, {1, 8}, {1, 3}}, "cost: node \"gpu002\" has no GPU position 8"},
      {{{1, 3}, {0, -1}}, "cost: node \"gpu001\" has no GPU position -1"},
      {{{-1, 0}, {1, 3}, {1, 3}}, "cost: node id -1 out of range"},
  };
  for (const auto& [set, message] : cases) {
    auto e = m.Evaluate(Collective::kAllReduce, set, kGiB);
    auto t = m.TimeMs(Collective::kAllReduce, set, kGiB);
    ASSERT_THAT(e, StatusIs(StatusCode::kInvalidArgument, message)) << message;
    ASSERT_THAT(t, StatusIs(StatusCode::kInvalidArgument, message)) << message;
  }
}

TEST(CostModelTest, SingleGpuCostsNothing) {
  auto m = CostModel::ForNode(*topo::MakeSyntheticTopology("gpu:8 nvswitch:18 model:H100"));
  std::vector<GpuRef> one = {{0, 3}};
  auto est = m->Evaluate(Collective::kAllReduce, one, kGiB);
  ASSERT_TRUE(est.ok());
  EXPECT_EQ(est->time_ms, 0);
  EXPECT_EQ(est->busbw_gbps, 0);
  EXPECT_EQ(est->ranks, 1);
}

TEST(CostModelTest, RingHopsAndNamesOnOneNode) {
  auto m = CostModel::ForNode(*topo::MakeSyntheticTopology("gpu:8 nvswitch:18 model:H100"));
  std::vector<GpuRef> set = {{0, 0}, {0, 1}, {0, 2}, {0, 3}};
  auto est = m->Evaluate(Collective::kAllReduce, set, kGiB, Algorithm::kRing);
  ASSERT_TRUE(est.ok());
  ASSERT_EQ(est->hops.size(), 4u);
  EXPECT_EQ(est->hops[0].from, "GPU0");
  EXPECT_EQ(est->hops[0].path, "NV18");
  EXPECT_EQ(est->hops[3].to, "GPU0");
  EXPECT_EQ(est->bottleneck.transport, Transport::kNVLink);
  EXPECT_EQ(est->order.size(), 4u);
}

TEST(CostModelTest, OtherCollectivesOnOneNode) {
  auto m = CostModel::ForNode(*topo::MakeSyntheticTopology("gpu:8 nvswitch:18 model:H100"));
  std::vector<GpuRef> set = Gpus(1, 8);
  const double port = 450 * CostTables::Default().Efficiency(Transport::kNVLink);
  for (Collective c : {Collective::kAllGather, Collective::kReduceScatter, Collective::kAllToAll,
                       Collective::kSendRecv}) {
    auto est = m->Evaluate(c, set, 4 * kGiB);
    ASSERT_TRUE(est.ok()) << CollectiveName(c);
    // With large messages every collective is bound by the GPU's port into the switches.
    EXPECT_NEAR(est->busbw_gbps, port, 0.02 * port) << CollectiveName(c);
  }
}

TEST(CostModelTest, MultiNodeRingIsBoundByTheNics) {
  topo::Cluster cl =
      MakeCluster("gpu:8 nvswitch:18 model:H100 nics:8 nic_gbps:400 linklayer:ib", 4);
  CostModel m(cl);
  auto est = m.Evaluate(Collective::kAllReduce, Gpus(4, 8), 8 * kGiB, Algorithm::kRing);
  ASSERT_TRUE(est.ok());
  const double nic_total = 8 * 50 * CostTables::Default().Efficiency(Transport::kNetIB);
  const double port = 450 * CostTables::Default().Efficiency(Transport::kNVLink);
  EXPECT_NEAR(est->busbw_gbps, std::min(nic_total, port), 0.03 * nic_total);
  EXPECT_EQ(est->nodes, 4);
  EXPECT_EQ(est->hops.size(), 32u);  // 28 NVLink hops + 4 network hops
  EXPECT_EQ(est->hops[7].path, "NET");
  EXPECT_EQ(est->hops[7].from, "gpu001/GPU7");
  EXPECT_EQ(est->hops[7].to, "gpu002/GPU0");
}

TEST(CostModelTest, OversubscribedSpineSlowsCrossLeafRings) {
  const std::string d = "gpu:8 nvswitch:12 model:A100 nics:8 nic_gbps:200 linklayer:ib";
  topo::Cluster one_leaf = MakeCluster(d, 4, 1, 4.0);
  topo::Cluster two_leaves = MakeCluster(d, 4, 2, 4.0);
  auto a = CostModel(one_leaf).Evaluate(Collective::kAllReduce, Gpus(4, 8), kGiB, Algorithm::kRing);
  auto b =
      CostModel(two_leaves).Evaluate(Collective::kAllReduce, Gpus(4, 8), kGiB, Algorithm::kRing);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NEAR(b->busbw_gbps * 4, a->busbw_gbps, 0.05 * a->busbw_gbps);
  EXPECT_EQ(b->bottleneck.path, "NET");
}

// Two DGX-H100-like nodes (NIC i next to GPU i) on a network with 2:1 leaf uplinks, rails per
// spine. Half a node on each: GPUs 0-3 on both nodes keep every NIC on its rail; GPUs 0-3 and
// 4-7 put NICs 0-3 against 4-7, so every channel climbs above the rail switches.
topo::Cluster RailCluster(int leaves) {
  topo::Cluster cl =
      MakeCluster("gpu:8 nvswitch:18 model:H100 nics:8 nic_gbps:400 linklayer:ib", 2, leaves, 2.0);
  cl.rails = {8, "spine"};
  cl.Finalize();
  return cl;
}

std::vector<GpuRef> HalfNodes(int second_first_gpu) {
  std::vector<GpuRef> out;
  for (int g = 0; g < 4; ++g) out.push_back(GpuRef{0, g});
  for (int g = 0; g < 4; ++g) out.push_back(GpuRef{1, second_first_gpu + g});
  return out;
}

TEST(CostModelTest, CrossRailTrafficPaysTheRailSwitchUplinks) {
  const double nics4 = 4 * 50 * CostTables::Default().Efficiency(Transport::kNetIB);
  topo::Cluster one_leaf = RailCluster(1);
  CostModel m(one_leaf);
  for (Algorithm alg : {Algorithm::kRing, Algorithm::kTree, Algorithm::kHierarchical}) {
    auto aligned = m.Evaluate(Collective::kAllReduce, HalfNodes(0), kGiB, alg);
    auto crossed = m.Evaluate(Collective::kAllReduce, HalfNodes(4), kGiB, alg);
    ASSERT_TRUE(aligned.ok() && crossed.ok()) << AlgorithmName(alg);
    // Ring and tree are bound by the network; hierarchical also spends time inside the nodes.
    if (alg == Algorithm::kHierarchical) {
      EXPECT_GT(crossed->time_ms / aligned->time_ms, 1.4);
    } else {
      EXPECT_NEAR(crossed->time_ms / aligned->time_ms, 2.0, 0.1) << AlgorithmName(alg);
    }
    EXPECT_EQ(crossed->bottleneck.path, "NET") << AlgorithmName(alg);
  }
  auto ring = m.Evaluate(Collective::kAllReduce, HalfNodes(0), 8 * kGiB, Algorithm::kRing);
  ASSERT_TRUE(ring.ok());
  EXPECT_NEAR(ring->bottleneck.bandwidth_gbps, nics4, 0.01 * nics4);
  // Point to point: GPU 0 to GPU 0 stays on rail 0; GPU 0 to GPU 5 crosses to rail 5.
  auto same = m.Evaluate(Collective::kSendRecv, std::vector<GpuRef>{{0, 0}, {1, 0}}, kGiB);
  auto other = m.Evaluate(Collective::kSendRecv, std::vector<GpuRef>{{0, 0}, {1, 5}}, kGiB);
  ASSERT_TRUE(same.ok() && other.ok());
  EXPECT_NEAR(other->bottleneck.bandwidth_gbps * 2, same->bottleneck.bandwidth_gbps, 1e-9);
  auto a2a_same = m.Evaluate(Collective::kAllToAll, HalfNodes(0), kGiB);
  auto a2a_other = m.Evaluate(Collective::kAllToAll, HalfNodes(4), kGiB);
  ASSERT_TRUE(a2a_same.ok() && a2a_other.ok());
  EXPECT_GT(a2a_other->time_ms, 1.5 * a2a_same->time_ms);
  // Without rails NIC indices mean nothing: both sets cost the same (one leaf: no uplink).
  one_leaf.rails = {};
  one_leaf.Finalize();
  CostModel plain(one_leaf);
  auto a = plain.Evaluate(Collective::kAllReduce, HalfNodes(0), kGiB);
  auto b = plain.Evaluate(Collective::kAllReduce, HalfNodes(4), kGiB);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_DOUBLE_EQ(a->time_ms, b->time_ms);
  auto a_rails = m.Evaluate(Collective::kAllReduce, HalfNodes(0), kGiB);
  ASSERT_TRUE(a_rails.ok());
  EXPECT_NEAR(a->time_ms, a_rails->time_ms, 1e-9);
}

TEST(CostModelTest, SameRailTrafficSkipsOversubscribedLeafUplinks) {
  // The two nodes sit under different leaves of one spine. The tree alone charges the 2:1 leaf
  // uplink; rails per spine carry same-rail traffic on the rail switch, so an aligned set runs
  // as fast as inside one leaf and a crossed one pays the uplink.
  topo::Cluster two_leaves = RailCluster(2);
  ASSERT_NE(two_leaves.nodes[0].domain, two_leaves.nodes[1].domain);
  CostModel rails(two_leaves);
  topo::Cluster tree_only = two_leaves;
  tree_only.rails = {};
  tree_only.Finalize();
  CostModel tree(tree_only);
  auto full = [](const CostModel& m, const std::vector<GpuRef>& set) {
    auto e = m.Evaluate(Collective::kAllReduce, set, kGiB, Algorithm::kRing);
    EXPECT_TRUE(e.ok());
    return e.ok() ? e->time_ms : 0.0;
  };
  const double aligned = full(rails, HalfNodes(0));
  const double crossed = full(rails, HalfNodes(4));
  EXPECT_NEAR(full(tree, HalfNodes(0)), crossed, 1e-9);
  EXPECT_NEAR(crossed / aligned, 2.0, 0.1);
  EXPECT_NEAR(aligned, full(CostModel(RailCluster(1)), HalfNodes(0)), 1e-9);
  // Rails per leaf: the rail switches stop at the leaf, so the two leaves pay the tree.
  two_leaves.rails.scope_level = "leaf";
  two_leaves.Finalize();
  EXPECT_NEAR(full(CostModel(two_leaves), HalfNodes(0)), crossed, 1e-9);
}

TEST(CostModelTest, HierarchicalOnRequest) {
  topo::Cluster cl =
      MakeCluster("gpu:8 nvswitch:12 model:A100 nics:8 nic_gbps:200 linklayer:ib", 2);
  CostModel m(cl);
  auto h = m.Evaluate(Collective::kAllReduce, Gpus(2, 8), kGiB, Algorithm::kHierarchical);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->algorithm, Algorithm::kHierarchical);
  EXPECT_GT(h->busbw_gbps, 50);
  // Uneven GPU counts per node: no hierarchical algorithm.
  std::vector<GpuRef> uneven = {{0, 0}, {0, 1}, {1, 0}};
  EXPECT_THAT(m.Evaluate(Collective::kAllReduce, uneven, kGiB, Algorithm::kHierarchical),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("cost: hierarchical needs GPUs on 2+ nodes")));
  auto any = m.Evaluate(Collective::kAllReduce, uneven, kGiB);
  EXPECT_TRUE(any.ok());
}

TEST(CostModelTest, MultiNodeNvlinkDomainUsesNvlinkAndNvls) {
  topo::Cluster cl = MakeCluster("gpu:4 nvswitch:18 model:GB200 nics:4 nic_gbps:400 linklayer:ib",
                                 4, 1, 1.0, 4, 900);
  CostModel m(cl);
  auto est = m.Evaluate(Collective::kAllReduce, Gpus(4, 4), 4 * kGiB);
  ASSERT_TRUE(est.ok()) << est.status().ToString();
  EXPECT_EQ(est->algorithm, Algorithm::kNvls);
  EXPECT_GT(est->busbw_gbps, 800);
  auto ring = m.Evaluate(Collective::kAllReduce, Gpus(4, 4), 4 * kGiB, Algorithm::kRing);
  ASSERT_TRUE(ring.ok());
  EXPECT_EQ(ring->bottleneck.transport, Transport::kNVLink);
  bool mnnvl = false;
  for (const Hop& h : ring->hops) mnnvl = mnnvl || h.path == "MNNVL";
  EXPECT_TRUE(mnnvl);
}

TEST(CostModelTest, SendRecvAcrossNodesUsesTheNetwork) {
  topo::Cluster cl =
      MakeCluster("gpu:8 nvswitch:18 model:H100 nics:8 nic_gbps:400 linklayer:ib", 2);
  CostModel m(cl);
  std::vector<GpuRef> pair = {{0, 0}, {1, 0}};
  auto est = m.Evaluate(Collective::kSendRecv, pair, kGiB);
  ASSERT_TRUE(est.ok());
  EXPECT_EQ(est->algorithm, Algorithm::kDirect);
  EXPECT_EQ(est->bottleneck.transport, Transport::kNetIB);
  EXPECT_EQ(est->bottleneck.path, "NET");
  // GPU0 has the two NICs of its PCIe switch to itself.
  EXPECT_NEAR(est->busbw_gbps, 2 * 50 * CostTables::Default().Efficiency(Transport::kNetIB), 2);
}

TEST(CostModelTest, NodesWithoutNicsTalkOverSockets) {
  topo::Cluster cl = MakeCluster("gpu:8 nvswitch:18 model:H100", 2);
  auto est = CostModel(cl).Evaluate(Collective::kAllReduce, Gpus(2, 8), kGiB);
  ASSERT_TRUE(est.ok());
  EXPECT_EQ(est->bottleneck.transport, Transport::kNetSocket);
  EXPECT_LT(est->busbw_gbps, 10);
}

TEST(CostModelTest, AutoNeverSlowerThanAnyAlgorithm) {
  topo::Cluster cl =
      MakeCluster("gpu:8 nvswitch:18 model:H100 nics:8 nic_gbps:400 linklayer:ib", 2);
  CostModel m(cl);
  for (double bytes : {1e3, 1e6, 1e9}) {
    auto best = m.Evaluate(Collective::kAllReduce, Gpus(2, 8), bytes);
    ASSERT_TRUE(best.ok());
    for (Algorithm a : {Algorithm::kRing, Algorithm::kTree, Algorithm::kHierarchical}) {
      auto e = m.Evaluate(Collective::kAllReduce, Gpus(2, 8), bytes, a);
      ASSERT_TRUE(e.ok()) << AlgorithmName(a);
      EXPECT_LE(best->time_ms, e->time_ms + 1e-12) << AlgorithmName(a) << " " << bytes;
    }
  }
}

// Three nodes: the middle island is the root of both double-binary trees; naming the tree's
// bottleneck hop must not index island -1 (it crashed).
TEST(CostModelTest, TreeOverAnOddNumberOfNodes) {
  topo::Cluster cl =
      MakeCluster("gpu:8 nvswitch:18 model:H100 nics:1 nic_gbps:100 linklayer:ib", 3);
  CostModel m(cl);
  auto t = m.Evaluate(Collective::kAllReduce, Gpus(3, 8), kGiB, Algorithm::kTree);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->nodes, 3);
  EXPECT_GT(t->time_ms, 0);
  EXPECT_EQ(t->bottleneck.path, "NET");
}

// TimeMs is Evaluate's time without the names: on rails, on two leaves, inside NVLink domains,
// over PCIe and sockets, for every collective and algorithm, random sets in random rank order
// give the same number to the bit, and a refused set gives the same error.
TEST(CostModelTest, TimeMsIsEvaluatesTimeWithoutTheNames) {
  std::vector<topo::Cluster> clusters = {
      RailCluster(2),
      MakeCluster("gpu:8 nvswitch:18 model:H100 nics:1 nic_gbps:100 linklayer:ib", 3, 2, 2.0),
      MakeCluster("gpu:4 nvswitch:18 model:GB200 nics:4 nic_gbps:400 linklayer:ib", 4, 2, 2.0, 2,
                  900),
      MakeCluster("gpu:8 pcie sockets:2 model:L40", 2),
  };
  const std::vector<std::pair<Collective, Algorithm>> runs = {
      {Collective::kAllReduce, Algorithm::kAuto},
      {Collective::kAllReduce, Algorithm::kRing},
      {Collective::kAllReduce, Algorithm::kTree},
      {Collective::kAllReduce, Algorithm::kNvls},
      {Collective::kAllReduce, Algorithm::kNvlsTree},
      {Collective::kAllReduce, Algorithm::kHierarchical},
      {Collective::kAllGather, Algorithm::kAuto},
      {Collective::kReduceScatter, Algorithm::kRing},
      {Collective::kAllToAll, Algorithm::kAuto},
      {Collective::kSendRecv, Algorithm::kAuto},
      {Collective::kAllReduce, Algorithm::kDirect},
  };
  std::mt19937 rng(14);
  int compared = 0, refused = 0;
  for (const topo::Cluster& cl : clusters) {
    CostModel m(cl);
    std::vector<GpuRef> all;
    for (int n = 0; n < static_cast<int>(cl.nodes.size()); ++n) {
      for (int g = 0; g < m.node_model(n).num_gpus(); ++g) all.push_back(GpuRef{n, g});
    }
    for (int trial = 0; trial < 40; ++trial) {
      std::shuffle(all.begin(), all.end(), rng);
      const int k = 1 + static_cast<int>(rng() % all.size());
      const std::vector<GpuRef> set(all.begin(), all.begin() + k);
      for (const auto& [coll, alg] : runs) {
        for (double bytes : {0.0, 1e4, 1e9}) {
          auto e = m.Evaluate(coll, set, bytes, alg);
          auto t = m.TimeMs(coll, set, bytes, alg);
          ASSERT_EQ(e.ok(), t.ok()) << CollectiveName(coll) << " " << AlgorithmName(alg);
          if (!e.ok()) {
            EXPECT_EQ(e.status().ToString(), t.status().ToString());
            ++refused;
            continue;
          }
          EXPECT_EQ(e->time_ms, *t)
              << CollectiveName(coll) << " " << AlgorithmName(alg) << " k=" << k;
          ++compared;
        }
      }
    }
  }
  EXPECT_GT(compared, 2000);
  EXPECT_GT(refused, 100);
  const std::vector<GpuRef> twice = {{0, 0}, {0, 0}};
  CostModel m(clusters[0]);
  EXPECT_EQ(m.Evaluate(Collective::kAllReduce, twice, kGiB).status().ToString(),
            m.TimeMs(Collective::kAllReduce, twice, kGiB).status().ToString());
  EXPECT_THAT(m.TimeMs(Collective::kAllReduce, Gpus(2, 8), -1),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("cost: bytes must be a finite number >= 0")));
}

}  // namespace
}  // namespace toposched::cost
