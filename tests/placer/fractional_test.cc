// Fractional GPU requests (JobSpec::gpu_milli < 1000) through the core: ClusterState's shared
// GPUs (allocate, release, invariants, JSON, random operation sequences), the gang placer's
// packing rule, and the scheduler running, completing and preempting fractional jobs.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "job/job_spec.h"
#include "placer/gang.h"
#include "placer/policy.h"
#include "sched/scheduler.h"
#include "state/cluster_state.h"
#include "testing/alloc_ids.h"
#include "testing/clusters.h"
#include "testing/samples.h"
#include "testing/status_matchers.h"

namespace toposched::sched {
namespace {

using ::testing::AllOf;
using ::testing::Not;
using ::toposched::testing::Alloc;
using ::toposched::testing::Allocs;
using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

using topo::Health;

ClusterState NewState() {
  StatusOr<ClusterState> s = ClusterState::Create(testing::H100Cluster());
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(s).value();
}

const GangPlacer& Placer() {
  static const GangPlacer* p = [] {
    auto r = GangPlacer::Create(testing::H100Cluster());
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.value().release();
  }();
  return *p;
}

#define EXPECT_INVARIANTS(state)               \
  do {                                         \
    Status _inv = (state).CheckInvariants();   \
    EXPECT_TRUE(_inv.ok()) << _inv.ToString(); \
  } while (0)

job::JobSpec Frac(int milli, const std::string& name = "pod") {
  job::JobSpec j;
  j.name = name;
  j.total_gpus = 1;
  j.gpu_milli = milli;
  Status st = j.Normalize();
  EXPECT_TRUE(st.ok()) << st.ToString();
  return j;
}

job::JobSpec Whole(int gpus, const std::string& name = "whole") {
  job::JobSpec j;
  j.name = name;
  j.total_gpus = gpus;
  Status st = j.Normalize();
  EXPECT_TRUE(st.ok()) << st.ToString();
  return j;
}

// ---------------------------------------------------------------------------------------------
// JobSpec

TEST(FractionalSpec, ValidationNamesTheField) {
  job::JobSpec j = Frac(250);
  EXPECT_TRUE(j.Fractional());
  job::JobSpec two;
  two.name = "two";
  two.total_gpus = 2;
  two.gpu_milli = 500;
  Status st = two.Normalize();
  EXPECT_THAT(
      st, StatusIs(StatusCode::kInvalidArgument,
                   HasSubstr("gpu_milli: a fraction of a GPU (gpu_milli 500) needs a world size "
                             "of 1 GPU, got 2")));
  job::JobSpec zero = Frac(1000);
  zero.gpu_milli = 0;
  st = zero.Validate();
  EXPECT_THAT(st, StatusIs(StatusCode::kInvalidArgument,
                           HasSubstr("gpu_milli: expected an integer from 1 to 1000")));
}

TEST(FractionalSpec, YamlAndJson) {
  auto y = job::ParseJobYaml("name: p\ntotal_gpus: 1\ngpu_milli: 300\n", "p.yaml");
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_EQ(y->gpu_milli, 300);
  auto back = job::ParseJobJson(job::JobSpecToJson(*y), "p.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, *y);
  // Absent = a whole GPU, and not written back.
  auto w = job::ParseJobYaml("name: w\ntotal_gpus: 1\n", "w.yaml");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->gpu_milli, 1000);
  EXPECT_THAT(job::JobSpecToJson(*w), Not(HasSubstr("gpu_milli")));
  auto big = job::ParseJobYaml("name: p\ntotal_gpus: 1\ngpu_milli: 1500\n", "p.yaml");
  EXPECT_THAT(big, StatusIs(StatusCode::kInvalidArgument,
                            "p.yaml:3: gpu_milli: must be at most 1000, got 1500"));
  auto neg = job::ParseJobYaml("name: p\ntotal_gpus: 1\ngpu_milli: 0\n", "p.yaml");
  EXPECT_THAT(neg, StatusIs(StatusCode::kInvalidArgument,
                            HasSubstr("gpu_milli: expected an integer from 1 to 1000")));
  auto multi = job::ParseJobYaml("name: p\ntotal_gpus: 4\ngpu_milli: 500\n", "p.yaml");
  EXPECT_THAT(multi,
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("gpu_milli: a fraction of a GPU")));
}

// ---------------------------------------------------------------------------------------------
// ClusterState

TEST(FractionalState, SharedGpuAllocateAndReleaseExactly) {
  ClusterState s = NewState();
  const Capacity empty = s.ClusterCapacity();
  ASSERT_TRUE(s.AllocateShared(Alloc(1), 0, 3, 500).ok());
  EXPECT_INVARIANTS(s);
  EXPECT_TRUE(s.Shared(0, 3));
  EXPECT_FALSE(s.FreeMask(0).test(3));
  EXPECT_TRUE(s.HeldMask(0).test(3));
  EXPECT_EQ(s.ClusterCapacity().free_gpus, empty.free_gpus - 1);
  EXPECT_EQ(s.UsedMilli(0, 3), 500);
  EXPECT_EQ(s.Holder(0, 3), std::nullopt);
  EXPECT_EQ(s.AllocationMilli(Alloc(1)), 500);
  ASSERT_TRUE(s.AllocateShared(Alloc(2), 0, 3, 300).ok());
  EXPECT_EQ(s.UsedMilli(0, 3), 800);
  EXPECT_EQ(s.SharedHolders(0, 3), Allocs({1, 2}));
  EXPECT_EQ(s.AllocatedMilli(), 800);
  EXPECT_EQ(s.HeldGpus(), 1);
  // No room for 300 more; nothing changes.
  Status st = s.AllocateShared(Alloc(3), 0, 3, 300);
  EXPECT_THAT(st,
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("800/1000 milli used, 300 asked")));
  EXPECT_FALSE(s.HasAllocation(Alloc(3)));
  // A whole-GPU allocation never takes a shared GPU.
  st = s.Allocate(Alloc(4), {NodeGpus{0, GpuMask::FirstN(4)}});
  EXPECT_THAT(
      st, StatusIs(StatusCode::kInvalidArgument,
                   HasSubstr("GPU 3 of node \"" + testing::H100Cluster().nodes[0].name +
                             "\" is shared by fractional allocations 1, 2 (800/1000 milli used)")));
  // Nor a fraction a whole-held GPU.
  ASSERT_TRUE(s.Allocate(Alloc(5), {NodeGpus{0, GpuMask::FirstN(1)}}).ok());
  st = s.AllocateShared(Alloc(6), 0, 0, 100);
  EXPECT_THAT(st, StatusIs(StatusCode::kInvalidArgument, HasSubstr("is held by allocation 5")));
  EXPECT_EQ(s.AllocatedMilli(), 1800);
  EXPECT_EQ(s.Resize(Alloc(1), {NodeGpus{0, GpuMask::FirstN(1)}}).code(),
            StatusCode::kInvalidArgument);
  ASSERT_TRUE(s.Release(Alloc(1)).ok());
  EXPECT_EQ(s.UsedMilli(0, 3), 300);
  EXPECT_TRUE(s.Shared(0, 3));
  EXPECT_INVARIANTS(s);
  ASSERT_TRUE(s.Release(Alloc(2)).ok());
  EXPECT_FALSE(s.Shared(0, 3));
  EXPECT_TRUE(s.FreeMask(0).test(3));
  ASSERT_TRUE(s.Release(Alloc(5)).ok());
  EXPECT_EQ(s.ClusterCapacity(), empty);
  EXPECT_EQ(s.AllocatedMilli(), 0);
  EXPECT_EQ(s.SharedGpuCount(), 0);
  EXPECT_INVARIANTS(s);
}

