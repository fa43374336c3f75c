#include "state/cluster_state.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "testing/alloc_ids.h"
#include "testing/clusters.h"
#include "testing/status_matchers.h"
#include "topo/io/cluster_yaml.h"

namespace toposched::sched {
namespace {

using ::toposched::testing::Alloc;
using ::toposched::testing::Allocs;
using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

using topo::Health;

const topo::Cluster& H100() { return testing::H100Cluster(); }
const topo::Cluster& Gb200() { return testing::Gb200Cluster(); }

ClusterState NewState(const topo::Cluster& c) {
  StatusOr<ClusterState> s = ClusterState::Create(c);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(s).value();
}

GpuMask Gpus(std::initializer_list<int> positions) {
  std::vector<int> v(positions);
  return GpuMask::FromPositions(v);
}

int Node(const topo::Cluster& c, const std::string& name) {
  const int n = c.FindNode(name);
  EXPECT_GE(n, 0) << name;
  return n;
}

int Domain(const topo::Cluster& c, const std::string& name) {
  const int d = c.FindDomain(name);
  EXPECT_GE(d, 0) << name;
  return d;
}

#define EXPECT_INVARIANTS(state)               \
  do {                                         \
    Status _inv = (state).CheckInvariants();   \
    EXPECT_TRUE(_inv.ok()) << _inv.ToString(); \
  } while (0)

TEST(ClusterStateTest, FreshStateIsAllFree) {
  const topo::Cluster& c = H100();
  ClusterState s = NewState(c);
  EXPECT_INVARIANTS(s);
  EXPECT_EQ(s.ClusterCapacity(), (Capacity{256, 32, 8, 256, 256}));
  EXPECT_EQ(s.DomainCapacity(Domain(c, "leaf0")), (Capacity{128, 16, 8, 128, 128}));
  EXPECT_EQ(s.FreeGpus(Domain(c, "spine0")), 256);
  EXPECT_EQ(s.FreeMask(0), GpuMask::FirstN(8));
  EXPECT_FALSE(s.Holder(0, 0).has_value());
  EXPECT_EQ(s.AllocationCount(), 0u);
}

// The key encoding is the JSON state's and the store's: a job's key is its id, a hold's and a
// block's carry their owner in bits 60-61; any key (a negative one too) reads back unchanged.
TEST(AllocIdTest, KeysRoundTripAndOrderAsKeys) {
  EXPECT_EQ(AllocId::Job(7).key(), 7);
  EXPECT_EQ(AllocId::Job(JobId{7}), AllocId::Job(7));
  EXPECT_EQ(AllocId::Hold(2).key(), (int64_t{1} << 60) | 2);
  EXPECT_EQ(AllocId::Block(3).key(), (int64_t{2} << 60) | 3);
  EXPECT_EQ(AllocId::Hold(2).owner(), AllocId::Owner::kHold);
  EXPECT_EQ(AllocId::Hold(2).number(), 2);
  EXPECT_EQ(AllocId::Block(3).owner(), AllocId::Owner::kBlock);
  EXPECT_EQ(AllocId::Job(9).owner(), AllocId::Owner::kJob);
  EXPECT_NE(AllocId::Hold(2), AllocId::Job(2));
  for (int64_t k : {int64_t{-3}, int64_t{0}, int64_t{42}, AllocId::Hold(5).key(),
                    std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()}) {
    EXPECT_EQ(AllocId::FromKey(k).key(), k);
    EXPECT_EQ(std::hash<AllocId>{}(AllocId::FromKey(k)), std::hash<int64_t>{}(k));
  }
  EXPECT_LT(AllocId::FromKey(-3), AllocId::Job(1));
  EXPECT_LT(AllocId::Job(AllocId::kMaxNumber), AllocId::Hold(0));
  std::ostringstream os;
  os << AllocId::Hold(1);
  EXPECT_EQ(os.str(), std::to_string((int64_t{1} << 60) | 1));
}

// One step of a hand-checked sequence on h100-2rack (leaf0 = gpu001-016, leaf1 = gpu017-032):
// the operation, the status and the jobs it must report, and the capacities after it.
struct Step {
  std::string what;
  enum Op { kAlloc, kRelease, kGpuHealth, kNodeHealth, kDrain } op;
  int64_t id = 0;
  std::vector<std::pair<std::string, GpuMask>> parts = {};  // kAlloc; [0].first = node otherwise
  int gpu = 0;
  Health health = Health::kHealthy;
  StatusCode code = StatusCode::kOk;
  std::vector<AllocId> affected = {};
  Capacity leaf0, leaf1, spine;
};

// The sequence in phases, each starting from the state the phases before it leave.
// 1: two jobs, 4 GPUs on leaf0 and two whole nodes, one on each leaf.
std::vector<Step> AllocationSteps() {
  return {
      {.what = "4 GPUs on gpu001",
       .op = Step::kAlloc,
       .id = 1,
       .parts = {{"gpu001", Gpus({0, 1, 2, 3})}},
       .leaf0 = {124, 15, 8, 128, 128},
       .leaf1 = {128, 16, 8, 128, 128},
       .spine = {252, 31, 8, 256, 256}},
      {.what = "whole gpu002 and gpu017",
       .op = Step::kAlloc,
       .id = 2,
       .parts = {{"gpu002", GpuMask::FirstN(8)}, {"gpu017", GpuMask::FirstN(8)}},
       .leaf0 = {116, 14, 8, 128, 128},
       .leaf1 = {120, 15, 8, 128, 128},
       .spine = {236, 29, 8, 256, 256}},
  };
}

// 2: GPU health on gpu001 and gpu003.
std::vector<Step> GpuHealthSteps() {
  return {
      {.what = "free GPU 5 of gpu001 fails",
       .op = Step::kGpuHealth,
       .parts = {{"gpu001", {}}},
       .gpu = 5,
       .health = Health::kUnhealthy,
       .leaf0 = {115, 14, 8, 127, 128},
       .leaf1 = {120, 15, 8, 128, 128},
       .spine = {235, 29, 8, 255, 256}},
      {.what = "held GPU 2 of gpu001 fails",
       .op = Step::kGpuHealth,
       .parts = {{"gpu001", {}}},
       .gpu = 2,
       .health = Health::kUnhealthy,
       .affected = Allocs({1}),
       .leaf0 = {115, 14, 8, 126, 128},
       .leaf1 = {120, 15, 8, 128, 128},
       .spine = {235, 29, 8, 254, 256}},
      {.what = "degraded stays usable",
       .op = Step::kGpuHealth,
       .parts = {{"gpu003", {}}},
       .gpu = 0,
       .health = Health::kDegraded,
       .leaf0 = {115, 14, 8, 126, 128},
       .leaf1 = {120, 15, 8, 128, 128},
       .spine = {235, 29, 8, 254, 256}},
  };
}

// 3: job 1 released, gpu017 down, gpu018 drained.
std::vector<Step> ReleaseNodeDownAndDrainSteps() {
  return {
      {.what = "release 1: gpu001 has 6 free",
       .op = Step::kRelease,
       .id = 1,
       .leaf0 = {118, 14, 8, 126, 128},
       .leaf1 = {120, 15, 8, 128, 128},
       .spine = {238, 29, 8, 254, 256}},
      {.what = "gpu017 down",
       .op = Step::kNodeHealth,
       .parts = {{"gpu017", {}}},
       .health = Health::kUnhealthy,
       .affected = Allocs({2}),
       .leaf0 = {118, 14, 8, 126, 128},
       .leaf1 = {120, 15, 8, 120, 128},
       .spine = {238, 29, 8, 246, 256}},
      {.what = "drain gpu018",
       .op = Step::kDrain,
       .parts = {{"gpu018", {}}},
       .gpu = 1,
       .leaf0 = {118, 14, 8, 126, 128},
       .leaf1 = {112, 14, 8, 120, 128},
       .spine = {230, 28, 8, 246, 256}},
  };
}

// 4: allocations on the drained node and on the failed GPU, refused without a change.
std::vector<Step> RefusedAllocationSteps() {
  return {
      {.what = "alloc on drained node",
       .op = Step::kAlloc,
       .id = 3,
       .parts = {{"gpu018", Gpus({0})}},
       .code = StatusCode::kInvalidArgument,
       .leaf0 = {118, 14, 8, 126, 128},
       .leaf1 = {112, 14, 8, 120, 128},
       .spine = {230, 28, 8, 246, 256}},
      {.what = "alloc on unhealthy GPU",
       .op = Step::kAlloc,
       .id = 3,
       .parts = {{"gpu001", Gpus({5})}},
       .code = StatusCode::kInvalidArgument,
       .leaf0 = {118, 14, 8, 126, 128},
       .leaf1 = {112, 14, 8, 120, 128},
       .spine = {230, 28, 8, 246, 256}},
  };
}

// 5: job 2 released, then released again.
std::vector<Step> ReleaseTwiceSteps() {
  return {
      {.what = "release 2",
       .op = Step::kRelease,
       .id = 2,
       .leaf0 = {126, 15, 8, 126, 128},
       .leaf1 = {112, 14, 8, 120, 128},
       .spine = {238, 29, 8, 246, 256}},
      {.what = "release unknown",
       .op = Step::kRelease,
       .id = 2,
       .code = StatusCode::kNotFound,
       .leaf0 = {126, 15, 8, 126, 128},
       .leaf1 = {112, 14, 8, 120, 128},
       .spine = {238, 29, 8, 246, 256}},
  };
}

// 6: every node and GPU back.
std::vector<Step> RecoverySteps() {
  return {
      {.what = "gpu017 back",
       .op = Step::kNodeHealth,
       .parts = {{"gpu017", {}}},
       .health = Health::kHealthy,
       .leaf0 = {126, 15, 8, 126, 128},
       .leaf1 = {120, 15, 8, 128, 128},
       .spine = {246, 30, 8, 254, 256}},
      {.what = "undrain gpu018",
       .op = Step::kDrain,
       .parts = {{"gpu018", {}}},
       .gpu = 0,
       .leaf0 = {126, 15, 8, 126, 128},
       .leaf1 = {128, 16, 8, 128, 128},
       .spine = {254, 31, 8, 254, 256}},
      {.what = "gpu001 GPU 5 healthy again",
       .op = Step::kGpuHealth,
       .parts = {{"gpu001", {}}},
       .gpu = 5,
       .health = Health::kHealthy,
       .leaf0 = {127, 15, 8, 127, 128},
       .leaf1 = {128, 16, 8, 128, 128},
       .spine = {255, 31, 8, 255, 256}},
      {.what = "...and GPU 2",
       .op = Step::kGpuHealth,
       .parts = {{"gpu001", {}}},
       .gpu = 2,
       .health = Health::kHealthy,
       .leaf0 = {128, 16, 8, 128, 128},
       .leaf1 = {128, 16, 8, 128, 128},
       .spine = {256, 32, 8, 256, 256}},
  };
}

// Applies one step to `s` and checks its status, the jobs it reports and the capacities after it.
void ApplyAndCheck(const topo::Cluster& c, ClusterState& s, const Step& st) {
  SCOPED_TRACE(st.what);
  Status status;
  std::vector<AllocId> affected;
  switch (st.op) {
    case Step::kAlloc: {
      std::vector<NodeGpus> parts;
      for (const auto& [name, mask] : st.parts) parts.push_back({Node(c, name), mask});
      status = s.Allocate(Alloc(st.id), parts);
      break;
    }
    case Step::kRelease:
      status = s.Release(Alloc(st.id));
      break;
    case Step::kGpuHealth:
    case Step::kNodeHealth: {
      const int n = Node(c, st.parts[0].first);
      StatusOr<std::vector<AllocId>> r = st.op == Step::kGpuHealth
                                             ? s.SetGpuHealth(n, st.gpu, st.health)
                                             : s.SetNodeHealth(n, st.health);
      status = r.status();
      if (r.ok()) affected = *r;
      break;
    }
    case Step::kDrain:
      status = s.SetNodeDrained(Node(c, st.parts[0].first), st.gpu != 0);
      break;
  }
  EXPECT_EQ(status.code(), st.code) << status.ToString();
  EXPECT_EQ(affected, st.affected);
  EXPECT_EQ(s.DomainCapacity(Domain(c, "leaf0")), st.leaf0);
  EXPECT_EQ(s.DomainCapacity(Domain(c, "leaf1")), st.leaf1);
  EXPECT_EQ(s.DomainCapacity(Domain(c, "spine0")), st.spine);
  EXPECT_EQ(s.ClusterCapacity(), st.spine);
  EXPECT_INVARIANTS(s);
}

// Each test runs the phases before its own (checked as well) and then its own.
class HandCheckedSequence : public ::testing::Test {
 protected:
  void Run(const std::vector<std::vector<Step>>& phases) {
    for (const std::vector<Step>& phase : phases) {
      for (const Step& st : phase) ApplyAndCheck(c_, s_, st);
    }
  }

