// ClusterState on a generated 4,096-node × 8-GPU 3-tier cluster (core > 8 spines > 128 leaves of
// 32 nodes): allocate + release of a whole node and of a 1-GPU slice (the incremental aggregate
// update), building the state, the from-scratch invariant check, and the state's memory
// (counters: state_bytes empty, with every GPU held by its own 1-GPU allocation, per node).
#include <benchmark/benchmark.h>

#include <cstdlib>

#include "bench_clusters.h"
#include "state/cluster_state.h"

namespace ts = toposched;
using ts::sched::AllocId;
using ts::sched::ClusterState;
using ts::sched::GpuMask;

namespace {

using ts::bench::BigCluster;
using ts::bench::OrDie;
constexpr int kNodes = ts::bench::kBigNodes;

void BM_AllocateReleaseWholeNode(benchmark::State& state) {
  ClusterState s = OrDie(ClusterState::Create(BigCluster()));
  int node = 0;
  for (auto _ : state) {
    if (!s.Allocate(AllocId::Job(1), {{node, GpuMask::FirstN(8)}}).ok()) std::abort();
    if (!s.Release(AllocId::Job(1)).ok()) std::abort();
    node = (node + 97) % kNodes;
  }
  benchmark::DoNotOptimize(s.FreeGpus(0));
}
BENCHMARK(BM_AllocateReleaseWholeNode);

void BM_AllocateReleaseOneGpu(benchmark::State& state) {
  ClusterState s = OrDie(ClusterState::Create(BigCluster()));
  // Half the cluster busy with 4-GPU slices, so the 1-GPU slice lands on a shared node.
  for (int n = 0; n < kNodes; n += 2) {
    if (!s.Allocate(AllocId::Job(1000 + n), {{n, GpuMask::FirstN(4)}}).ok()) std::abort();
  }
  int node = 0;
  for (auto _ : state) {
    GpuMask one;
    one.set(5);
    if (!s.Allocate(AllocId::Job(1), {{node, one}}).ok()) std::abort();
    if (!s.Release(AllocId::Job(1)).ok()) std::abort();
    node = (node + 97) % kNodes;
  }
  benchmark::DoNotOptimize(s.LargestFreeOnNode(0));
}
BENCHMARK(BM_AllocateReleaseOneGpu);

void BM_LargestFreeOnNode(benchmark::State& state) {
  ClusterState s = OrDie(ClusterState::Create(BigCluster()));
  for (int n = 0; n < kNodes; ++n) {
    if (!s.Allocate(AllocId::Job(n), {{n, GpuMask::FirstN(1 + n % 8)}}).ok()) std::abort();
  }
  int d = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(s.LargestFreeOnNode(d));
    d = (d + 1) % static_cast<int>(BigCluster().domains.size());
  }
}
BENCHMARK(BM_LargestFreeOnNode);

void BM_CreateState(benchmark::State& state) {
  const ts::topo::Cluster& c = BigCluster();
  size_t empty_bytes = 0;
  for (auto _ : state) {
    ClusterState s = OrDie(ClusterState::Create(c));
    empty_bytes = s.MemoryBytes();
    benchmark::DoNotOptimize(empty_bytes);
  }
  // The worst case for the allocation table: every GPU its own allocation.
  ClusterState full = OrDie(ClusterState::Create(c));
  for (int n = 0; n < kNodes; ++n) {
    for (int g = 0; g < 8; ++g) {
      GpuMask m;
      m.set(g);
      if (!full.Allocate(AllocId::Job(int64_t{n} * 8 + g), {{n, m}}).ok()) std::abort();
    }
  }
  state.counters["state_bytes"] = static_cast<double>(empty_bytes);
  state.counters["bytes_per_node"] = static_cast<double>(empty_bytes) / kNodes;
  state.counters["full_1gpu_bytes"] = static_cast<double>(full.MemoryBytes());
  state.counters["full_bytes_per_node"] = static_cast<double>(full.MemoryBytes()) / kNodes;
}
BENCHMARK(BM_CreateState)->Unit(benchmark::kMillisecond);

void BM_CheckInvariants(benchmark::State& state) {
  ClusterState s = OrDie(ClusterState::Create(BigCluster()));
  for (int n = 0; n < kNodes; ++n) {
    if (!s.Allocate(AllocId::Job(n), {{n, GpuMask::FirstN(1 + n % 8)}}).ok()) std::abort();
  }
  for (auto _ : state) {
    ts::Status st = s.CheckInvariants();
    if (!st.ok()) std::abort();
  }
}
BENCHMARK(BM_CheckInvariants)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