TEST(FractionalState, ErrorsAndHealth) {
  ClusterState s = NewState();
  EXPECT_EQ(s.AllocateShared(Alloc(1), 0, 0, 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.AllocateShared(Alloc(1), 0, 0, 1000).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.AllocateShared(Alloc(1), 0, 99, 10).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.AllocateShared(Alloc(1), -1, 0, 10).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(s.AllocateShared(Alloc(1), 2, 5, 100).ok());
  EXPECT_EQ(s.AllocateShared(Alloc(1), 2, 5, 100).code(), StatusCode::kAlreadyExists);
  ASSERT_TRUE(s.AllocateShared(Alloc(2), 2, 5, 100).ok());
  // A drained node's shared GPU takes no new fraction; its sharers stay.
  ASSERT_TRUE(s.SetNodeDrained(2, true).ok());
  EXPECT_THAT(s.AllocateShared(Alloc(3), 2, 5, 100).message(), HasSubstr("drained"));
  ASSERT_TRUE(s.SetNodeDrained(2, false).ok());
  // The GPU going bad reports every sharer; so does its node.
  auto aff = s.SetGpuHealth(2, 5, Health::kUnhealthy);
  ASSERT_TRUE(aff.ok());
  EXPECT_EQ(*aff, Allocs({1, 2}));
  EXPECT_THAT(s.AllocateShared(Alloc(3), 2, 5, 100).message(), HasSubstr("unhealthy"));
  ASSERT_TRUE(s.SetGpuHealth(2, 5, Health::kHealthy).ok());
  ASSERT_TRUE(s.Allocate(Alloc(7), {NodeGpus{2, GpuMask::FirstN(2)}}).ok());
  aff = s.SetNodeHealth(2, Health::kUnhealthy);
  ASSERT_TRUE(aff.ok());
  EXPECT_EQ(*aff, Allocs({1, 2, 7}));
  EXPECT_INVARIANTS(s);
}

TEST(FractionalState, JsonRoundTripAndOldFiles) {
  ClusterState s = NewState();
  ASSERT_TRUE(s.AllocateShared(Alloc(8), 1, 2, 460).ok());
  ASSERT_TRUE(s.AllocateShared(Alloc(9), 1, 2, 500).ok());
  ASSERT_TRUE(s.Allocate(Alloc(10), {NodeGpus{1, GpuMask::FirstN(2)}}).ok());
  const std::string text = WriteClusterStateJson(s);
  EXPECT_THAT(text, HasSubstr("\"milli\": 460")) << text;
  auto back = ReadClusterStateJson(text, testing::H100Cluster(), "t.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_INVARIANTS(*back);
  EXPECT_EQ(WriteClusterStateJson(*back), text);
  EXPECT_EQ(back->UsedMilli(1, 2), 960);
  // A file without "milli" (written before fractional allocations) loads as whole GPUs.
  const std::string old = R"({"version": 1, "allocations": [{"id": 7, "nodes": [{"node": ")" +
                          testing::H100Cluster().nodes[0].name + R"(", "gpus": [0, 1]}]}]})";
  auto o = ReadClusterStateJson(old, testing::H100Cluster(), "old.json");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->AllocationMilli(Alloc(7)), 0);
  EXPECT_EQ(o->Holder(0, 1), Alloc(7));
  // Over-full or multi-GPU fractional records are rejected with the path.
  const std::string n1 = testing::H100Cluster().nodes[1].name;
  auto over = ReadClusterStateJson(
      R"({"version": 1, "allocations": [{"id": 1, "milli": 600, "nodes": [{"node": ")" + n1 +
          R"(", "gpus": [0]}]}, {"id": 2, "milli": 500, "nodes": [{"node": ")" + n1 +
          R"(", "gpus": [0]}]}]})",
      testing::H100Cluster(), "t.json");
  EXPECT_THAT(over,
              StatusIs(StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("t.json: $.allocations[1]: allocation 2: GPU 0 of node"),
                             HasSubstr("600/1000 milli used, 500 asked"))));
  auto multi = ReadClusterStateJson(
      R"({"version": 1, "allocations": [{"id": 1, "milli": 600, "nodes": [{"node": ")" + n1 +
          R"(", "gpus": [0, 1]}]}]})",
      testing::H100Cluster(), "t.json");
  EXPECT_THAT(multi, StatusIs(StatusCode::kInvalidArgument,
                              HasSubstr("$.allocations[0].nodes: a fractional allocation")));
  auto bad = ReadClusterStateJson(
      R"({"version": 1, "allocations": [{"id": 1, "milli": 0, "nodes": [{"node": ")" + n1 +
          R"(", "gpus": [0]}]}]})",
      testing::H100Cluster(), "t.json");
  EXPECT_THAT(bad, StatusIs(StatusCode::kInvalidArgument,
                            HasSubstr("$.allocations[0].milli: expected an integer")));
}

