// GangPlacer at frontier scale: the 131,112-GPU GB200 NVL72 cluster of bench_clusters.h
// (1,821 racks of 18 trays x 4 GPUs, each rack one NVLink domain), 70% busy, deciding one
// 16,384-GPU job laid out TP 8 (two trays of one rack), PP 16, DP 128 — the layout Llama 3 405B
// trained with on 16,384 GPUs ("The Llama 3 Herd of Models", 2024, Table 4).
//   BM_Nvl72PlaceWarm   Place() again and again on one placer (its per-shape caches warm);
//                       the state is not changed. Counters mean_ms, p50_ms, p99_ms, max_ms.
//   BM_Nvl72PlaceCold   a fresh placer per iteration (GangPlacer::Create untimed, reported as
//                       create_ms), then its first Place() of the job: that call also places
//                       the job on the empty cluster (best_possible_ms, cached per shape).
//                       Counters as above.
// Both report state_bytes (ClusterState::MemoryBytes after the fill), trays_used, racks_used,
// tp_groups_across_racks (TP groups not inside one NVLink domain) and predicted_ms.
// Fill: seeded std::mt19937_64; a random 20% of the trays kept out of the fill (a 16,384-GPU
// job needs 4,096 whole trays in pairs inside racks; the 15% of gang_bench leaves too few pairs),
// then single-tray allocations of 1–4 GPUs on random other trays until 70.0% of the GPUs are
// held.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "bench_clusters.h"
#include "job/job_spec.h"
#include "placer/gang.h"
#include "state/cluster_state.h"

namespace ts = toposched;
using ts::bench::Nvl72Cluster;
using ts::bench::OrDie;
using ts::sched::AllocId;
using ts::sched::ClusterState;
using ts::sched::GangPlacer;
using ts::sched::GpuMask;
using ts::sched::NodeGpus;

