// Full scheduler passes (queue order, limits, placement, backfill bookkeeping, events) on the
// 4,096-node × 8-GPU 3-tier cluster of bench_clusters.h at 70% occupancy placed by the
// scheduler itself, draining a queue of 1–8-GPU jobs: each pass places what fits, then the jobs
// it started complete, and the next pass runs, until the queue is empty.
#include <benchmark/benchmark.h>

#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench_clusters.h"
#include "placer/gang.h"
#include "sched/scheduler.h"

namespace {

namespace ts = toposched;
using Clock = std::chrono::steady_clock;

ts::job::JobSpec SmallJob(int k, int user) {
  ts::job::JobSpec j;
  j.name = "q" + std::to_string(k);
  j.user = "user" + std::to_string(user);
  j.queue = "q" + std::to_string(user % 4);
  j.priority = 1;
  j.layout.tp = (k % 2 == 0) ? k : 1;
  j.layout.pp = 1;
  j.layout.dp = k / j.layout.tp;
  j.model_params = 1e9 * k;
  ts::bench::OkOrDie(j.Normalize());
  return j;
}

void BM_SchedulerDrain(benchmark::State& state) {
  const int queue = static_cast<int>(state.range(0));
  const ts::topo::Cluster& c = ts::bench::BigCluster();
  auto placer = ts::bench::OrDie(ts::sched::GangPlacer::Create(c));
  std::vector<ts::job::JobSpec> specs;
  for (int u = 0; u < 50; ++u) {
    for (int k = 1; k <= 8; ++k) specs.push_back(SmallJob(k, u));
  }
  int64_t placed = 0;
  double sched_s = 0;
  int passes = 0;
  size_t state_bytes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto s = ts::bench::OrDie(ts::sched::Scheduler::Create(*placer));
    std::mt19937_64 rng(7);
    int64_t now = 0;
    // 70% occupancy, placed by the scheduler: running jobs of 1–8 GPUs without a time limit.
    const int total = c.TotalGpus();
    int filled = 0;
    while (filled < total * 7 / 10) {
      const int k = 1 + static_cast<int>(rng() % 8);
      (void)ts::bench::OrDie(s->Submit(specs[(rng() % 50) * 8 + (k - 1)], now));
      filled += k;
    }
    (void)ts::bench::OrDie(s->Schedule(now));
    for (int i = 0; i < queue; ++i) {
      const int k = 1 + static_cast<int>(rng() % 8);
      (void)ts::bench::OrDie(s->Submit(specs[(rng() % 50) * 8 + (k - 1)], now));
    }
    state.ResumeTiming();
    int64_t left = queue;
    while (left > 0) {
      now += 1000000;
      const Clock::time_point a = Clock::now();
      std::vector<ts::JobId> started = ts::bench::OrDie(s->Schedule(now));
      sched_s += std::chrono::duration<double>(Clock::now() - a).count();
      ++passes;
      placed += static_cast<int64_t>(started.size());
      left -= static_cast<int64_t>(started.size());
      if (started.empty()) break;
      now += 1000000;
      for (ts::JobId id : started) ts::bench::OkOrDie(s->Complete(id, now));
    }
    state.PauseTiming();
    ts::bench::OkOrDie(s->CheckInvariants());
    state_bytes = s->cluster_state().MemoryBytes();
    if (left > 0) state.SkipWithError("queue did not drain");
    state.ResumeTiming();
  }
  state.counters["placements_per_s"] = static_cast<double>(placed) / sched_s;
  state.counters["passes"] = passes;
  state.counters["placed"] = static_cast<double>(placed);
  state.counters["state_bytes_end"] = static_cast<double>(state_bytes);
}
BENCHMARK(BM_SchedulerDrain)->Arg(100000)->Arg(10000)->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace

BENCHMARK_MAIN();
