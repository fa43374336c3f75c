#include "select/node_select.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>
#include <thread>

#include "testing/status_matchers.h"
#include "topo/synthetic.h"

namespace toposched::sched {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

topo::NodeTopology Synth(const std::string& d) {
  auto t = topo::MakeSyntheticTopology(d);
  EXPECT_TRUE(t.ok()) << d << ": " << t.status().ToString();
  return *t;
}

std::unique_ptr<NodeSelector> Make(const topo::NodeTopology& t, SelectionCache* cache = nullptr,
                                   NodeSelectOptions o = {}) {
  auto s = NodeSelector::Create(t, CostModelObjective(t), o, cache);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(s).value();
}

NodeRequest Req(int k, int tp = 1) {
  NodeRequest r;
  r.gpus = k;
  r.tp = tp;
  return r;
}

GpuMask Mask(std::initializer_list<int> p) { return GpuMask::FromPositions(std::vector<int>(p)); }

TEST(NodeRequestTest, Validate) {
  EXPECT_TRUE(Req(8, 4).Validate().ok());
  EXPECT_THAT(Req(0).Validate(), StatusIs(StatusCode::kInvalidArgument,
                                          HasSubstr("request: gpus must be at least 1")));
  EXPECT_THAT(Req(8, 3).Validate(), StatusIs(StatusCode::kInvalidArgument,
                                             HasSubstr("request: tp 3 does not divide gpus 8")));
  EXPECT_THAT(Req(8, 0).Validate(),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("request: tp must be at least 1")));
  NodeRequest r = Req(2);
  r.dp_bytes = -1;
  EXPECT_THAT(r.Validate(), StatusIs(StatusCode::kInvalidArgument,
                                     HasSubstr("request: bytes must be finite and non-negative")));
}

TEST(NodeSelectTest, NvSwitchTiesGoToLowestPositions) {
  auto t = Synth("gpu:8 nvswitch:18 model:H100");
  auto s = Make(t);
  auto c = s->SelectUncached(GpuMask::FirstN(8), Req(4));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->fit, Fit::kFit);
  EXPECT_EQ(c->method, "exact");
  EXPECT_EQ(c->gpus, Mask({0, 1, 2, 3}));
  c = s->SelectUncached(Mask({0, 1, 2, 5, 6, 7}), Req(3));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->gpus, Mask({0, 1, 2}));
}

TEST(NodeSelectTest, CubeMeshKeepsQuadsAndNvlinkPairs) {
  auto t = Synth("gpu:8 cubemesh model:V100");
  auto s = Make(t);
  auto c = s->SelectUncached(GpuMask::FirstN(8), Req(4));
  ASSERT_TRUE(c.ok());
  // A quad of the hybrid cube-mesh: every pair joined by NVLink.
  EXPECT_TRUE(c->gpus == Mask({0, 1, 2, 3}) || c->gpus == Mask({4, 5, 6, 7})) << c->gpus.ToString();
  c = s->SelectUncached(GpuMask::FirstN(8), Req(2));
  ASSERT_TRUE(c.ok());
  std::vector<int> p = c->gpus.Positions();
  EXPECT_EQ(t.gpu_gpu(p[0], p[1]).cls, topo::PathClass::kNV);
  EXPECT_EQ(t.gpu_gpu(p[0], p[1]).nvlinks, 2);
}

TEST(NodeSelectTest, CubeMeshTpGroupsAreQuadsInConsecutiveRanks) {
  auto t = Synth("gpu:8 cubemesh model:V100");
  auto s = Make(t);
  auto c = s->SelectUncached(GpuMask::FirstN(8), Req(8, 4));
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->order.size(), 8u);
  for (int g = 0; g < 2; ++g) {
    GpuMask group = GpuMask::FromPositions(std::span<const int>(c->order).subspan(4 * g, 4));
    EXPECT_TRUE(group == Mask({0, 1, 2, 3}) || group == Mask({4, 5, 6, 7})) << group.ToString();
    for (int r = 4 * g; r < 4 * g + 4; ++r) EXPECT_EQ(c->layout.ranks[r].tp_group, g);
  }
  EXPECT_GT(c->tp_ms, 0);
  EXPECT_DOUBLE_EQ(c->predicted_ms, c->dp_ms + c->tp_ms);
}

