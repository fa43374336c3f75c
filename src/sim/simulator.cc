#include "sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <tuple>

#include "sched/policy.h"
#include "sched/scheduler.h"

namespace toposched::sim {

namespace {

constexpr int64_t kNoTime = -1;

// A completion: (time, scheduler job id, run number). A preempted job's old completion stays in
// the heap and is ignored because its run number is stale.
using Completion = std::tuple<int64_t, int64_t, int>;

int MaxGpusPerNode(const topo::Cluster& c) {
  int m = 0;
  for (const topo::ClusterNode& n : c.nodes) {
    m = std::max(m, static_cast<int>(c.profiles[n.profile].topology.gpus.size()));
  }
  return m;
}

int64_t ParseJobId(const std::string& s) {
  // "job-<id>" as the scheduler names its records.
  if (s.rfind("job-", 0) != 0) return -1;
  int64_t v = 0;
  for (size_t i = 4; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

// Uniform in (0, 1] from the raw 64-bit output (the same on every standard library).
double Uniform01(std::mt19937_64& rng) {
  return (static_cast<double>(rng() >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

// A failure or a repair: (time, kind, node, gpu); kind 0 = GPU down, 1 = node down, 2 = GPU
// repaired, 3 = node repaired.
using HealthEvent = std::tuple<int64_t, int, int, int>;

// FGD's fill experiment (SimOptions::fill_ratio): see simulator.h and docs/simulator.md.
StatusOr<SimResult> SimulateFill(const topo::Cluster& cluster, const Trace& trace,
                                 const std::vector<job::JobSpec>& specs, const std::string& policy,
                                 const sched::GangPlacer& placer, const SimOptions& options) {
  SimResult r;
  r.policy = policy;
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
    ASSIGN_OR_RETURN(int64_t id, sched->Submit(specs[i], t));
    ASSIGN_OR_RETURN(std::vector<int64_t> started, sched->Schedule(t));
    ++r.passes;
    r.events += 1;
    if (started.size() == 1 && started[0] == id) {
      o.first_start_us = t;
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
    RETURN_IF_ERROR(sched->Complete(static_cast<int64_t>(k) + 1, end));
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

Status SimOptions::Validate() const {
  if (!(comm_fraction >= 0 && comm_fraction <= 1)) {
    return InvalidArgumentError("comm fraction must be in [0, 1], got " +
                                std::to_string(comm_fraction));
  }
  if (utilization_bins < 1 || utilization_bins > 100000) {
    return InvalidArgumentError("utilization bins must be in [1, 100000]");
  }
  if (!(failures_per_gpu_day >= 0 && failures_per_gpu_day < 1e6)) {
    return InvalidArgumentError("failure rate must be >= 0 per GPU-day");
  }
  if (!(node_failure_fraction >= 0 && node_failure_fraction <= 1)) {
    return InvalidArgumentError("node failure fraction must be in [0, 1]");
  }
  if (!(repair_mean_s > 0 && repair_mean_s < 1e9)) {
    return InvalidArgumentError("mean repair time must be > 0 s");
  }
  if (!(fill_ratio >= 0 && fill_ratio <= 100)) {
    return InvalidArgumentError("fill ratio must be in [0, 100] (0 = replay in time)");
  }
  return OkStatus();
}

double CommSlowdown(double comm_fraction, double predicted_ms, double best_possible_ms) {
  if (!(best_possible_ms > 0) || !std::isfinite(predicted_ms)) return 1.0;
  return (1.0 - comm_fraction) + comm_fraction * predicted_ms / best_possible_ms;
}

StatusOr<SimResult> Simulate(const topo::Cluster& cluster, const Trace& trace,
                             const std::string& policy,
                             const sched::GangPlacerOptions& placer_options,
                             const SimOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  const int max_tp = std::min(8, std::max(1, MaxGpusPerNode(cluster)));
  const size_t n = trace.jobs.size();
  std::vector<job::JobSpec> specs;
  specs.reserve(n);
  for (const TraceJob& j : trace.jobs) {
    ASSIGN_OR_RETURN(job::JobSpec s, MakeJobSpec(j, trace.source, max_tp));
    specs.push_back(std::move(s));
  }

  ASSIGN_OR_RETURN(std::unique_ptr<sched::GangPlacer> placer,
                   sched::GangPlacer::Create(cluster, placer_options));
  ASSIGN_OR_RETURN(std::unique_ptr<sched::Scheduler> sched, sched::Scheduler::Create(*placer));
  // The ideal placement is the same for every policy: toposched's cost-model placement on the
  // empty cluster (a baseline's own best_possible_ms would be its own choice on the empty
  // cluster, which would hide its worse GPU choices).
  ASSIGN_OR_RETURN(sched::GangPlacerOptions ref_options, sched::PolicyOptions("toposched"));
  ASSIGN_OR_RETURN(std::unique_ptr<sched::GangPlacer> reference,
                   sched::GangPlacer::Create(cluster, ref_options));
  ASSIGN_OR_RETURN(sched::ClusterState empty, sched::ClusterState::Create(cluster));
  std::vector<double> ideal_ms(n, -1.0);

  if (options.fill_ratio > 0) return SimulateFill(cluster, trace, specs, policy, *placer, options);

  SimResult r;
  r.policy = policy;
  r.total_gpus = cluster.TotalGpus();
  r.jobs.resize(n);
  for (size_t i = 0; i < n; ++i) {
    r.jobs[i].name = trace.jobs[i].name;
    r.jobs[i].gpu_milli = specs[i].gpu_milli;
    r.jobs[i].gpus = specs[i].total_gpus;
    r.jobs[i].submit_us = trace.jobs[i].submit_us;
    r.jobs[i].ideal_us = trace.jobs[i].duration_us;
  }

  // Scheduler ids are sequential from 1 in submission order, so trace index = id − 1.
  std::vector<int> run(n, 0);  // run number of the job's current (or last) run
  std::vector<char> running(n, 0);
  std::priority_queue<Completion, std::vector<Completion>, std::greater<Completion>> done;
  std::map<int, int> waiting_replicas;  // replica size → waiting jobs (for fragmentation)
  auto wait_add = [&](size_t i, int d) {
    int& c = waiting_replicas[specs[i].gpus_per_replica];
    c += d;
    if (c == 0) waiting_replicas.erase(specs[i].gpus_per_replica);
  };

  int busy = 0;             // GPUs held (whole or shared), from the cluster state
  int64_t alloc_milli = 0;  // milli allocated, from the cluster state
  double busy_area = 0;     // GPU·µs
  double alloc_area = 0;    // milli·µs
  double frag_area = 0;     // GPU·µs
  double frag_now = 0;      // GPUs counted as fragmented since the last pass
  std::vector<std::pair<int64_t, int>> busy_steps;  // (time, busy GPUs from then on)
  int64_t last_t = n > 0 ? trace.jobs.front().submit_us : 0;
  int64_t last_end = last_t;
  size_t next = 0;
  size_t logged = 0;

  // Failures: the next draw and the pending repairs.
  std::mt19937_64 rng(options.seed);
  std::priority_queue<HealthEvent, std::vector<HealthEvent>, std::greater<HealthEvent>> health;
  const double rate_per_us =
      options.failures ? options.failures_per_gpu_day * static_cast<double>(r.total_gpus) / 86400e6
                       : 0;
  std::vector<int> gpu_prefix;  // GPUs on nodes [0, k)
  gpu_prefix.push_back(0);
  for (const topo::ClusterNode& node : cluster.nodes) {
    gpu_prefix.push_back(gpu_prefix.back() +
                         static_cast<int>(cluster.profiles[node.profile].topology.gpus.size()));
  }
  auto draw_failure = [&](int64_t after) {
    if (rate_per_us <= 0 || r.total_gpus <= 0) return;
    if (next >= n && done.empty()) return;  // nothing left that a failure could hit
    const double gap = -std::log(Uniform01(rng)) / rate_per_us;
    const int64_t when = after + std::max<int64_t>(1, static_cast<int64_t>(std::min(gap, 1e18)));
    const int k = static_cast<int>(Uniform01(rng) * r.total_gpus) % r.total_gpus;
    const int node = static_cast<int>(std::upper_bound(gpu_prefix.begin(), gpu_prefix.end(), k) -
                                      gpu_prefix.begin() - 1);
    const bool whole = Uniform01(rng) <= options.node_failure_fraction;
    health.emplace(when, whole ? 1 : 0, node, k - gpu_prefix[node]);
  };
  draw_failure(last_t);
  std::vector<char> hit(n, 0);
  // Jobs stopped by the scheduler (preempted, failed, node failed) and jobs back in the queue,
  // from the events since the last look.
  auto scan_events = [&]() -> Status {
    const auto& log = sched->Events();
    for (; logged < log.size(); ++logged) {
      const job::JobEvent& e = log[logged];
      const int64_t id = ParseJobId(e.job_id);
      if (id < 1 || id > static_cast<int64_t>(n)) continue;
      const size_t i = static_cast<size_t>(id - 1);
      if (e.from == job::JobState::kRunning && running[i] &&
          (e.to == job::JobState::kPreempted || e.to == job::JobState::kFailed ||
           e.to == job::JobState::kNodeFail)) {
        running[i] = 0;
        if (e.to == job::JobState::kPreempted) {
          ++r.jobs[i].preemptions;
          ++r.preemptions;
        } else {
          ++r.jobs[i].failures;
          ++r.jobs_interrupted;
          hit[i] = 1;
        }
      }
      if (e.to == job::JobState::kPending && e.from == job::JobState::kRequeued) wait_add(i, +1);
    }
    return OkStatus();
  };

  int repairs_pending = 0;
  bool final_taken = false;
  // Runs while work is left; once every job has arrived and nothing runs, only outstanding
  // repairs (which may let a waiting job fit) keep it going, and no new failure is drawn.
  while (next < n || !done.empty() || (repairs_pending > 0 && !waiting_replicas.empty())) {
    int64_t t = next < n ? trace.jobs[next].submit_us : INT64_MAX;
    if (!done.empty()) t = std::min(t, std::get<0>(done.top()));
    if (!health.empty()) t = std::min(t, std::get<0>(health.top()));
    busy_area += static_cast<double>(busy) * static_cast<double>(t - last_t);
    alloc_area += static_cast<double>(alloc_milli) * static_cast<double>(t - last_t);
    frag_area += frag_now * static_cast<double>(t - last_t);
    last_t = t;

    while (!done.empty() && std::get<0>(done.top()) == t) {
      auto [when, id, number] = done.top();
      done.pop();
      const size_t i = static_cast<size_t>(id - 1);
      if (!running[i] || run[i] != number) continue;
      RETURN_IF_ERROR(sched->Complete(id, t));
      running[i] = 0;
      r.jobs[i].end_us = t;
      last_end = std::max(last_end, t);
      ++r.events;
    }
    while (next < n && trace.jobs[next].submit_us == t) {
      ASSIGN_OR_RETURN(int64_t id, sched->Submit(specs[next], t));
      if (id != static_cast<int64_t>(next) + 1) {
        return InternalError("scheduler ids are not sequential (" + std::to_string(id) + ")");
      }
      wait_add(next, +1);
      ++next;
      ++r.events;
    }
    while (!health.empty() && std::get<0>(health.top()) == t) {
      auto [when, kind, node, gpu] = health.top();
      health.pop();
      if (kind >= 2) --repairs_pending;
      const std::string why = kind == 0   ? "GPU failure (simulated)"
                              : kind == 1 ? "node failure (simulated)"
                                          : "repaired (simulated)";
      if (kind == 0 || kind == 2) {
        const bool down = kind == 0;
        if (down && sched->cluster_state().GpuHealth(node, gpu) == topo::Health::kUnhealthy) {
          draw_failure(t);
          continue;  // already down: nothing new breaks
        }
        RETURN_IF_ERROR(sched->SetGpuHealth(
            node, gpu, down ? topo::Health::kUnhealthy : topo::Health::kHealthy, t, why));
      } else {
        const bool down = kind == 1;
        if (down && sched->cluster_state().NodeHealth(node) == topo::Health::kUnhealthy) {
          draw_failure(t);
          continue;
        }
        RETURN_IF_ERROR(sched->SetNodeHealth(
            node, down ? topo::Health::kUnhealthy : topo::Health::kHealthy, t, why));
      }
      if (kind <= 1) {
        ++r.failures;
        ++repairs_pending;
        const double repair = -std::log(Uniform01(rng)) * options.repair_mean_s * 1e6;
        health.emplace(t + std::max<int64_t>(1, static_cast<int64_t>(std::min(repair, 1e15))),
                       kind + 2, node, gpu);
        draw_failure(t);
      }
    }
    RETURN_IF_ERROR(scan_events());
    RETURN_IF_ERROR(sched->Tick(t));
    RETURN_IF_ERROR(scan_events());
    if (!waiting_replicas.empty()) {
      ASSIGN_OR_RETURN(std::vector<int64_t> started, sched->Schedule(t));
      ++r.passes;
      RETURN_IF_ERROR(scan_events());  // preemptions inside the pass
      for (int64_t id : started) {
        const size_t i = static_cast<size_t>(id - 1);
        const sched::Placement* p = sched->PlacementOf(id);
        if (p == nullptr)
          return InternalError("started job " + std::to_string(id) + " holds no GPUs");
        const double slow =
            CommSlowdown(options.comm_fraction, p->predicted_ms, p->best_possible_ms);
        // A preempted job restarts from the beginning (no checkpoint is modelled).
        const int64_t runtime = std::max<int64_t>(
            1, std::llround(static_cast<double>(trace.jobs[i].duration_us) * slow));
        running[i] = 1;
        ++run[i];
        if (r.jobs[i].first_start_us == kNoTime) r.jobs[i].first_start_us = t;
        r.jobs[i].comm_slowdown = slow;
        wait_add(i, -1);
        done.emplace(t + runtime, id, run[i]);
      }
    }
    // Fragmentation after the pass: free GPUs on nodes that cannot hold the smallest waiting
    // replica.
    frag_now = 0;
    if (!waiting_replicas.empty()) {
      const int smallest = waiting_replicas.begin()->first;
      if (smallest > 1) {
        const sched::ClusterState& st = sched->cluster_state();
        int frag = 0;
        for (int node = 0; node < static_cast<int>(cluster.nodes.size()); ++node) {
          const int f = st.FreeMask(node).count();
          if (f > 0 && f < smallest) frag += f;
        }
        frag_now = frag;
      }
    }
    busy = static_cast<int>(sched->cluster_state().HeldGpus());
    alloc_milli = sched->cluster_state().AllocatedMilli();
    if (next >= n && !final_taken) {
      final_taken = true;
      r.final_gpu_allocation_milli =
          static_cast<double>(alloc_milli) / (1000.0 * std::max(1, r.total_gpus));
    }
    if (busy_steps.empty() || busy_steps.back().second != busy) busy_steps.emplace_back(t, busy);
  }

  const int64_t start = n > 0 ? trace.jobs.front().submit_us : 0;
  r.makespan_us = std::max<int64_t>(0, last_end - start);
  const double denom = static_cast<double>(std::max(1, r.total_gpus)) *
                       static_cast<double>(std::max<int64_t>(1, r.makespan_us));
  // Only the area up to the last completion counts (jobs that never ran add none after it).
  r.gpu_utilization = r.makespan_us > 0 ? std::min(1.0, busy_area / denom) : 0;
  r.mean_fragmentation = r.makespan_us > 0 ? frag_area / denom : 0;
  r.gpu_allocation_milli = r.makespan_us > 0 ? std::min(1.0, alloc_area / (1000.0 * denom)) : 0;

  // Utilisation series: the busy step function averaged over equal bins of the makespan.
  const int bins = options.utilization_bins;
  r.bin_us = std::max<int64_t>(1, (r.makespan_us + bins - 1) / bins);
  r.utilization_series.assign(static_cast<size_t>(bins), 0.0);
  for (size_t s = 0; s < busy_steps.size(); ++s) {
    const int64_t from = busy_steps[s].first - start;
    const int64_t to = s + 1 < busy_steps.size() ? busy_steps[s + 1].first - start : r.makespan_us;
    if (busy_steps[s].second == 0 || to <= from) continue;
    for (int64_t b = from / r.bin_us; b < bins && b * r.bin_us < to; ++b) {
      const int64_t lo = std::max(from, b * r.bin_us);
      const int64_t hi = std::min(to, (b + 1) * r.bin_us);
      if (hi > lo) {
        r.utilization_series[static_cast<size_t>(b)] +=
            static_cast<double>(busy_steps[s].second) * static_cast<double>(hi - lo);
      }
    }
  }
  for (double& v : r.utilization_series) {
    v /= static_cast<double>(std::max(1, r.total_gpus)) * static_cast<double>(r.bin_us);
  }

  for (size_t i = 0; i < n; ++i) {
    r.unfinished += r.jobs[i].end_us == kNoTime ? 1 : 0;
    r.failures_survived += hit[i] && r.jobs[i].end_us != kNoTime ? 1 : 0;
  }
  RETURN_IF_ERROR(sched->CheckInvariants());
  const sched::Capacity cap = sched->cluster_state().ClusterCapacity();
  r.all_free_at_end = r.unfinished == 0 ? sched->cluster_state().AllocationCount() == 0 &&
                                              cap.free_gpus == cap.healthy_gpus
                                        : sched->cluster_state().AllocationCount() == 0;
  return r;
}

}  // namespace toposched::sim