// Random sequences of whole and fractional allocations, releases, health and drain changes,
// with the invariants recomputed from scratch after every operation and a shadow model of the
// per-GPU milli.
TEST(FractionalState, RandomOperationSequences) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    ClusterState s = NewState();
    std::mt19937 rng(seed);
    auto rnd = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
    // Few nodes, so that GPUs get shared, full and contended.
    const int nodes = 3;
    std::map<int64_t, std::pair<std::pair<int, int>, int>> frac;  // id → ((node, gpu), milli)
    std::vector<int64_t> live;
    int64_t next = 1;
    int shared_ok = 0, shared_refused = 0;
    for (int op = 0; op < 6000; ++op) {
      const int kind = rnd(100);
      if (kind < 45) {
        const int node = rnd(nodes), gpu = rnd(s.GpuCount(node)), milli = 1 + rnd(999);
        const int before = s.UsedMilli(node, gpu);
        const int64_t before_total = s.AllocatedMilli();
        Status st = s.AllocateShared(Alloc(next), node, gpu, milli);
        if (st.ok()) {
          ASSERT_TRUE(before == 0 || s.Shared(node, gpu));
          ASSERT_EQ(s.UsedMilli(node, gpu), before + milli);
          frac[next] = {{node, gpu}, milli};
          live.push_back(next++);
          ++shared_ok;
        } else {
          ASSERT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
          ASSERT_EQ(s.AllocatedMilli(), before_total);
          ++shared_refused;
        }
      } else if (kind < 60) {
        const int node = rnd(nodes);
        GpuMask pick;
        for (int g : s.FreeMask(node).Positions()) {
          if (rnd(3) == 0) pick.set(g);
        }
        if (rnd(6) == 0) pick.set(rnd(s.GpuCount(node)));  // may hit a shared or held GPU
        if (pick.empty()) continue;
        Status st = s.Allocate(Alloc(next), {NodeGpus{node, pick}});
        if (st.ok()) live.push_back(next++);
      } else if (kind < 90) {
        if (live.empty()) continue;
        const int i = rnd(static_cast<int>(live.size()));
        const int64_t id = live[i];
        auto it = frac.find(id);
        int before = 0;
        if (it != frac.end()) before = s.UsedMilli(it->second.first.first, it->second.first.second);
        ASSERT_TRUE(s.Release(Alloc(id)).ok());
        if (it != frac.end()) {
          ASSERT_EQ(s.UsedMilli(it->second.first.first, it->second.first.second),
                    before - it->second.second);
          frac.erase(it);
        }
        live[i] = live.back();
        live.pop_back();
      } else if (kind < 96) {
        const int node = rnd(nodes);
        auto aff = s.SetGpuHealth(node, rnd(s.GpuCount(node)),
                                  rnd(2) ? Health::kHealthy : Health::kUnhealthy);
        ASSERT_TRUE(aff.ok());
        for (AllocId id : *aff) ASSERT_TRUE(s.HasAllocation(id));
      } else {
        ASSERT_TRUE(s.SetNodeDrained(rnd(nodes), rnd(2) == 0).ok());
      }
      Status inv = s.CheckInvariants();
      ASSERT_TRUE(inv.ok()) << "seed " << seed << " op " << op << ": " << inv.ToString();
      // The shadow model: per GPU, the sum of live fractions.
      if (op % 97 == 0) {
        std::map<std::pair<int, int>, int> sum;
        for (const auto& [id, v] : frac) sum[v.first] += v.second;
        for (const auto& [gpu, milli] : sum) {
          ASSERT_EQ(s.UsedMilli(gpu.first, gpu.second), milli);
          ASSERT_LE(milli, 1000);
        }
        ASSERT_EQ(s.SharedGpuCount(), static_cast<int>(sum.size()));
      }
    }
    EXPECT_GT(shared_ok, 500);
    EXPECT_GT(shared_refused, 50);
    auto back = ReadClusterStateJson(WriteClusterStateJson(s), testing::H100Cluster());
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(WriteClusterStateJson(*back), WriteClusterStateJson(s));
    for (int64_t id : live) ASSERT_TRUE(s.Release(Alloc(id)).ok());
    EXPECT_EQ(s.AllocatedMilli(), 0);
    EXPECT_EQ(s.SharedGpuCount(), 0);
    EXPECT_INVARIANTS(s);
  }
}