namespace {

constexpr uint64_t kFrontierSeed = 20261207;
constexpr int kTrayGpus = ts::bench::kNvl72GpusPerTray;

using FrontierClock = std::chrono::steady_clock;

double ElapsedMs(FrontierClock::time_point since) {
  return std::chrono::duration<double, std::milli>(FrontierClock::now() - since).count();
}

// 1–4 GPUs on one tray, skewed to 1 and 4 (single-GPU work and whole trays).
int TraySizeOf(uint64_t r) {
  static constexpr int kMix[10] = {1, 1, 1, 2, 2, 3, 4, 4, 4, 4};
  return kMix[r % 10];
}

int BusyGpus(const ClusterState& s) {
  const ts::sched::Capacity cap = s.ClusterCapacity();
  return cap.total_gpus - cap.free_gpus;
}

// The NVL72 cluster filled to 70% (see the header). Built once per process.
const ClusterState& FilledNvl72() {
  static const ClusterState* state = [] {
    const ts::topo::Cluster& c = Nvl72Cluster();
    auto* s = new ClusterState(OrDie(ClusterState::Create(c)));
    std::mt19937_64 rng(kFrontierSeed);
    std::vector<int> busy;
    for (int n = 0; n < static_cast<int>(c.nodes.size()); ++n) {
      if (rng() % 100 >= 20) busy.push_back(n);
    }
    const int target = static_cast<int>(0.70 * c.TotalGpus());
    int64_t id = 1;
    int misses = 0;
    while (BusyGpus(*s) < target && misses < 100000) {
      const int k = std::min(TraySizeOf(rng()), target - BusyGpus(*s));
      const int node = busy[rng() % busy.size()];
      const GpuMask& free = s->FreeMask(node);
      if (free.count() < k) {
        ++misses;
        continue;
      }
      ts::bench::OkOrDie(s->Allocate(AllocId::Job(id++),
                                     {NodeGpus{node, ts::bench::LowestFree(free, k, kTrayGpus)}}));
    }
    ts::bench::OkOrDie(s->CheckInvariants());
    return s;
  }();
  return *state;
}

ts::job::JobSpec FrontierJob() {
  ts::job::JobSpec j;
  j.name = "llm-16k";
  j.layout.tp = 8;
  j.layout.pp = 16;
  j.layout.dp = 128;
  j.model_params = 405e9;
  ts::bench::OkOrDie(j.Normalize());
  return j;
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

void ReportTimes(benchmark::State& state, const std::vector<double>& ms) {
  state.counters["mean_ms"] =
      ms.empty() ? 0 : std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
  state.counters["p50_ms"] = Quantile(ms, 0.50);
  state.counters["p99_ms"] = Quantile(ms, 0.99);
  state.counters["max_ms"] = Quantile(ms, 1.0);
}

// Where the job went: trays and racks used, the state's size. False (and the benchmark skipped)
// when it did not fit.
bool ReportPlacement(benchmark::State& state, const ClusterState& s, const ts::job::JobSpec& job,
                     const ts::sched::Verdict& v) {
  if (!v.fit()) {
    state.SkipWithError(("16,384-GPU job does not fit: " + v.Explain()).c_str());
    return false;
  }
  const ts::topo::Cluster& c = Nvl72Cluster();
  std::set<int> racks;
  for (const NodeGpus& g : v.placement->parts) racks.insert(c.nodes[g.node].nvlink_domain);
  state.counters["trays_used"] = static_cast<double>(v.placement->parts.size());
  state.counters["racks_used"] = static_cast<double>(racks.size());
  // TP groups whose ranks sit in more than one rack (0: every one inside an NVLink domain).
  const std::vector<ts::sched::RankSlot>& ranks = v.placement->ranks;
  int split = 0;
  for (int r = 0; r < static_cast<int>(ranks.size()); r += job.layout.tp) {
    std::set<int> in;
    for (int q : job.layout.TpGroup(r)) in.insert(c.nodes[ranks[q].node].nvlink_domain);
    split += in.size() > 1 ? 1 : 0;
  }
  state.counters["tp_groups_across_racks"] = split;
  state.counters["predicted_ms"] = v.placement->predicted_ms;
  state.counters["state_bytes"] = static_cast<double>(s.MemoryBytes());
  state.counters["occupancy_pct"] = 100.0 * BusyGpus(s) / c.TotalGpus();
  return true;
}

void BM_Nvl72PlaceWarm(benchmark::State& state) {
  const ClusterState& s = FilledNvl72();
  std::unique_ptr<GangPlacer> placer = OrDie(GangPlacer::Create(Nvl72Cluster()));
  const ts::job::JobSpec job = FrontierJob();
  const ts::sched::Verdict first = placer->Place(s, job);  // fills the caches: untimed
  if (!ReportPlacement(state, s, job, first)) return;
  std::vector<double> ms;
  for (auto _ : state) {
    const FrontierClock::time_point t0 = FrontierClock::now();
    ts::sched::Verdict v = placer->Place(s, job);
    const double took = ElapsedMs(t0);
    ms.push_back(took);
    state.SetIterationTime(took / 1000);
    benchmark::DoNotOptimize(v);
  }
  ReportTimes(state, ms);
}
BENCHMARK(BM_Nvl72PlaceWarm)->UseManualTime()->Unit(benchmark::kMillisecond);

void BM_Nvl72PlaceCold(benchmark::State& state) {
  const ClusterState& s = FilledNvl72();
  const ts::job::JobSpec job = FrontierJob();
  std::vector<double> ms;
  double create_ms = 0;
  ts::sched::Verdict last;
  for (auto _ : state) {
    FrontierClock::time_point t0 = FrontierClock::now();
    std::unique_ptr<GangPlacer> placer = OrDie(GangPlacer::Create(Nvl72Cluster()));
    create_ms += ElapsedMs(t0);
    t0 = FrontierClock::now();
    last = placer->Place(s, job);
    const double took = ElapsedMs(t0);
    ms.push_back(took);
    state.SetIterationTime(took / 1000);
  }
  if (!ReportPlacement(state, s, job, last)) return;
  ReportTimes(state, ms);
  state.counters["create_ms"] = create_ms / static_cast<double>(std::max<size_t>(1, ms.size()));
}
BENCHMARK(BM_Nvl72PlaceCold)->UseManualTime()->Iterations(10)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