  const topo::Cluster& c_ = H100();
  ClusterState s_ = NewState(c_);
};

TEST_F(HandCheckedSequence, AllocationsTakeCapacityFromTheirLeavesAndTheSpine) {
  Run({AllocationSteps()});
}

TEST_F(HandCheckedSequence, FailedGpusLeaveCapacityAndNameTheJobHoldingThem) {
  Run({AllocationSteps(), GpuHealthSteps()});
}

TEST_F(HandCheckedSequence, ReleaseNodeDownAndDrainEachChangeTheirLeaf) {
  Run({AllocationSteps(), GpuHealthSteps(), ReleaseNodeDownAndDrainSteps()});
}

TEST_F(HandCheckedSequence, AllocationsOnADrainedNodeOrFailedGpuAreRefused) {
  Run({AllocationSteps(), GpuHealthSteps(), ReleaseNodeDownAndDrainSteps(),
       RefusedAllocationSteps()});
}

TEST_F(HandCheckedSequence, ASecondReleaseIsNotFound) {
  Run({AllocationSteps(), GpuHealthSteps(), ReleaseNodeDownAndDrainSteps(),
       RefusedAllocationSteps(), ReleaseTwiceSteps()});
}

TEST_F(HandCheckedSequence, RecoveryRestoresEveryCapacity) {
  Run({AllocationSteps(), GpuHealthSteps(), ReleaseNodeDownAndDrainSteps(),
       RefusedAllocationSteps(), ReleaseTwiceSteps(), RecoverySteps()});
}

TEST(ClusterStateTest, LargestFreeOnNodeFollowsHistogram) {
  const topo::Cluster& c = H100();
  ClusterState s = NewState(c);
  const int leaf1 = Domain(c, "leaf1");
  // gpu017..gpu032 get 1..8, 1..8 GPUs taken: the most free on one node is 7, then fewer.
  for (int i = 0; i < 16; ++i) {
    ASSERT_TRUE(s.Allocate(Alloc(100 + i), {{16 + i, GpuMask::FirstN(i % 8 + 1)}}).ok());
    EXPECT_INVARIANTS(s);
  }
  EXPECT_EQ(s.LargestFreeOnNode(leaf1), 7);
  EXPECT_EQ(s.FullyFreeNodes(leaf1), 0);
  EXPECT_EQ(s.FreeGpus(leaf1), 2 * (7 + 6 + 5 + 4 + 3 + 2 + 1 + 0));
  EXPECT_EQ(s.LargestFreeOnNode(Domain(c, "spine0")), 8);
  ASSERT_TRUE(s.Release(Alloc(100)).ok());  // one of the two 7-free nodes
  EXPECT_EQ(s.LargestFreeOnNode(leaf1), 8);
  ASSERT_TRUE(s.Allocate(Alloc(200), {{16, Gpus({7})}}).ok());
  EXPECT_EQ(s.LargestFreeOnNode(leaf1), 7);
  ASSERT_TRUE(s.Release(Alloc(108)).ok());  // the other 7-free node becomes 8-free
  ASSERT_TRUE(s.Allocate(Alloc(201), {{24, Gpus({0, 1, 2, 3, 4, 5})}}).ok());
  EXPECT_EQ(s.LargestFreeOnNode(leaf1), 7);
  EXPECT_INVARIANTS(s);
}

TEST(ClusterStateTest, NvlinkDomainsAggregate) {
  const topo::Cluster& c = Gb200();
  ClusterState s = NewState(c);
  ASSERT_EQ(c.nvlink_domains.size(), 2u);
  EXPECT_EQ(s.NvlinkCapacity(0), (Capacity{72, 18, 4, 72, 72}));
  ASSERT_TRUE(s.Allocate(Alloc(1),
                         {{Node(c, "gb001"), GpuMask::FirstN(4)}, {Node(c, "gb019"), Gpus({1, 3})}})
                  .ok());
  EXPECT_EQ(s.NvlinkCapacity(0), (Capacity{68, 17, 4, 72, 72}));
  EXPECT_EQ(s.NvlinkCapacity(1), (Capacity{70, 17, 4, 72, 72}));
  EXPECT_EQ(s.DomainCapacity(Domain(c, "rack0")), s.NvlinkCapacity(0));
  EXPECT_EQ(s.DomainCapacity(Domain(c, "spine0")), (Capacity{138, 34, 4, 144, 144}));
  StatusOr<std::vector<AllocId>> aff = s.SetGpuHealth(Node(c, "gb019"), 3, Health::kUnhealthy);
  ASSERT_TRUE(aff.ok());
  EXPECT_EQ(*aff, Allocs({1}));
  EXPECT_EQ(s.NvlinkCapacity(1), (Capacity{70, 17, 4, 71, 72}));
  EXPECT_INVARIANTS(s);
}

TEST(ClusterStateTest, ConflictingAllocateChangesNothing) {
  const topo::Cluster& c = H100();
  ClusterState s = NewState(c);
  ASSERT_TRUE(s.Allocate(Alloc(1), {{0, Gpus({3})}}).ok());
  ASSERT_TRUE(s.SetNodeDrained(9, true).ok());
  const std::string before = WriteClusterStateJson(s);
  const Capacity cap = s.ClusterCapacity();
  struct Case {
    std::string what;
    int64_t id;
    std::vector<NodeGpus> parts;
    StatusCode code;
    std::string message;  // substring
  };
  const std::vector<Case> cases = {
      {"held",
       2,
       {{4, GpuMask::FirstN(8)}, {0, Gpus({2, 3})}},
       StatusCode::kInvalidArgument,
       "GPU 3 of node \"gpu001\" is held by allocation 1"},
      {"gpu out of range",
       2,
       {{4, Gpus({1})}, {5, Gpus({8})}},
       StatusCode::kInvalidArgument,
       "GPU 8 of node \"gpu006\" out of range (node has 8 GPUs)"},
      {"node out of range",
       2,
       {{4, Gpus({1})}, {32, Gpus({0})}},
       StatusCode::kInvalidArgument,
       "node id 32 out of range"},
      {"negative node", 2, {{-1, Gpus({0})}}, StatusCode::kInvalidArgument, "node id -1"},
      {"node twice",
       2,
       {{4, Gpus({1})}, {4, Gpus({2})}},
       StatusCode::kInvalidArgument,
       "node \"gpu005\" listed twice"},
      {"empty mask", 2, {{4, GpuMask()}}, StatusCode::kInvalidArgument, "empty GPU set"},
      {"no parts", 2, {}, StatusCode::kInvalidArgument, "no GPUs requested"},
      {"drained",
       2,
       {{4, Gpus({1})}, {9, Gpus({0})}},
       StatusCode::kInvalidArgument,
       "GPU 0 of node \"gpu010\" is on a drained node"},
      {"duplicate id", 1, {{4, Gpus({1})}}, StatusCode::kAlreadyExists, "allocation 1 already"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    Status st = s.Allocate(Alloc(k.id), k.parts);
    EXPECT_EQ(st.code(), k.code) << st.ToString();
    EXPECT_THAT(st.message(), HasSubstr(k.message)) << st.message();
    EXPECT_EQ(WriteClusterStateJson(s), before);
    EXPECT_EQ(s.ClusterCapacity(), cap);
    EXPECT_EQ(s.FreeMask(4), GpuMask::FirstN(8));
    EXPECT_FALSE(s.HasAllocation(Alloc(2)));
    EXPECT_INVARIANTS(s);
  }
}

TEST(ClusterStateTest, HealthOutOfRangeIsAnError) {
  ClusterState s = NewState(H100());
  EXPECT_EQ(s.SetGpuHealth(0, 8, Health::kUnhealthy).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.SetGpuHealth(32, 0, Health::kUnhealthy).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(s.SetNodeHealth(-1, Health::kUnhealthy).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.SetNodeDrained(32, true).code(), StatusCode::kInvalidArgument);
  EXPECT_INVARIANTS(s);
}

TEST(ClusterStateTest, NodeHealthReportsEachAllocationOnce) {
  ClusterState s = NewState(H100());
  ASSERT_TRUE(s.Allocate(Alloc(7), {{3, Gpus({0, 1})}}).ok());
  ASSERT_TRUE(s.Allocate(Alloc(5), {{3, Gpus({4, 6})}, {4, Gpus({0})}}).ok());
  StatusOr<std::vector<AllocId>> aff = s.SetNodeHealth(3, Health::kDegraded);
  ASSERT_TRUE(aff.ok());
  EXPECT_EQ(*aff, Allocs({5, 7}));
  aff = s.SetNodeHealth(3, Health::kDegraded);  // no change: nothing new to report
  EXPECT_TRUE(aff->empty());
  aff = s.SetNodeHealth(3, Health::kUnhealthy);
  EXPECT_EQ(*aff, Allocs({5, 7}));
  EXPECT_EQ(s.FreeGpus(Domain(H100(), "leaf0")), 128 - 8 - 1);
  // Allocations stay until released.
  EXPECT_EQ(s.Holder(3, 4), Alloc(5));
  ASSERT_TRUE(s.Release(Alloc(5)).ok());
  EXPECT_EQ(s.FreeMask(3), GpuMask());
  EXPECT_INVARIANTS(s);
}

// Random operations, invariants checked after each; failed allocations must change nothing.
void RandomOps(const topo::Cluster& c, int ops, uint32_t seed) {
  ClusterState s = NewState(c);
  std::mt19937 rng(seed);
  const int n_nodes = static_cast<int>(c.nodes.size());
  std::vector<int64_t> live;
  int64_t next_id = 1;
  int ok_allocs = 0, failed_allocs = 0;
  auto rnd = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  for (int op = 0; op < ops; ++op) {
    const int kind = rnd(100);
    if (kind < 45) {
      std::vector<NodeGpus> parts;
      const int k = 1 + rnd(3);
      for (int i = 0; i < k; ++i) {
        const int node = rnd(n_nodes);
        bool dup = false;
        for (const NodeGpus& p : parts) dup |= p.node == node;
        if (dup) continue;
        const int g = s.GpuCount(node);
        // Mostly free GPUs; 1 in 8 parts also asks for any GPU (may conflict).
        GpuMask want = rnd(8) == 0 ? GpuMask::FirstN(g) : s.FreeMask(node);
        GpuMask pick;
        for (int gpu : want.Positions()) {
          if (rnd(2)) pick.set(gpu);
        }
        if (pick.empty()) pick = want;
        if (pick.empty()) continue;
        parts.push_back({node, pick});
      }
      if (parts.empty()) continue;
      const std::string before = failed_allocs < 200 ? WriteClusterStateJson(s) : "";
      const Capacity cap = s.ClusterCapacity();
      Status st = s.Allocate(Alloc(next_id), parts);
      if (st.ok()) {
        live.push_back(next_id++);
        ++ok_allocs;
      } else {
        ASSERT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
        ASSERT_EQ(s.ClusterCapacity(), cap);
        if (!before.empty()) {
          ASSERT_EQ(WriteClusterStateJson(s), before);
        }
        ++failed_allocs;
      }
    } else if (kind < 85) {
      if (live.empty() || rnd(20) == 0) {
        ASSERT_EQ(s.Release(Alloc(-5)).code(), StatusCode::kNotFound);
      } else {
        const int i = rnd(static_cast<int>(live.size()));
        ASSERT_TRUE(s.Release(Alloc(live[i])).ok());
        live[i] = live.back();
        live.pop_back();
      }
    } else if (kind < 93) {
      const int node = rnd(n_nodes);
      const Health h = rnd(3) == 0 ? Health::kUnhealthy
                       : rnd(2)    ? Health::kDegraded
                                   : Health::kHealthy;
      StatusOr<std::vector<AllocId>> aff = s.SetGpuHealth(node, rnd(s.GpuCount(node)), h);
      ASSERT_TRUE(aff.ok());
      for (AllocId id : *aff) ASSERT_TRUE(s.HasAllocation(id));
    } else if (kind < 97) {
      const int node = rnd(n_nodes);
      const Health h = rnd(2) ? Health::kHealthy : Health::kUnhealthy;
      ASSERT_TRUE(s.SetNodeHealth(node, h).ok());
    } else {
      ASSERT_TRUE(s.SetNodeDrained(rnd(n_nodes), rnd(2) == 0).ok());
    }
    Status inv = s.CheckInvariants();
    ASSERT_TRUE(inv.ok()) << "after op " << op << ": " << inv.ToString();
  }
  EXPECT_GT(ok_allocs, ops / 10);
  EXPECT_GT(failed_allocs, 10);
  // The state survives a JSON round trip at the end.
  StatusOr<ClusterState> back = ReadClusterStateJson(WriteClusterStateJson(s), c);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(WriteClusterStateJson(*back), WriteClusterStateJson(s));
  EXPECT_EQ(back->ClusterCapacity(), s.ClusterCapacity());
}

TEST(ClusterStateTest, RandomizedH100) { RandomOps(H100(), 20000, 12345); }
TEST(ClusterStateTest, RandomizedGb200) { RandomOps(Gb200(), 5000, 777); }

TEST(ClusterStateTest, JsonRoundTrip) {
  const topo::Cluster& c = Gb200();
  ClusterState s = NewState(c);
  ASSERT_TRUE(s.Allocate(Alloc(42), {{0, Gpus({0, 1})}, {20, GpuMask::FirstN(4)}}).ok());
  ASSERT_TRUE(s.Allocate(Alloc(-3), {{1, Gpus({2})}}).ok());
  ASSERT_TRUE(s.SetGpuHealth(0, 1, Health::kUnhealthy).ok());  // held GPU goes bad
  ASSERT_TRUE(s.SetGpuHealth(5, 2, Health::kDegraded).ok());
  ASSERT_TRUE(s.SetNodeHealth(7, Health::kUnhealthy).ok());
  ASSERT_TRUE(s.SetNodeDrained(8, true).ok());
  const std::string text = WriteClusterStateJson(s);
  EXPECT_THAT(text, HasSubstr("\"gpus\": [\n"));
  const std::string path =
      (std::filesystem::temp_directory_path() / "cluster_state_test_roundtrip.json").string();
  {
    std::ofstream out(path);
    out << text;
  }
  StatusOr<ClusterState> back = ReadClusterStateJsonFile(path, c);
  std::remove(path.c_str());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_INVARIANTS(*back);
  EXPECT_EQ(WriteClusterStateJson(*back), text);
  EXPECT_EQ(back->AllocationIds(), Allocs({-3, 42}));
  EXPECT_EQ(*back->Allocation(Alloc(42)), *s.Allocation(Alloc(42)));
  EXPECT_EQ(back->Holder(0, 1), Alloc(42));
  EXPECT_EQ(back->GpuHealth(5, 2), Health::kDegraded);
  EXPECT_TRUE(back->NodeDrained(8));
  for (int d = 0; d < static_cast<int>(c.domains.size()); ++d) {
    EXPECT_EQ(back->DomainCapacity(d), s.DomainCapacity(d));
  }
  for (int d = 0; d < static_cast<int>(c.nvlink_domains.size()); ++d) {
    EXPECT_EQ(back->NvlinkCapacity(d), s.NvlinkCapacity(d));
  }
  EXPECT_EQ(ReadClusterStateJsonFile(path + ".missing", c).status().code(), StatusCode::kNotFound);
}

TEST(ClusterStateTest, BadJson) {
  const topo::Cluster& c = H100();
  struct Case {
    std::string what, text, message;
  };
  const std::string a = R"({"version": 1, "allocations": [)";
  const std::vector<Case> cases = {
      {"syntax", "{", "t.json: invalid JSON"},
      {"not an object", "[]", "t.json: $: expected an object, got array"},
      {"version", R"({"version": 2})", "$.version: expected version 1"},
      {"unknown key", R"({"version": 1, "extra": 0})", "$.extra: unknown key"},
      {"other cluster", R"({"version": 1, "cluster": "gb200-nvl72"})",
       "$.cluster: state is for cluster \"gb200-nvl72\""},
      {"double allocation", a + R"({"id": 1, "nodes": [{"node": "gpu001", "gpus": [0, 1]}]},
              {"id": 2, "nodes": [{"node": "gpu002", "gpus": [0]}, {"node": "gpu001", "gpus": [3, 1]}]}]})",
       "$.allocations[1].nodes[1].gpus[1]: GPU 1 of node \"gpu001\" is held by allocation 1"},
      {"duplicate id", a + R"({"id": 1, "nodes": [{"node": "gpu001", "gpus": [0]}]},
              {"id": 1, "nodes": [{"node": "gpu002", "gpus": [0]}]}]})",
       "$.allocations[1].id: duplicate allocation id 1"},
      {"unknown node", a + R"({"id": 1, "nodes": [{"node": "gpu099", "gpus": [0]}]}]})",
       "$.allocations[0].nodes[0].node: unknown node \"gpu099\""},
      {"gpu out of range", a + R"({"id": 1, "nodes": [{"node": "gpu001", "gpus": [8]}]}]})",
       "$.allocations[0].nodes[0].gpus[0]: GPU 8 out of range"},
      {"gpu not a number", a + R"({"id": 1, "nodes": [{"node": "gpu001", "gpus": ["0"]}]}]})",
       "$.allocations[0].nodes[0].gpus[0]: expected a GPU number"},
      {"gpu twice", a + R"({"id": 1, "nodes": [{"node": "gpu001", "gpus": [2, 2]}]}]})",
       "$.allocations[0].nodes[0].gpus[1]: GPU 2 listed twice"},
      {"node twice in allocation",
       a + R"({"id": 1, "nodes": [{"node": "gpu001", "gpus": [2]}, {"node": "gpu001", "gpus": [3]}]}]})",
       "$.allocations[0].nodes[1].node: node \"gpu001\" listed twice"},
      {"no id", a + R"({"nodes": [{"node": "gpu001", "gpus": [2]}]}]})",
       "$.allocations[0].id: expected an integer"},
      {"empty gpus", a + R"({"id": 1, "nodes": [{"node": "gpu001", "gpus": []}]}]})",
       "$.allocations[0].nodes[0].gpus: expected a non-empty array"},
      {"bad health", R"({"version": 1, "nodes": [{"name": "gpu001", "health": "sick"}]})",
       "$.nodes[0].health: unknown health \"sick\""},
      {"gpu health range",
       R"({"version": 1, "nodes": [{"name": "gpu001", "gpu_health": [{"gpu": 9, "health": "ok"}]}]})",
       "$.nodes[0].gpu_health[0].gpu: GPU 9 out of range"},
      {"drained not bool", R"({"version": 1, "nodes": [{"name": "gpu001", "drained": 1}]})",
       "$.nodes[0].drained: expected true or false"},
      {"node listed twice",
       R"({"version": 1, "nodes": [{"name": "gpu001", "drained": true}, {"name": "gpu001"}]})",
       "$.nodes[1].name: node \"gpu001\" listed twice"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    StatusOr<ClusterState> s = ReadClusterStateJson(k.text, c, "t.json");
    ASSERT_THAT(s, StatusIs(StatusCode::kInvalidArgument, HasSubstr(k.message)));
  }
}

TEST(ClusterStateTest, JsonAllocationOnUnhealthyGpuLoads) {
  const topo::Cluster& c = H100();
  StatusOr<ClusterState> s = ReadClusterStateJson(
      R"({"version": 1,
          "nodes": [{"name": "gpu001", "gpu_health": [{"gpu": 0, "health": "unhealthy"}]}],
          "allocations": [{"id": 9, "nodes": [{"node": "gpu001", "gpus": [0, 1]}]}]})",
      c);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->Holder(0, 0), Alloc(9));
  EXPECT_EQ(s->FreeGpus(Domain(c, "leaf0")), 126);
  EXPECT_EQ(s->HealthyGpus(Domain(c, "leaf0")), 127);
  EXPECT_INVARIANTS(*s);
}

TEST(ClusterStateTest, MemoryIsCompact) {
  ClusterState s = NewState(H100());
  EXPECT_LT(s.MemoryBytes(), 32u * 200 + 4096);
}

}  // namespace
}  // namespace toposched::sched