// ---------------------------------------------------------------------------------------------
// GangPlacer

Status Take(ClusterState& s, int64_t id, const Placement& p) {
  if (p.gpu_milli > 0) {
    return s.AllocateShared(Alloc(id), p.parts[0].node, p.parts[0].gpus.lowest(), p.gpu_milli);
  }
  return s.Allocate(Alloc(id), p.parts);
}

TEST(FractionalPlacer, TwoHalvesShareOneGpu) {
  ClusterState s = NewState();
  Verdict a = Placer().Place(s, Frac(500, "a"));
  ASSERT_TRUE(a.fit()) << a.Explain();
  EXPECT_EQ(a.placement->gpu_milli, 500);
  EXPECT_THAT(a.placement->explanation, HasSubstr("becomes shared: 500/1000 milli used after"))
      << a.placement->explanation;
  ASSERT_TRUE(Take(s, 1, *a.placement).ok());
  Verdict b = Placer().Place(s, Frac(500, "b"));
  ASSERT_TRUE(b.fit()) << b.Explain();
  EXPECT_EQ(b.placement->parts, a.placement->parts);
  const NodeGpus& p = a.placement->parts[0];
  EXPECT_THAT(b.placement->explanation,
              HasSubstr("500 milli of one GPU: shared GPU " + std::to_string(p.gpus.lowest()) +
                        " on node " + testing::H100Cluster().nodes[p.node].name +
                        ": 1000/1000 milli used after"))
      << b.placement->explanation;
  ASSERT_TRUE(Take(s, 2, *b.placement).ok());
  EXPECT_EQ(s.UsedMilli(p.node, p.gpus.lowest()), 1000);
  EXPECT_EQ(s.SharedGpuCount(), 1);
  EXPECT_INVARIANTS(s);
}