TEST(NodeSelectTest, PcieStaysOnOneSocket) {
  auto t = Synth("gpu:8 pcie sockets:2 switches:4 nics:4");
  auto s = Make(t);
  auto c = s->SelectUncached(GpuMask::FirstN(8), Req(4));
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->gpus == Mask({0, 1, 2, 3}) || c->gpus == Mask({4, 5, 6, 7})) << c->gpus.ToString();
  // Two GPUs: a pair under one switch (PIX).
  c = s->SelectUncached(GpuMask::FirstN(8), Req(2));
  ASSERT_TRUE(c.ok());
  std::vector<int> p = c->gpus.Positions();
  EXPECT_EQ(t.gpu_gpu(p[0], p[1]).cls, topo::PathClass::kPIX);
}

TEST(NodeSelectTest, TieBreakLeavesTheBestConnectedGpus) {
  // PCIe, one socket, 4 switches of 2 GPUs. Free: a whole switch {0,1}, a whole switch {2,3},
  // and single GPUs 4 and 6 on the other two switches. One GPU: every choice costs 0 ms; taking
  // 4 or 6 leaves both PIX pairs intact.
  auto t = Synth("gpu:8 pcie sockets:1 switches:4");
  auto s = Make(t);
  NodeRequest r = Req(2);
  auto c = s->SelectUncached(Mask({0, 1, 2, 3, 4, 6}), Req(1));
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->gpus == Mask({4}) || c->gpus == Mask({6})) << c->gpus.ToString();
  // Two GPUs: a PIX pair; either pair leaves the other PIX pair for the next job.
  c = s->SelectUncached(Mask({0, 1, 2, 3, 4, 6}), r);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->gpus == Mask({0, 1}) || c->gpus == Mask({2, 3})) << c->gpus.ToString();
  EXPECT_LT(c->followup_ms, s->SetTimeMs(Mask({4, 6}), r));
}

TEST(NodeSelectTest, NotEnoughGpusIsAVerdictNotAnError) {
  auto t = Synth("gpu:4 nvlink:6");
  auto s = Make(t);
  auto c = s->SelectUncached(Mask({0, 1}), Req(3));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->fit, Fit::kUnschedulable);
  EXPECT_TRUE(c->order.empty());
  c = s->SelectUncached(GpuMask::FirstN(4), Req(5));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->fit, Fit::kUnresolvable);
  EXPECT_THAT(
      s->SelectUncached(GpuMask::FirstN(4), Req(4, 3)),
      StatusIs(StatusCode::kInvalidArgument, HasSubstr("request: tp 3 does not divide gpus 4")));
}

TEST(NodeSelectTest, UnhealthyGpusAreNeverChosen) {
  auto t = Synth("gpu:8 nvswitch:18 model:H100");
  t.gpus[0].health = topo::Health::kUnhealthy;
  t.gpus[1].health = topo::Health::kUnhealthy;
  auto s = Make(t);
  auto c = s->SelectUncached(GpuMask::FirstN(8), Req(6));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->gpus, Mask({2, 3, 4, 5, 6, 7}));
  c = s->SelectUncached(GpuMask::FirstN(8), Req(7));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->fit, Fit::kUnresolvable);
}

TEST(NodeSelectTest, SixteenGpusExact) {
  auto t = Synth("gpu:16 pcie sockets:2 switches:8");
  auto s = Make(t);
  ASSERT_TRUE(s->exact());
  auto c = s->SelectUncached(GpuMask::FirstN(16), Req(8, 2));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->fit, Fit::kFit);
  // One socket holds 8 GPUs in 4 PIX pairs: TP pairs are the PIX pairs.
  EXPECT_TRUE(c->gpus == GpuMask::FirstN(8) ||
              c->gpus == (GpuMask::FirstN(16) ^ GpuMask::FirstN(8)))
      << c->gpus.ToString();
  for (int g = 0; g < 4; ++g) {
    EXPECT_EQ(t.gpu_gpu(c->order[2 * g], c->order[2 * g + 1]).cls, topo::PathClass::kPIX);
  }
}

TEST(NodeSelectTest, SeventyTwoGpuFabricUsesTheBeamAndPacks) {
  auto t = Synth("gpu:72 nvswitch:18 model:GB200");
  auto s = Make(t);
  EXPECT_FALSE(s->exact());
  auto c = s->SelectUncached(GpuMask::FirstN(72), Req(8, 4));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->method, "beam");
  EXPECT_EQ(c->gpus, GpuMask::FirstN(8));
  EXPECT_GT(c->predicted_ms, 0);
  // Few free GPUs: the exact method on the free pool.
  c = s->SelectUncached(Mask({3, 9, 17, 40, 41, 70}), Req(4));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->method, "pool");
  EXPECT_EQ(c->gpus, Mask({3, 9, 17, 40}));
  // The whole domain.
  c = s->SelectUncached(GpuMask::FirstN(72), Req(72, 4));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->gpus, GpuMask::FirstN(72));
  EXPECT_EQ(c->order.size(), 72u);
}

