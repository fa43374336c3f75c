#include "select/ring.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>

#include "topo/synthetic.h"

namespace toposched::sched {
namespace {

// Best (bottleneck, total) over every ring of `gpus`, by trying every permutation.
std::pair<double, double> BruteForce(const PairMatrix& w, std::vector<int> gpus) {
  std::sort(gpus.begin(), gpus.end());
  std::pair<double, double> best{-1, -1};
  do {
    Ring r = ScoreRing(w, gpus);
    if (r.bottleneck_gbps > best.first ||
        (r.bottleneck_gbps == best.first && r.total_gbps > best.second + 1e-9)) {
      best = {r.bottleneck_gbps, r.total_gbps};
    }
  } while (std::next_permutation(gpus.begin() + 1, gpus.end()));
  return best;
}

class RingTest : public ::testing::TestWithParam<const char*> {};

TEST_P(RingTest, SubsetRingsMatchBruteForce) {
  auto t = topo::MakeSyntheticTopology(GetParam());
  ASSERT_TRUE(t.ok());
  PairMatrix w(*t);
  std::vector<int> all(t->gpus.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  SubsetRings rings(w, all);
  for (uint32_t s = 1; s < (1u << all.size()); ++s) {
    if (std::popcount(s) < 2) continue;
    std::vector<int> gpus, order;
    for (size_t i = 0; i < all.size(); ++i) {
      if (s >> i & 1) gpus.push_back(static_cast<int>(i));
    }
    rings.RingOf(s, &order);
    std::vector<int> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_EQ(sorted, gpus);
    Ring r = ScoreRing(w, order);
    auto best = BruteForce(w, gpus);
    ASSERT_EQ(r.bottleneck_gbps, best.first) << GetParam() << " subset " << s;
    ASSERT_NEAR(r.total_gbps, best.second, 1e-6) << GetParam() << " subset " << s;
    ASSERT_FLOAT_EQ(rings.bottleneck_gbps(s), static_cast<float>(best.first));
  }
}

INSTANTIATE_TEST_SUITE_P(Synthetic, RingTest,
                         ::testing::Values("gpu:8 cubemesh model:V100",
                                           "gpu:8 pcie sockets:2 switches:4",
                                           "gpu:8 nvswitch:18 model:H100", "gpu:4 nvlink:6",
                                           "gpu:2 pcie"));

TEST(RingTest, LargeSetsGetAValidRing) {
  auto t = topo::MakeSyntheticTopology("gpu:24 pcie sockets:2 switches:6");
  ASSERT_TRUE(t.ok());
  PairMatrix w(*t);
  std::vector<int> all(24);
  for (int i = 0; i < 24; ++i) all[i] = i;
  Ring r = BestRing(w, all);
  std::vector<int> sorted = r.order;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, all);
  // Two sockets: a ring must cross SYS, and the best crosses it no more than twice.
  int sys = 0;
  for (int i = 0; i < 24; ++i) {
    if (t->gpu_gpu(r.order[i], r.order[(i + 1) % 24]).cls == topo::PathClass::kSYS) ++sys;
  }
  EXPECT_EQ(sys, 2);
  Ring g = GreedyRing(w, all);
  EXPECT_LE(g.total_gbps, r.total_gbps + 1e-9);
}

}  // namespace
}  // namespace toposched::sched
