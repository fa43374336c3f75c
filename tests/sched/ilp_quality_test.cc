// Placement quality against the exact ILP oracle (tests/sched/ilp_oracle.h): the oracle agrees
// with brute force on small clusters, and the gang placer is within 5% of the optimum on at
// least 95% of random cases on clusters of up to 16 nodes.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "placer/gang.h"
#include "placer/policy.h"
#include "sched/ilp_cases.h"
#include "sched/ilp_oracle.h"
#include "testing/alloc_ids.h"
#include "testing/status_matchers.h"

namespace toposched::sched::ilp {
namespace {

using ::testing::Not;
using ::toposched::testing::HasSubstr;

Shape& GetShape(const std::string& name) {
  auto s = LoadShapeTools(name);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return **s;
}

ClusterState RandomState(const topo::Cluster& c, std::mt19937_64& rng) {
  auto st = ClusterState::Create(c);
  EXPECT_TRUE(st.ok()) << st.status().ToString();
  Status occ = RandomOccupancy(*st, rng);
  EXPECT_TRUE(occ.ok()) << occ.ToString();
  return std::move(st).value();
}

TEST(IlpOracleTest, EmptyNodeHoldsATp8JobWhole) {
  Shape& s = GetShape("h100-4");
  auto state = ClusterState::Create(*s.cluster);
  ASSERT_TRUE(state.ok());
  job::JobSpec j;
  j.name = "tp8";
  j.layout.tp = 8;
  j.layout.dp = 1;
  j.model_params = 7e9;
  ASSERT_TRUE(j.Normalize().ok());
  OracleResult r = s.oracle->Solve(*state, j);
  ASSERT_EQ(r.status, OracleStatus::kOptimal) << r.reason;
  ASSERT_TRUE(r.placement);
  EXPECT_EQ(r.placement->parts.size(), 1u);
  EXPECT_EQ(r.tp_unit, 8);
  EXPECT_GT(r.placement->tp_ms, 0);
  EXPECT_NEAR(r.lower_bound_ms, r.placement->predicted_ms, 1e-9);
}

TEST(IlpOracleTest, TooLargeJobHasNoFitAndSpanningTpIsUnsupported) {
  Shape& s = GetShape("h100-4");
  auto state = ClusterState::Create(*s.cluster);
  ASSERT_TRUE(state.ok());
  job::JobSpec j;
  j.name = "big";
  j.layout.tp = 1;
  j.layout.dp = 33;
  j.model_params = 7e9;
  ASSERT_TRUE(j.Normalize().ok());
  EXPECT_EQ(s.oracle->Solve(*state, j).status, OracleStatus::kNoFit);
  // Leave 4 free GPUs on each node: a TP=8 job of 8 GPUs fits only across nodes.
  for (int n = 0; n < 4; ++n) {
    ASSERT_TRUE(state->Allocate(testing::Alloc(n + 1), {NodeGpus{n, GpuMask::FirstN(4)}}).ok());
  }
  job::JobSpec t8;
  t8.name = "t8";
  t8.layout.tp = 8;
  t8.layout.dp = 1;
  t8.model_params = 7e9;
  ASSERT_TRUE(t8.Normalize().ok());
  EXPECT_EQ(s.oracle->Solve(*state, t8).status, OracleStatus::kUnsupported);
}

// Both solvers' optimum equals the minimum over every count vector of the family.
TEST(IlpOracleTest, MatchesBruteForceOnFourNodes) {
  std::mt19937_64 rng(20261202);
  int optimal = 0;
  double secs[3] = {0, 0, 0};
  int glpk_optimal = 0;
  for (const std::string& shape : BruteForceShapes()) {
    Shape& s = GetShape(shape);
    for (int i = 0; i < 40; ++i) {
      ClusterState state = RandomState(*s.cluster, rng);
      job::JobSpec j = RandomJob(rng, 16);
      SCOPED_TRACE(shape + " case " + std::to_string(i) + ": " + DescribeJob(j) + " free " +
                   DescribeFree(state));
      auto t0 = std::chrono::steady_clock::now();
      OracleResult brute = s.oracle->BruteForce(state, j);
      auto t1 = std::chrono::steady_clock::now();
      OracleResult bb = s.oracle->SolveByBranchAndBound(state, j);
      auto t2 = std::chrono::steady_clock::now();
      // The GLPK program is slow (seconds per case): cross-check it on every fourth case.
      OracleResult ilp = i % 4 == 0 ? s.oracle->Solve(state, j) : bb;
      if (i % 4 == 0 && ilp.status == OracleStatus::kOptimal) ++glpk_optimal;
      auto t3 = std::chrono::steady_clock::now();
      secs[0] += std::chrono::duration<double>(t1 - t0).count();
      secs[1] += std::chrono::duration<double>(t2 - t1).count();
      secs[2] += std::chrono::duration<double>(t3 - t2).count();
      for (const OracleResult* r : {&bb, &ilp}) {
        ASSERT_EQ(r->status, brute.status) << r->reason << " / " << brute.reason;
        if (r->status != OracleStatus::kOptimal) continue;
        EXPECT_NEAR(r->placement->predicted_ms, brute.placement->predicted_ms,
                    1e-9 * brute.placement->predicted_ms);
        EXPECT_LE(r->lower_bound_ms, r->placement->predicted_ms * (1 + 1e-12));
      }
      if (brute.status == OracleStatus::kOptimal) ++optimal;
    }
  }
  std::printf(
      "brute force %.2f s, branch and bound %.2f s over %d optimal cases; GLPK %.2f s over %d\n",
      secs[0], secs[1], optimal, secs[2], glpk_optimal);
  EXPECT_GE(optimal, 30);  // the comparisons must not be vacuous
  EXPECT_GE(glpk_optimal, 8);
}

struct Quality {
  int cases = 0, fit = 0, within5 = 0, unsupported = 0, unproven = 0;
  double worst_ratio = 0;
  std::string worst;
};

// 240 random cases (jobs of 1..32 GPUs) on clusters of up to 16 nodes (fixed seed): the oracle
// proves an optimum for at least 80% of them within its budget, the placer fits exactly when the
// oracle does, its figure is the cost model's figure for its placement, and it is never below the
// optimum (that would prove the oracle wrong).
Quality RunQualityOnce() {
  std::mt19937_64 rng(7);
  Quality q;
  for (int i = 0; i < 240; ++i) {
    const std::string& shape = QualityShapes()[i % QualityShapes().size()];
    Shape& s = GetShape(shape);
    ClusterState state = RandomState(*s.cluster, rng);
    job::JobSpec j = RandomJob(rng, 32);
    ++q.cases;
    SCOPED_TRACE(shape + " case " + std::to_string(i) + ": " + DescribeJob(j));
    // A short search budget keeps the test fast; a case it cannot prove is counted, not judged.
    OracleOptions budget;
    budget.max_search_nodes = 20000;  // deterministic, unlike a time limit
    OracleResult r = s.oracle->SolveByBranchAndBound(state, j, budget);
    EXPECT_NE(r.status, OracleStatus::kError) << r.reason;
    Verdict v = s.placer->Place(state, j);
    if (r.status == OracleStatus::kUnsupported) {
      ++q.unsupported;
      continue;
    }
    if (r.status == OracleStatus::kUnproven) {
      ++q.unproven;
      if (r.placement && v.fit()) {
        EXPECT_GE(v.placement->predicted_ms, r.lower_bound_ms * (1 - 1e-9));
      }
      continue;
    }
    if (r.status != OracleStatus::kOptimal) {
      EXPECT_FALSE(v.fit()) << v.Explain();
      continue;
    }
    if (!v.fit()) {
      ADD_FAILURE() << "the oracle found " << r.placement->predicted_ms << " ms; " << v.Explain();
      continue;
    }
    Placement again = *v.placement;
    EXPECT_TRUE(s.oracle->Score(j, again));
    EXPECT_NEAR(again.predicted_ms, v.placement->predicted_ms, 1e-9 * again.predicted_ms);
    const double opt = r.placement->predicted_ms;
    const double got = v.placement->predicted_ms;
    EXPECT_GE(got, opt * (1 - 1e-9)) << "the placer beat the oracle: the oracle is wrong";
    ++q.fit;
    const double ratio = opt > 0 ? got / opt : 1.0;
    if (ratio <= 1.05 + 1e-12) ++q.within5;
    if (ratio > q.worst_ratio) {
      q.worst_ratio = ratio;
      q.worst = shape + " " + DescribeJob(j) + ": placer " + std::to_string(got) + " ms, optimum " +
                std::to_string(opt) + " ms";
    }
  }
  std::printf(
      "quality: %d cases, %d fit and proven, %d within 5%%, %d unsupported, %d unproven, worst "
      "%.4f (%s)\n",
      q.cases, q.fit, q.within5, q.unsupported, q.unproven, q.worst_ratio, q.worst.c_str());
  return q;
}

// "h01:0-3,5-6 h04: ..." (DescribeFree's form): every GPU not listed is taken.
ClusterState StateWithFree(const topo::Cluster& c, const std::string& free) {
  auto st = ClusterState::Create(c);
  EXPECT_TRUE(st.ok());
  std::map<std::string, GpuMask> masks;
  size_t at = 0;
  while (at < free.size()) {
    const size_t end = std::min(free.find(' ', at), free.size());
    const std::string item = free.substr(at, end - at);
    const size_t colon = item.find(':');
    GpuMask m;
    std::string list = item.substr(colon + 1);
    for (size_t i = 0; i < list.size();) {
      const size_t comma = std::min(list.find(',', i), list.size());
      const std::string r = list.substr(i, comma - i);
      const size_t dash = r.find('-');
      const int a = std::stoi(r.substr(0, dash));
      const int b = dash == std::string::npos ? a : std::stoi(r.substr(dash + 1));
      for (int g = a; g <= b; ++g) m.set(g);
      i = comma + 1;
    }
    masks[item.substr(0, colon)] = m;
    at = end + 1;
  }
  int64_t id = 1;
  for (size_t n = 0; n < c.nodes.size(); ++n) {
    const int node = static_cast<int>(n);
    const GpuMask taken = st->FreeMask(node) & ~masks[c.nodes[n].name];
    if (taken.count() > 0) {
      EXPECT_TRUE(st->Allocate(testing::Alloc(id++), {NodeGpus{node, taken}}).ok());
    }
  }
  return std::move(st).value();
}

// A TP-4 job of 7B parameters on the rails shape, DP `dp`.
job::JobSpec RailsScopeJob(int dp = 9) {
  job::JobSpec j;
  j.name = "rails";
  j.layout.tp = 4;
  j.layout.dp = dp;
  j.model_params = 7e9;
  EXPECT_TRUE(j.Normalize().ok());
  return j;
}

// On a rail-optimised network (rails under the spine, 2:1 leaves), traffic between the leaves on
// one rail crosses no leaf uplink: a 36-GPU TP-4 job on a fragmented leaf is faster on fewer,
// fuller nodes of both leaves, and the spine competes with the leaf. A case of the quality
// table where the leaf-first placer was 1.185x the optimum.
TEST(IlpQualityTest, OnRailsTheRailsScopeCompetesWithTheLowestDomain) {
  Shape& s = GetShape("h100-16-rails");
  ClusterState state = StateWithFree(
      *s.cluster,
      "h01:0-3,5-6 h02:0-1,4-7 h03:0-1,3,5-7 h04: h05:0-7 h06:0-2,4,6-7 h07:2-7 h08:0-7 h09: "
      "h10:0-1,4-7 h11:0,6 h12:0,2,6-7 h13:0,3-4,7 h14:0,2-3,7 h15:1-2,4-7 h16:4,6");
  const job::JobSpec j = RailsScopeJob();
  ASSERT_THAT(DescribeJob(j), HasSubstr("dp_bytes=3500000000")) << DescribeJob(j);
  OracleOptions opt;
  opt.search_time_limit_s = 20;
  OracleResult r = s.oracle->SolveByBranchAndBound(state, j, opt);
  ASSERT_EQ(r.status, OracleStatus::kOptimal) << r.reason;
  Verdict v = s.placer->Place(state, j);
  ASSERT_TRUE(v.fit());
  EXPECT_LE(v.placement->predicted_ms, r.placement->predicted_ms * 1.05)
      << v.placement->explanation << " against the optimum " << r.placement->predicted_ms;
  EXPECT_THAT(v.placement->explanation, HasSubstr("spine of the rails, faster than in one leaf"))
      << v.placement->explanation;
}

// Kueue's topology-aware scheduling knows no rails: the kueue-tas policy (rails "none") keeps a
// 16-GPU TP-4 job in the lowest domain that holds it, three nodes of leaf0 whose first free GPUs
// sit on other rails than their DP peers', where the rails plugin "align" would let the rails'
// scope compete and take two nodes across the leaves, 6x faster (a state drawn by RandomOccupancy
// on the rails shape, one of the first five where the two differ).
TEST(IlpQualityTest, OnRailsKueueTasKeepsToTheLowestDomain) {
  Shape& s = GetShape("h100-16-rails");
  ClusterState state = StateWithFree(
      *s.cluster,
      "h01:0-1,5,7 h02:4-5 h03:3-4 h04:0-1,3-4,6-7 h05:1,3 h06:0-7 h07:1,5 h08:0-1,3,6 "
      "h09:1,3-7 h10:0,2-4,6-7 h11:0-7 h12:0-3,5-6 h13:1,3-7 h14:1-2,4-5 h15:0,5 h16:0-1");
  const job::JobSpec j = RailsScopeJob(4);
  auto tas = PolicyOptions("kueue-tas");
  ASSERT_TRUE(tas.ok());
  EXPECT_EQ(tas->plugins.rails, "none");
  GangPlacerOptions aligned = *tas;
  aligned.plugins.rails = "align";
  struct Outcome {
    size_t leaves = 0;
    double ms = 0;
    std::string why;
  };
  auto place = [&](const GangPlacerOptions& o) {
    Outcome out;
    auto placer = GangPlacer::Create(*s.cluster, o);
    EXPECT_TRUE(placer.ok()) << placer.status().ToString();
    if (!placer.ok()) return out;
    Verdict v = (*placer)->Place(state, j);
    EXPECT_TRUE(v.fit()) << v.Explain();
    if (!v.fit()) return out;
    std::set<int> ls;
    for (const NodeGpus& g : v.placement->parts) ls.insert(s.cluster->nodes[g.node].domain);
    out.leaves = ls.size();
    out.ms = v.placement->predicted_ms;
    out.why = v.placement->explanation;
    return out;
  };
  const Outcome none = place(*tas);
  const Outcome align = place(aligned);
  EXPECT_EQ(none.leaves, 1u) << none.why;
  EXPECT_THAT(none.why, HasSubstr("in leaf0 (lowest leaf with room, best fit")) << none.why;
  EXPECT_THAT(none.why, Not(HasSubstr("of the rails"))) << none.why;
  EXPECT_EQ(align.leaves, 2u) << align.why;
  EXPECT_THAT(align.why, HasSubstr("spine of the rails, faster than in one leaf")) << align.why;
  EXPECT_LT(align.ms * 5, none.ms) << align.why << " against " << none.why;
}

// A job whole on one node whose layout the node selector's request does not describe: the
// rank order decides which GPUs send to each other. Two cases of the quality table on the
// DGX-1 cube-mesh (NV2 pairs 0-1, 0-2, 2-3, 1-5, 3-7, 4-5, 4-6, 6-7), where the selector's order
// was 1.99x and 1.58x the optimum.
struct OneNodeCase {
  const char* free;
  int tp, pp, dp;
  double params;
};

// The job of `c`, normalised.
job::JobSpec JobOf(const OneNodeCase& c) {
  job::JobSpec j;
  j.name = "one-node";
  j.layout.tp = c.tp;
  j.layout.pp = c.pp;
  j.layout.dp = c.dp;
  j.model_params = c.params;
  EXPECT_TRUE(j.Normalize().ok());
  return j;
}

Verdict PlaceOn(const std::string& shape, const OneNodeCase& c, double* optimum_ms) {
  Shape& s = GetShape(shape);
  ClusterState state = StateWithFree(*s.cluster, c.free);
  const job::JobSpec j = JobOf(c);
  OracleResult r = s.oracle->SolveByBranchAndBound(state, j, OracleOptions{});
  EXPECT_EQ(r.status, OracleStatus::kOptimal) << r.reason;
  *optimum_ms = r.placement ? r.placement->predicted_ms : 0;
  return s.placer->Place(state, j);
}

// The placer within 5% of the proven optimum for `c` on `shape`.
void ExpectNearOptimum(const std::string& shape, const OneNodeCase& c) {
  double optimum = 0;
  Verdict v = PlaceOn(shape, c, &optimum);
  ASSERT_TRUE(v.fit()) << v.Explain();
  EXPECT_LE(v.placement->predicted_ms, optimum * 1.05) << v.placement->explanation;
}

TEST(IlpQualityTest, PipelineOnOneNodeSendsOverDoubleLinks) {
  // 4 stages of one GPU (case 223): every stage sends to the next over an NV2 pair.
  double optimum = 0;
  Verdict v =
      PlaceOn("v100-8",
              {"v01: v02:0,5 v03:3,6 v04:2-3 v05:0-1,3-6 v06:0-7 v07:4,7 v08:1-4", 1, 4, 1, 1.3e9},
              &optimum);
  ASSERT_TRUE(v.fit()) << v.Explain();
  const Placement& p = *v.placement;
  ASSERT_EQ(p.parts.size(), 1u);
  const auto& topo = GetShape("v100-8").cluster->topology(p.parts[0].node);
  for (int r = 0; r + 1 < 4; ++r) {
    const int a = p.ranks[r].gpu, b = p.ranks[r + 1].gpu;
    EXPECT_EQ(topo.gpu_gpu(a, b).nvlinks, 2)
        << "stage " << r << " GPU " << a << " -> " << b << ": " << p.explanation;
  }
  EXPECT_LT(p.pp_ms, 0.6) << p.explanation;  // 1.00 ms over single links before
  EXPECT_LE(p.predicted_ms, optimum * 1.05) << p.explanation;
}

TEST(IlpQualityTest, DpPairsInsideTpOnOneNodeTakeDoubleLinks) {
  // TP 2 × PP 2 × DP 2 of a 70B model whole on one node (case 1918): each stage's DP pairs carry
  // 35 GB and take NV2 pairs.
  double optimum = 0;
  Verdict v = PlaceOn(
      "v100-8",
      {"v01:1-3,6 v02:0,2-6 v03:1-6 v04:0-7 v05:1,3,6-7 v06: v07:0-7 v08:1,5-7", 2, 2, 2, 70e9},
      &optimum);
  ASSERT_TRUE(v.fit()) << v.Explain();
  EXPECT_LT(v.placement->dp_ms, 2000) << v.placement->explanation;  // 2,778 ms before
  EXPECT_LE(v.placement->predicted_ms, optimum * 1.05) << v.placement->explanation;
}

// Three cases of the quality table on the mixed shape (H100 nodes with a NIC per GPU under
// leaves 0 and 1, V100 nodes with one NIC under leaf 2), 1.67x, 1.50x and 1.48x the optimum
// before the stage packer offered its split-free, fewest-V100 and by-bandwidth plans.
TEST(IlpQualityTest, OnMixedProfilesStagesKeepToFewSlowNodesAndSplitNone) {
  double optimum = 0;
  // TP 2 × PP 2 × DP 10 of a 70B model: each stage on nodes of its own.
  Verdict v = PlaceOn("mixed-12",
                      {"h01: h02:0,5-7 h03:0-2,4,6-7 h04:0,2-6 h05:2-4,6 h06:0,2-3,5-7 h07:2,4 "
                       "h08:0,4,6-7 v01:0,7 v02:0-7 v03:0-7 v04:0-7",
                       2, 2, 10, 70e9},
                      &optimum);
  ASSERT_TRUE(v.fit()) << v.Explain();
  EXPECT_LE(v.placement->predicted_ms, optimum * 1.05) << v.placement->explanation;
  // TP 2 × DP 12 of a 13B model: one V100 node, not four.
  v = PlaceOn("mixed-12",
              {"h01: h02:0-1 h03:6-7 h04:0-2,5-7 h05:4-5 h06:3,7 h07:6-7 h08:0,2-3,7 v01:0,4-6 "
               "v02:1,5-7 v03:2,5-7 v04:3,6",
               2, 1, 12, 13e9},
              &optimum);
  ASSERT_TRUE(v.fit()) << v.Explain();
  EXPECT_LE(v.placement->predicted_ms, optimum * 1.05) << v.placement->explanation;
  // PP 4 × DP 7 of a 1.3B model: one stage whole on a V100 node, the rest on H100 nodes.
  v = PlaceOn("mixed-12",
              {"h01:0-7 h02:1-3,7 h03: h04: h05:0,2-6 h06:2,6 h07:5,7 h08:0-1,3-4,6-7 "
               "v01:0,2-3,7 v02:1-2,4-7 v03:0-7 v04:1,7",
               1, 4, 7, 1.3e9},
              &optimum);
  ASSERT_TRUE(v.fit()) << v.Explain();
  EXPECT_LE(v.placement->predicted_ms, optimum * 1.05) << v.placement->explanation;
}

// The quality table's case 384 (1.46x before): the best start for both leaves was the same
// plan, which leaves either leaf, and it took both of local search's two places; the in-leaf
// start one move away from the optimum (a node's 4 GPUs moved whole to another node) was never
// refined. Each distinct plan is refined once now.
TEST(IlpQualityTest, LocalSearchRefinesTheBestTwoDistinctStarts) {
  double optimum = 0;
  Verdict v =
      PlaceOn("h100-16",
              {"h01:3-5,7 h02:3-4 h03:0-7 h04:0,3-7 h05:0-7 h06:0-1,3-5,7 h07:0,2-4,6-7 h08: "
               "h09:0-4,6 h10:0-7 h11:0,2-5,7 h12:0,3 h13:1,4-6 h14:1,3-4,7 h15:1,7 h16:1,5",
               4, 1, 6, 7e9},
              &optimum);
  ASSERT_TRUE(v.fit()) << v.Explain();
  EXPECT_LE(v.placement->predicted_ms, optimum * 1.05) << v.placement->explanation;
  for (const NodeGpus& part : v.placement->parts) {
    EXPECT_LT(part.node, 8) << "leaves leaf0 (h01-h08), which holds the job: "
                            << v.placement->explanation;
  }
}

// Two DP-only cases of the quality table on h100-16 (1.25x and 1.24x before) where no single
// one-unit move improves: the optimum splits a 4-GPU node's share 2 + 2 over two other nodes
// (1314), or moves 4 of a full node's 8 GPUs to a node outside the plan (567).
TEST(IlpQualityTest, LocalSearchLeavesAPlateauByTwoUnitMoves) {
  ExpectNearOptimum("h100-16",
                    {"h01:0-1,3,5 h02:2-3,6-7 h03:0,4 h04:0-1,3-6 h05:4,6 h06:0,4 h07:2-3 h08:4,7 "
                     "h09: h10:4,7 h11:0-7 h12: h13:0,2-4,6-7 h14:1,7 h15:4-7 h16:",
                     2, 1, 16, 70e9});
  ExpectNearOptimum(
      "h100-16",
      {"h01:0-1,3,5-7 h02:0-1,3,7 h03: h04:3-6 h05: h06:0-1,4-5 h07:1-5,7 h08:0-2,5-7 "
       "h09:1,3-5 h10:0,2,4-7 h11: h12:3,5 h13:0,4,6-7 h14:2,4,6-7 h15:0-1,3-4,6-7 h16:0-7",
       2, 1, 14, 13e9});
}

// On rails, a node's island reaches the next island at the rate of the rails they share
// (cost::CostModel), which the rail passes' count of DP and pipeline neighbours on one rail does
// not measure. Two cases of the rails table where the passes' order was slower than the
// selector's: a TP4 PP2 DP4 job whose DP islands the passes moved onto unshared rails (1772,
// 1.99x the optimum), and a PP2 DP29 job whose pipeline pass moved a stage's piece of a node to
// other rails (413, 1.45x). The selector's order and each alignment are scored.
TEST(IlpQualityTest, OnRailsAnAlignmentIsKeptOnlyWhenItScoresFaster) {
  ExpectNearOptimum("h100-16-rails",
                    {"h01:0-2,4-5,7 h02:0-1,4,7 h03:1,6 h04:0,2,4-7 h05:0-7 h06:0,3,6-7 "
                     "h07:2-4,6 h08:1-3,7 h09:0,2,6-7 h10:2-3,6-7 h11:0,2-6 h12:0-5 "
                     "h13:1-2,4,7 h14:5,7 h15:1-2,5-6 h16:0-3",
                     4, 2, 4, 70e9});
  ExpectNearOptimum("h100-16-rails",
                    {"h01:0,7 h02:0-3 h03:0,2,5-6 h04: h05:0-1,5,7 h06:0-7 h07: h08:5-6 h09:0,2 "
                     "h10:0,3-5 h11:0-7 h12:3-6 h13:2-3,5-6 h14:0-4,7 h15:0-4,7 h16:0-1,4-7",
                     1, 2, 29, 1.3e9});
}

// A TP4 DP11 job over both leaves of the rails shape (case 179, 1.50x the optimum before): its
// DP rings cross between the leaves twice, each hop on different rails, and the score prices a
// ring by its slowest hop. Moving one node's unit mends one hop and leaves the score as it was;
// local search takes such a move when fewer hops cross, and the next move mends the other.
TEST(IlpQualityTest, OnRailsLocalSearchMendsOneCrossedHopAtATime) {
  ExpectNearOptimum("h100-16-rails",
                    {"h01:0-1,3-5,7 h02:0,2-6 h03:0-7 h04:0,2 h05:0-7 h06:1,3,6-7 h07:2,4,6-7 "
                     "h08:1-2 h09:0-3,5,7 h10:0,2,4-7 h11:0,4-6 h12:0,3 h13:0-7 h14:3,6 h15:0-7 "
                     "h16:0-2,4-6",
                     4, 1, 11, 1.3e9});
}

// On rails, which of a node's free GPUs an island takes decides which rails it shares with the
// next island. The rail passes count neighbour pairs on one rail; the last step polishes the
// GPUs against the score itself. Case 463 (TP1 PP2 DP9, 1.06x the proven optimum before) and
// case 870 (TP1 PP4 DP16 of a 70B model, 1.07x before) are then the optimum.
TEST(IlpQualityTest, OnRailsGpusArePolishedAgainstTheScore) {
  ExpectNearOptimum("h100-16-rails",
                    {"h01:2,4 h02:0-4,6 h03:0,3 h04:0-1,3,6 h05:0-3,5,7 h06: h07:1,4,6-7 "
                     "h08:1,3-7 h09:0,2-4 h10:0,3-4,6 h11:0-1,3-4 h12: h13: h14:0-1,3-5,7 "
                     "h15:0-1,3-4,6-7 h16:1-2,4,7",
                     1, 2, 9, 1.3e9});
  ExpectNearOptimum("h100-16-rails",
                    {"h01:0-2,5-7 h02:4,7 h03:2-7 h04:0-1,3-5,7 h05:0-1,4,6 h06:1,5 h07:4-5 "
                     "h08:0-1,3,6 h09:2-7 h10:0,4,6-7 h11:3-6 h12:0-2,4-5,7 h13:0,4 h14:0,3,5,7 "
                     "h15:0-3,6-7 h16:1,4-5,7",
                     1, 4, 16, 70e9});
}

// Nodes whose free GPUs share rails are a start of their own: case 1909 (TP1 PP2 DP9 of a 13B
// model, 1.12x the proven optimum before) took h04:0,5-7 then h06:0,2-3,5-6, whose islands share
// three of four rails; four nodes with GPUs 0-3 free (and one more on two of them) share all.
TEST(IlpQualityTest, OnRailsNodesThatShareRailsAreAStart) {
  ExpectNearOptimum("h100-16-rails",
                    {"h01: h02:0-1,4-7 h03:0-3,6-7 h04:0,5-7 h05:0,2-4,6-7 h06:0,2-6 h07:0-4,6 "
                     "h08:0,2,4-5 h09:1,3-5 h10:0-4,6 h11:1-2,4-7 h12:0-4,6 h13:3,7 "
                     "h14:0-3,5,7 h15:2,4 h16:0,3,5-6",
                     1, 2, 9, 13e9});
}

// Stages built one at a time on nodes whose free GPUs share rails, each at the highest rate its
// slowest island reaches its ring neighbours at: case 595 (TP1 PP4 DP11 of a 70B model, 1.33x
// before: a stage ended on a 3-GPU island whose rails the next island lacked) and case 1742 (TP2
// PP2 DP8 of a 13B model, 1.24x). A node may hold two stages that are not neighbours, which
// the oracle's family (nodes filled in turn) does not contain: both come out below its optimum.
constexpr OneNodeCase kCase595 = {
    "h01:5,7 h02:1,3,5,7 h03: h04:0,2,5,7 h05:0,2,4-7 h06:5-6 h07: h08:2,4,6-7 h09:0-3 h10:0-7 "
    "h11:0,4 h12:0-7 h13:0-2,5-7 h14:0-4,6 h15:0,3-7 h16:1,7",
    1, 4, 11, 70e9};

TEST(IlpQualityTest, OnRailsStagesArePlacedOnNodesThatShareRails) {
  double optimum = 0;
  Verdict v = PlaceOn("h100-16-rails", kCase595, &optimum);
  ASSERT_TRUE(v.fit()) << v.Explain();
  EXPECT_LE(v.placement->predicted_ms, optimum * 1.05) << v.placement->explanation;
  EXPECT_THAT(v.placement->explanation, HasSubstr("stages placed on nodes that share rails"))
      << v.placement->explanation;
  ExpectNearOptimum("h100-16-rails",
                    {"h01:0,2-3,5-7 h02:0-7 h03:0-4,6 h04:0-1,4-7 h05: h06:3,5-7 h07: h08: "
                     "h09:1-2 h10:0,3 h11:0-7 h12:1,3,5,7 h13:0,6 h14:0-2,7 h15:0-1,3-6 h16:3,6",
                     2, 2, 8, 13e9});
}

// With ranks_in_node_blocks (the Slurm integration: srun numbers ranks node by node, nodes in
// order) the stage-by-stage placement is not offered: each node's ranks form one block, and the
// blocks come in node-id order.
TEST(IlpQualityTest, RanksInNodeBlocksKeepEachNodesRanksTogether) {
  Shape& s = GetShape("h100-16-rails");
  ClusterState state = StateWithFree(*s.cluster, kCase595.free);
  GangPlacerOptions o;
  o.cost_model = OracleCostOptions();
  o.ranks_in_node_blocks = true;
  auto placer = GangPlacer::Create(*s.cluster, o);
  ASSERT_TRUE(placer.ok()) << placer.status().ToString();
  Verdict v = (*placer)->Place(state, JobOf(kCase595));
  ASSERT_TRUE(v.fit()) << v.Explain();
  const std::vector<RankSlot>& r = v.placement->ranks;
  for (size_t i = 1; i < r.size(); ++i) {
    EXPECT_GE(r[i].node, r[i - 1].node) << "rank " << i << ": " << v.placement->explanation;
  }
  EXPECT_THAT(v.placement->explanation, Not(HasSubstr("stages placed")))
      << v.placement->explanation;
}

// One run judged for both facts (one test, not two: ctest runs every test in its own process,
// so two tests would make the same 240 cases twice). The placer never beats the proven optimum
// (checked per case in RunQualityOnce); and the acceptance criterion of the scheduler issue:
// within 5% of the optimum for >= 95% of the cases that fit (BENCHMARKS.md, "Placement quality
// against an exact ILP", has the 2,000-case table).
TEST(IlpQualityTest, PlacerNeverBeatsTheProvenOptimumAndIsWithinFivePercentOfIt) {
  const Quality q = RunQualityOnce();
  EXPECT_GE(q.cases, 200);
  EXPECT_GE(q.fit, 100);
  EXPECT_LE(q.unproven, q.cases / 5);
  EXPECT_GE(q.within5, static_cast<int>(std::ceil(0.95 * q.fit)))
      << q.within5 << " of " << q.fit << " within 5%; worst " << q.worst_ratio << " (" << q.worst
      << ")";
}

}  // namespace
}  // namespace toposched::sched::ilp