// The `shares` plugin of each policy on one state (H100: 32 nodes of 8 GPUs):
//   gpu001: GPUs 1-7 whole-allocated, GPU 0 free                  (1000 milli free)
//   gpu002: GPU 0 shared 600/1000, GPUs 1-7 free                  (7400)
//   gpu003: GPU 0 shared 500, GPU 1 shared 800, GPUs 2-7 whole    (700)
//   the rest empty                                                (8000 each)
// A 300-milli job: toposched takes the tightest shared GPU cluster-wide (gpu002 GPU 0, 100
// left); best-fit the fullest node that can take it (gpu003) and its tightest GPU with room
// (GPU 0; GPU 1 has only 200); first-fit the emptiest node (gpu004) and a free GPU; slurm-tree
// the first node that can (gpu001) and its first GPU with room (GPU 0, free).
TEST(FractionalPlacer, SharesFollowThePolicy) {
  ClusterState s = NewState();
  GpuMask g17, g27;
  for (int g = 1; g < 8; ++g) g17.set(g);
  for (int g = 2; g < 8; ++g) g27.set(g);
  ASSERT_TRUE(s.Allocate(Alloc(1), {NodeGpus{0, g17}}).ok());
  ASSERT_TRUE(s.AllocateShared(Alloc(2), 1, 0, 600).ok());
  ASSERT_TRUE(s.AllocateShared(Alloc(3), 2, 0, 500).ok());
  ASSERT_TRUE(s.AllocateShared(Alloc(4), 2, 1, 800).ok());
  ASSERT_TRUE(s.Allocate(Alloc(5), {NodeGpus{2, g27}}).ok());
  EXPECT_INVARIANTS(s);
  const std::map<std::string, std::pair<int, int>> want = {
      {"toposched", {1, 0}}, {"best-fit", {2, 0}},  {"pair-score", {2, 0}},
      {"kueue-tas", {2, 0}}, {"first-fit", {3, 0}}, {"slurm-tree", {0, 0}},
      {"spread", {3, 0}},    {"random", {3, 0}},    {"locality-relax", {2, 0}}};
  for (const std::string& name : PolicyNames()) {
    auto opts = PolicyOptions(name);
    ASSERT_TRUE(opts.ok());
    auto placer = GangPlacer::Create(testing::H100Cluster(), *opts);
    ASSERT_TRUE(placer.ok()) << placer.status().ToString();
    Verdict v = (*placer)->Place(s, Frac(300));
    ASSERT_TRUE(v.fit()) << name << ": " << v.Explain();
    ASSERT_EQ(v.placement->parts.size(), 1u);
    EXPECT_EQ(v.placement->gpu_milli, 300);
    const NodeGpus& part = v.placement->parts[0];
    EXPECT_EQ(std::make_pair(part.node, part.gpus.lowest()), want.at(name))
        << name << ": " << v.placement->explanation;
    EXPECT_EQ(part.gpus.count(), 1) << name;
    ClusterState after = s;
    EXPECT_TRUE(Take(after, 9, *v.placement).ok()) << name;
    EXPECT_INVARIANTS(after);
  }
  // Every rule refuses when nothing has room, and says so.
  ClusterState full = NewState();
  for (int n = 0; n < static_cast<int>(testing::H100Cluster().nodes.size()); ++n) {
    ASSERT_TRUE(full.Allocate(Alloc(100 + n), {NodeGpus{n, full.FreeMask(n)}}).ok());
  }
  for (const std::string& name : PolicyNames()) {
    auto placer = GangPlacer::Create(testing::H100Cluster(), *PolicyOptions(name));
    ASSERT_TRUE(placer.ok());
    Verdict v = (*placer)->Place(full, Frac(300));
    EXPECT_FALSE(v.fit()) << name;
    EXPECT_THAT(v.Explain(), HasSubstr("no free GPU fits")) << name << ": " << v.Explain();
  }
}