// On nodes too big for the tables but small enough to enumerate, the beam's choice is compared
// with the exhaustive optimum of the same set-time function.
TEST(NodeSelectTest, BeamMatchesExhaustiveOnMidSizedPcieNodes) {
  for (const char* d : {"gpu:20 pcie sockets:2 switches:10", "gpu:24 pcie sockets:2 switches:4"}) {
    auto t = Synth(d);
    NodeSelectOptions o;
    o.exact_pool_max = 0;  // force the beam
    auto s = Make(t, nullptr, o);
    std::mt19937 rng(7);
    const int n = static_cast<int>(t.gpus.size());
    for (int trial = 0; trial < 12; ++trial) {
      GpuMask free;
      for (int i = 0; i < n; ++i) {
        if (rng() % 4 != 0) free.set(i);
      }
      const int k = 2 + trial % 3;
      if (free.count() < k) continue;
      auto c = s->SelectUncached(free, Req(k));
      ASSERT_TRUE(c.ok());
      EXPECT_EQ(c->method, "beam");
      std::vector<int> p = free.Positions();
      double best = 1e300;
      std::vector<int> idx(k);
      // Enumerate k-subsets of the free GPUs.
      std::function<void(int, int)> rec = [&](int from, int depth) {
        if (depth == k) {
          std::vector<int> set;
          for (int i : idx) set.push_back(p[i]);
          best = std::min(best, s->SetTimeMs(GpuMask::FromPositions(set), Req(k)));
          return;
        }
        for (int i = from; i < static_cast<int>(p.size()); ++i) {
          idx[depth] = i;
          rec(i + 1, depth + 1);
        }
      };
      rec(0, 0);
      EXPECT_NEAR(c->predicted_ms, best, 1e-9 * best)
          << d << " k=" << k << " free " << free.ToString();
    }
  }
}

TEST(NodeSelectTest, CacheReturnsTheSameResult) {
  auto t = Synth("gpu:8 cubemesh model:V100");
  SelectionCache cache;
  auto s = Make(t, &cache);
  auto a = s->Select(GpuMask::FirstN(8), Req(3));
  ASSERT_TRUE(a.ok());
  auto b = s->Select(GpuMask::FirstN(8), Req(3));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->get(), b->get());
  EXPECT_EQ(cache.hits(), 1u);
  EXPECT_EQ(cache.size(), 1u);
  // Another request or free mask is another entry.
  ASSERT_TRUE(s->Select(GpuMask::FirstN(7), Req(3)).ok());
  ASSERT_TRUE(s->Select(GpuMask::FirstN(8), Req(4, 2)).ok());
  EXPECT_EQ(cache.size(), 3u);
  // Another profile with the same question does not hit this profile's entry.
  auto t2 = Synth("gpu:8 nvswitch:18 model:H100");
  auto s2 = Make(t2, &cache);
  EXPECT_NE(s->fingerprint(), s2->fingerprint());
  auto c = s2->Select(GpuMask::FirstN(8), Req(3));
  ASSERT_TRUE(c.ok());
  EXPECT_NE(c->get(), a->get());
}

TEST(NodeSelectTest, ConcurrentSelectsAgree) {
  auto t = Synth("gpu:16 pcie sockets:2 switches:8");
  SelectionCache cache(64);  // small: forces drops while threads read
  auto s = Make(t, &cache);
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937 rng(w);
      for (int i = 0; i < 300; ++i) {
        GpuMask free(rng() & 0xFFFF, 0);
        if (free.count() < 2) continue;
        NodeRequest r = Req(2 + static_cast<int>(rng() % (free.count() - 1)));
        auto a = s->Select(free, r);
        auto b = s->SelectUncached(free, r);
        if (!a.ok() || !b.ok() || !((*a)->gpus == b->gpus)) ++bad[w];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int b : bad) EXPECT_EQ(b, 0);
}

TEST(SelectionCacheTest, DropsWhenFull) {
  SelectionCache cache(2);
  auto v = std::make_shared<const NodeChoice>();
  SelectionKey k1{1, GpuMask(1, 0), Req(1)}, k2{1, GpuMask(2, 0), Req(1)},
      k3{1, GpuMask(3, 0), Req(1)};
  cache.Insert(k1, v);
  cache.Insert(k2, v);
  EXPECT_EQ(cache.size(), 2u);
  cache.Insert(k3, v);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.Find(k1), nullptr);
  EXPECT_NE(cache.Find(k3), nullptr);
  EXPECT_EQ(cache.hits(), 1u);
  EXPECT_EQ(cache.misses(), 1u);
}

}  // namespace
}  // namespace toposched::sched
