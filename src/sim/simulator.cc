#include "sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <tuple>

#include "placer/policy.h"
#include "sched/run_time.h"
#include "sched/scheduler.h"
#include "sim/replay.h"
#include "sim/trace_spec.h"

namespace toposched::sim {

namespace {

int MaxGpusPerNode(const topo::Cluster& c) {
  int m = 0;
  for (const topo::ClusterNode& n : c.nodes) {
    m = std::max(m, static_cast<int>(c.profiles[n.profile].topology.gpus.size()));
  }
  return m;
}

// FGD's fill experiment (SimOptions::fill_ratio): see simulator.h and docs/simulator.md.
StatusOr<SimResult> SimulateFill(const topo::Cluster& cluster, const Trace& trace,
                                 const std::vector<job::JobSpec>& specs, const std::string& policy,
                                 const sched::GangPlacer& placer, const SimOptions& options) {
  SimResult r;
  r.policy = policy;
  r.seed = options.seed;
  r.experiment = "fill";
  r.total_gpus = cluster.TotalGpus();
  const size_t n = specs.size();
  auto demand = [&](size_t i) {
    return static_cast<double>(specs[i].total_gpus) * specs[i].gpu_milli / 1000.0;
  };
  // The trace's jobs once each, then draws with replacement until the demand reaches the target,
  // then a Fisher–Yates shuffle. Draws use the raw 64-bit output (no library distribution).
  std::vector<size_t> order;
  double total = 0;
  for (size_t i = 0; i < n; ++i) {
    order.push_back(i);
    total += demand(i);
  }
  std::mt19937_64 rng(options.seed);
  const double target = options.fill_ratio * r.total_gpus;
  while (n > 0 && total < target) {
    const size_t i = static_cast<size_t>(rng() % n);
    order.push_back(i);
    total += demand(i);
  }
  if (options.fill_shuffle) {
    for (size_t k = order.size(); k > 1; --k) std::swap(order[k - 1], order[rng() % k]);
  }

  sched::SchedulerOptions so;
  so.backfill = false;  // nothing queues: a job is placed on arrival or refused
  so.elastic_grow = false;
  ASSIGN_OR_RETURN(std::unique_ptr<sched::Scheduler> sched, sched::Scheduler::Create(placer, so));
  const size_t m = order.size();
  r.jobs.resize(m);
  const int bins = options.utilization_bins;
  r.bin_us = std::max<int64_t>(1, static_cast<int64_t>((m + bins - 1) / bins));
  r.utilization_series.assign(static_cast<size_t>(bins), 0.0);
  const double cap_milli = 1000.0 * std::max(1, r.total_gpus);
  for (size_t k = 0; k < m; ++k) {
    const size_t i = order[k];
    const int64_t t = static_cast<int64_t>(k) + 1;  // one arrival per µs
    JobOutcome& o = r.jobs[k];
    o.name = trace.jobs[i].name;
    o.gpus = specs[i].total_gpus;
    o.gpu_milli = specs[i].gpu_milli;
    o.submit_us = t;
    o.ideal_us = 0;
    ASSIGN_OR_RETURN(JobId id, sched->Submit(specs[i], t));
    ASSIGN_OR_RETURN(std::vector<JobId> started, sched->Schedule(t));
    ++r.passes;
    r.events += 1;
    if (started.size() == 1 && started[0] == id) {
      o.first_start_us = t;
      if (const sched::Placement* p = sched->PlacementOf(id)) {
        o.nodes = static_cast<int>(p->parts.size());
      }
    } else {
      if (!started.empty()) return InternalError("fill: a pass started another job");
      RETURN_IF_ERROR(sched->Cancel(id, t));
      ++r.refused;
    }
    const double alloc = static_cast<double>(sched->cluster_state().AllocatedMilli()) / cap_milli;
    r.utilization_series[std::min<size_t>(k / r.bin_us, bins - 1)] = alloc;
  }
  RETURN_IF_ERROR(sched->CheckInvariants());
  const sched::ClusterState& st = sched->cluster_state();
  r.final_gpu_allocation_milli = static_cast<double>(st.AllocatedMilli()) / cap_milli;
  r.gpu_allocation_milli = r.final_gpu_allocation_milli;
  r.gpu_utilization = static_cast<double>(st.HeldGpus()) / std::max(1, r.total_gpus);
  // Then every placed job ends, so that the run also checks that all GPUs come back.
  const int64_t end = static_cast<int64_t>(m) + 1;
  for (size_t k = 0; k < m; ++k) {
    if (r.jobs[k].first_start_us < 0) {
      ++r.unfinished;
      continue;
    }
    RETURN_IF_ERROR(sched->Complete(JobId{static_cast<int64_t>(k) + 1}, end));
    r.jobs[k].end_us = end;
    ++r.events;
  }
  r.makespan_us = end;
  RETURN_IF_ERROR(sched->CheckInvariants());
  const sched::Capacity cap = st.ClusterCapacity();
  r.all_free_at_end = st.AllocationCount() == 0 && cap.free_gpus == cap.healthy_gpus;
  return r;
}

}  // namespace

StatusOr<SimResult> Simulate(const topo::Cluster& cluster, const Trace& trace,
                             const std::string& policy,
                             const sched::GangPlacerOptions& placer_options,
                             const SimOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  const int max_tp = std::min(8, std::max(1, MaxGpusPerNode(cluster)));
  const size_t n = trace.jobs.size();
  std::vector<job::JobSpec> specs;
  std::vector<Workload> work;
  specs.reserve(n);
  work.reserve(n);
  for (const TraceJob& j : trace.jobs) {
    ASSIGN_OR_RETURN(job::JobSpec s, MakeJobSpec(j, trace.source, max_tp));
    s.checkpoint_interval_s = options.checkpoint_interval_s;
    s.restart_cost_s = options.restart_cost_s;
    ASSIGN_OR_RETURN(Workload w, WorkloadOf(j, s, StepCatalog::Default(), trace.source));
    specs.push_back(std::move(s));
    work.push_back(std::move(w));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<sched::GangPlacer> placer,
                   sched::GangPlacer::Create(cluster, placer_options));
  if (options.fill_ratio > 0) return SimulateFill(cluster, trace, specs, policy, *placer, options);
  detail::Replay replay(cluster, trace, specs, work, *placer, options);
  return replay.Run(policy);
}

namespace {

// The offered load when every submission offset is multiplied by `scale`: see OfferedLoad.
double LoadAtScale(const Trace& trace, int cluster_gpus, double scale) {
  const int64_t t0 = trace.jobs.front().submit_us;
  const double window = static_cast<double>(trace.jobs.back().submit_us - t0) * scale;
  if (!(window > 0) || cluster_gpus <= 0) return 0;
  double work = 0;
  for (const TraceJob& j : trace.jobs) {
    const double left = window - static_cast<double>(j.submit_us - t0) * scale;
    work += static_cast<double>(j.gpus) * j.gpu_milli / 1000.0 *
            std::min(static_cast<double>(j.duration_us), left);
  }
  return work / (window * cluster_gpus);
}

}  // namespace

double OfferedLoad(const Trace& trace, int cluster_gpus) {
  if (trace.jobs.size() < 2) return 0;
  return LoadAtScale(trace, cluster_gpus, 1.0);
}

StatusOr<double> ScaleToLoad(Trace& trace, int cluster_gpus, double load) {
  if (!(load > 0 && load <= 100)) {
    return InvalidArgumentError("load must be in (0, 100], got " + std::to_string(load));
  }
  if (!(OfferedLoad(trace, cluster_gpus) > 0)) {
    return InvalidArgumentError(trace.source +
                                ": the offered load is undefined (fewer than two distinct "
                                "submission times); --load needs arrivals spread in time");
  }
  // The load falls monotonically as the scale grows (each job's share of the window shrinks),
  // from the ceiling below (every job running from its arrival to the window's end) to 0.
  const double ceiling = LoadAtScale(trace, cluster_gpus, 1e-12);
  if (load >= ceiling) {
    return InvalidArgumentError(trace.source + ": a load of " + std::to_string(load) +
                                " cannot be offered: even with arrivals compressed to nothing "
                                "the jobs hold at most " +
                                std::to_string(ceiling) + " of the cluster");
  }
  double lo = std::log(1e-12), hi = std::log(1e12);  // bisection on log(scale)
  for (int it = 0; it < 200 && hi - lo > 1e-12; ++it) {
    const double mid = 0.5 * (lo + hi);
    (LoadAtScale(trace, cluster_gpus, std::exp(mid)) > load ? lo : hi) = mid;
  }
  const double scale = std::exp(0.5 * (lo + hi));
  const int64_t t0 = trace.jobs.front().submit_us;
  for (TraceJob& j : trace.jobs) {
    j.submit_us =
        t0 + static_cast<int64_t>(std::llround(static_cast<double>(j.submit_us - t0) * scale));
  }
  return scale;
}

}  // namespace toposched::sim
