// Simulator throughput: events (arrivals + completions) per second replaying the first N jobs of
// the Philly-derived trace (../shared/traces, or the 200-job prefix in data/traces when the
// shared copy is absent) on a 1,024-node × 8-GPU cluster (leaves of 32 nodes, spines of 16
// leaves, one core; synthetic H100 NVSwitch nodes), policy "toposched".
#include <benchmark/benchmark.h>

#include <filesystem>
#include <string>

#include "bench_clusters.h"
#include "sim/policies.h"
#include "sim/simulator.h"
#include "sim/trace.h"
#include "topo/synthetic.h"

namespace toposched::bench {
namespace {

const topo::Cluster& SimCluster() {
  static const topo::Cluster* cluster = [] {
    constexpr int kNodes = 1024, kPerLeaf = 32, kLeavesPerSpine = 16;
    auto* c = new topo::Cluster();
    c->name = "sim-1024";
    topo::HardwareProfile p;
    p.name = "h100-synthetic";
    p.topology = OrDie(topo::MakeSyntheticTopology("gpu:8 nvswitch:18 nics:8 model:H100"));
    c->profiles.push_back(std::move(p));
    c->levels = {{"core", 0, 1}, {"spine", 409600, 2}, {"leaf", 102400, 1}};
    const int leaves = kNodes / kPerLeaf, spines = leaves / kLeavesPerSpine;
    AddTreeSwitches(*c, "core0", spines, leaves, kLeavesPerSpine);
    AddTreeNodes(*c, kNodes, kPerLeaf, spines, "n%d");
    c->rails = {8, "spine"};
    c->Finalize();
    OkOrDie(c->Validate());
    return c;
  }();
  return *cluster;
}

std::string PhillyPath() {
  const std::string shared =
      std::string(TS_SOURCE_DIR) + "/../shared/traces/philly-pollux-derived/philly.csv";
  if (std::filesystem::exists(shared)) return shared;
  return std::string(TS_SOURCE_DIR) + "/data/traces/philly-head200.csv";
}

void BM_SimulatePhilly(benchmark::State& state) {
  const int jobs = static_cast<int>(state.range(0));
  const sim::Trace trace = OrDie(sim::ReadTraceFile(PhillyPath(), sim::TraceFormat::kPhilly, jobs));
  const auto placer = OrDie(sim::PlacerOptionsFor("toposched"));
  int64_t events = 0, passes = 0;
  for (auto _ : state) {
    sim::SimResult r = OrDie(sim::Simulate(SimCluster(), trace, "toposched", placer, {}));
    events += r.events;
    passes += r.passes;
    benchmark::DoNotOptimize(r.makespan_us);
  }
  state.SetItemsProcessed(events);
  state.counters["jobs"] = static_cast<double>(trace.jobs.size());
  state.counters["passes_per_run"] =
      static_cast<double>(passes) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_SimulatePhilly)->Arg(2000)->Arg(10000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace toposched::bench

BENCHMARK_MAIN();