TEST(FractionalPlacer, UnknownSharesRuleIsRejected) {
  GangPlacerOptions o;
  o.plugins.shares = "worst-fit";
  auto p = GangPlacer::Create(testing::H100Cluster(), o);
  ASSERT_THAT(
      p, StatusIs(StatusCode::kInvalidArgument, HasSubstr("unknown shares plugin \"worst-fit\"")));
  EXPECT_THAT(p.status().ToString(), HasSubstr("shares")) << p.status().ToString();
}

TEST(FractionalPlacer, SixHundredAndFiveHundredDoNotShare) {
  ClusterState s = NewState();
  Verdict a = Placer().Place(s, Frac(600));
  ASSERT_TRUE(a.fit());
  ASSERT_TRUE(Take(s, 1, *a.placement).ok());
  Verdict b = Placer().Place(s, Frac(500));
  ASSERT_TRUE(b.fit());
  EXPECT_NE(b.placement->parts, a.placement->parts);
  EXPECT_THAT(b.placement->explanation,
              HasSubstr("no shared GPU has room (1 shared, most room 400 milli)"))
      << b.placement->explanation;
  ASSERT_TRUE(Take(s, 2, *b.placement).ok());
  EXPECT_EQ(s.SharedGpuCount(), 2);
  // Best fit among shared GPUs: a 400 goes onto the 600 (0 left), not onto the 500 (100 left).
  Verdict c = Placer().Place(s, Frac(400));
  ASSERT_TRUE(c.fit());
  EXPECT_EQ(c.placement->parts, a.placement->parts);
  // And a 1-GPU fraction packs onto the node of the first (node best fit), not a fresh node.
  EXPECT_EQ(b.placement->parts[0].node, a.placement->parts[0].node);
}

TEST(FractionalPlacer, WholeGpuJobNeverLandsOnASharedGpu) {
  ClusterState s = NewState();
  // Fill node 0 but GPU 7 with whole GPUs, share GPU 7: a 1-GPU whole job must go elsewhere.
  ASSERT_TRUE(s.Allocate(Alloc(1), {NodeGpus{0, GpuMask::FirstN(7)}}).ok());
  ASSERT_TRUE(s.AllocateShared(Alloc(2), 0, 7, 100).ok());
  for (int gpus : {1, 2, 8}) {
    Verdict v = Placer().Place(s, Whole(gpus));
    ASSERT_TRUE(v.fit()) << v.Explain();
    EXPECT_EQ(v.placement->gpu_milli, 0);
    for (const NodeGpus& p : v.placement->parts) {
      for (int g : p.gpus.Positions()) EXPECT_FALSE(s.Shared(p.node, g)) << gpus;
    }
  }
  // A fraction does join it.
  Verdict f = Placer().Place(s, Frac(900));
  ASSERT_TRUE(f.fit());
  EXPECT_EQ(f.placement->parts[0].node, 0);
  EXPECT_EQ(f.placement->parts[0].gpus.lowest(), 7);
}

TEST(FractionalPlacer, HonoursFilters) {
  ClusterState s = NewState();
  ASSERT_TRUE(s.AllocateShared(Alloc(1), 0, 0, 100).ok());
  // Drained or unhealthy: the shared GPU with room is skipped.
  ASSERT_TRUE(s.SetNodeDrained(0, true).ok());
  Verdict v = Placer().Place(s, Frac(100));
  ASSERT_TRUE(v.fit());
  EXPECT_NE(v.placement->parts[0].node, 0);
  ASSERT_TRUE(s.SetNodeDrained(0, false).ok());
  ASSERT_TRUE(s.SetGpuHealth(0, 0, Health::kUnhealthy).ok());
  v = Placer().Place(s, Frac(100));
  ASSERT_TRUE(v.fit());
  EXPECT_FALSE(v.placement->parts[0].node == 0 && v.placement->parts[0].gpus.lowest() == 0);
  ASSERT_TRUE(s.SetGpuHealth(0, 0, Health::kHealthy).ok());
  // A GPU model the cluster lacks: never fits.
  job::JobSpec other = Frac(100);
  other.constraints.gpu_model = "no-such-gpu";
  v = Placer().Place(s, other);
  EXPECT_EQ(v.kind, VerdictKind::kUnresolvable) << v.Explain();
  // The matching model joins the shared GPU.
  job::JobSpec same = Frac(100);
  same.constraints.gpu_model =
      testing::H100Cluster().profiles[testing::H100Cluster().nodes[0].profile].topology.gpu_model;
  if (same.constraints.gpu_model.empty()) {
    same.constraints.gpu_model = testing::H100Cluster()
                                     .profiles[testing::H100Cluster().nodes[0].profile]
                                     .topology.gpus[0]
                                     .model;
  }
  v = Placer().Place(s, same);
  ASSERT_TRUE(v.fit()) << v.Explain();
  EXPECT_EQ(v.placement->parts[0].node, 0);
}

TEST(FractionalPlacer, FullClusterIsUnschedulableWithReason) {
  ClusterState s = NewState();
  int64_t id = 1;
  for (int n = 0; n < static_cast<int>(testing::H100Cluster().nodes.size()); ++n) {
    ASSERT_TRUE(s.Allocate(Alloc(id++), {NodeGpus{n, GpuMask::FirstN(s.GpuCount(n))}}).ok());
  }
  ASSERT_TRUE(s.Release(Alloc(1)).ok());
  for (int g = 0; g < s.GpuCount(0); ++g)
    ASSERT_TRUE(s.AllocateShared(Alloc(id++), 0, g, 800).ok());
  Verdict v = Placer().Place(s, Frac(300));
  EXPECT_EQ(v.kind, VerdictKind::kUnschedulable);
  EXPECT_THAT(v.Explain(),
              HasSubstr("needs 300 milli of one GPU; no shared GPU has room (8 shared, most "
                        "room 200 milli) and no free GPU fits"))
      << v.Explain();
  EXPECT_TRUE(Placer().Place(s, Frac(200)).fit());
}

// ---------------------------------------------------------------------------------------------
// Scheduler

TEST(FractionalScheduler, RunsCompletesAndPreemptsFractionalJobs) {
  auto sched = Scheduler::Create(Placer());
  ASSERT_TRUE(sched.ok());
  Scheduler& s = **sched;
  auto check = [&] {
    Status st = s.CheckInvariants();
    ASSERT_TRUE(st.ok()) << st.ToString();
  };
  const JobId a = *s.Submit(Frac(500, "a"), 0);
  const JobId b = *s.Submit(Frac(500, "b"), 0);
  const JobId c = *s.Submit(Frac(600, "c"), 0);
  auto started = s.Schedule(0);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  EXPECT_EQ(started->size(), 3u);
  check();
  EXPECT_EQ(s.PlacementOf(JobId{a})->parts, s.PlacementOf(JobId{b})->parts);
  EXPECT_NE(s.PlacementOf(JobId{a})->parts, s.PlacementOf(JobId{c})->parts);
  EXPECT_EQ(s.cluster_state().AllocatedMilli(), 1600);
  EXPECT_EQ(s.cluster_state().HeldGpus(), 2);
  auto ex = s.Explain(JobId{b});
  ASSERT_TRUE(ex.ok());
  EXPECT_EQ(ex->rfind("job-2 RUNNING on " +
                          testing::H100Cluster().nodes[s.PlacementOf(JobId{b})->parts[0].node].name,
                      0),
            0u)
      << *ex;
  ASSERT_TRUE(s.Complete(JobId{a}, 10).ok());
  check();
  EXPECT_EQ(s.cluster_state().AllocatedMilli(), 1100);
  // A 500 now fits into a's room.
  const JobId d = *s.Submit(Frac(500, "d"), 11);
  ASSERT_TRUE(s.Schedule(11).ok());
  check();
  EXPECT_EQ(s.PlacementOf(JobId{d})->parts, s.PlacementOf(JobId{b})->parts);

  // Fill every other GPU whole; a high-priority fraction then preempts the cheapest victim.
  const int total = s.cluster_state().ClusterCapacity().total_gpus;
  const int free_now = s.cluster_state().ClusterCapacity().free_gpus;
  ASSERT_EQ(free_now, total - 2);
  for (int k = 0; k < free_now; ++k) (void)s.Submit(Whole(1, "fill" + std::to_string(k)), 12);
  ASSERT_TRUE(s.Schedule(12).ok());
  check();
  EXPECT_EQ(s.cluster_state().ClusterCapacity().free_gpus, 0);
  job::JobSpec urgent = Frac(700, "urgent");
  urgent.priority = 5000;
  const JobId u = *s.Submit(urgent, 13);
  ASSERT_TRUE(s.Schedule(13).ok());
  check();
  ASSERT_EQ(s.State(JobId{u}), job::JobState::kRunning);
  // The cheapest victims are fractional (1 GPU each): c (600) frees room for 700 alone.
  EXPECT_EQ(s.State(JobId{c}), job::JobState::kPending);
  EXPECT_EQ(s.PlacementOf(JobId{u})->gpu_milli, 700);
  // Everything ends: every GPU is free again.
  for (JobId id : s.JobIds()) {
    if (s.State(JobId{id}) == job::JobState::kRunning) {
      ASSERT_TRUE(s.Complete(JobId{id}, 20).ok());
    }
    check();
  }
  for (JobId id : s.JobIds()) {
    if (s.State(JobId{id}) == job::JobState::kPending) {
      ASSERT_TRUE(s.Cancel(JobId{id}, 21).ok());
    }
  }
  check();
  EXPECT_EQ(s.cluster_state().AllocationCount(), 0u);
  EXPECT_EQ(s.cluster_state().SharedGpuCount(), 0);
  EXPECT_EQ(s.cluster_state().ClusterCapacity().free_gpus, total);
}

TEST(FractionalScheduler, GpuFailureRequeuesEverySharer) {
  auto sched = Scheduler::Create(Placer());
  ASSERT_TRUE(sched.ok());
  Scheduler& s = **sched;
  const JobId a = *s.Submit(Frac(300, "a"), 0);
  const JobId b = *s.Submit(Frac(300, "b"), 0);
  ASSERT_TRUE(s.Schedule(0).ok());
  const NodeGpus p = s.PlacementOf(JobId{a})->parts[0];
  ASSERT_EQ(s.PlacementOf(JobId{b})->parts[0], p);
  ASSERT_TRUE(s.SetGpuHealth(p.node, p.gpus.lowest(), Health::kUnhealthy, 5, "xid 79").ok());
  Status st = s.CheckInvariants();
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(s.State(JobId{a}), job::JobState::kPending);
  EXPECT_EQ(s.State(JobId{b}), job::JobState::kPending);
  ASSERT_TRUE(s.Schedule(6).ok());
  st = s.CheckInvariants();
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(s.PlacementOf(JobId{a})->parts, s.PlacementOf(JobId{b})->parts);
  EXPECT_NE(s.PlacementOf(JobId{a})->parts[0], p);
}

}  // namespace
}  // namespace toposched::sched
