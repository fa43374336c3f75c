// The simulator's vocabulary: its options (SimOptions), one job's outcome, a run's result, and
// the two measures the replay takes as it goes (a job's stretch under the comm-fraction rule,
// the free GPUs waiting jobs cannot use). sim/simulator.h runs a trace with them; sim/replay.h
// is the replay in time behind it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "placer/policy.h"
#include "state/cluster_state.h"

namespace toposched::sim {
// How a job's run time follows its placement.
//   kStep: the step-time model (default): progress at ideal step / current step, contention on
//     shared links, recomputed whenever the running set changes.
//   kCommFraction: the earlier rule, kept to reproduce old tables: run time = duration ·
//     CommSlowdown(comm_fraction, predicted_ms, reference predicted_ms), fixed at the start.
enum class RuntimeModel { kStep, kCommFraction };

struct SimOptions {
  RuntimeModel runtime_model = RuntimeModel::kStep;
  // kCommFraction only: fraction f of a step spent in communication on the ideal placement
  // (docs/simulator.md; measured median 0.10 in the Pollux throughput profiles). In [0, 1].
  double comm_fraction = 0.10;
  uint64_t seed = 1;
  // How long a job of the "locality-relax" policy waits for a consolidated placement before it
  // may go anywhere (SchedulerOptions::locality_wait_us). The Philly paper describes the rule
  // but publishes no timeout: 600 s is this project's choice, stated wherever a table uses it.
  double locality_wait_s = sched::kDefaultLocalityWaitS;
  // The "toposched" policy waits or spreads by expected finish time (SchedulerOptions::
  // wait_or_spread), planning with the step-time model and each running job's remaining work:
  // the simulator's estimates are exact, an upper bound on what estimates from time limits give.
  // Only with RuntimeModel::kStep. false: the ablation without it.
  bool wait_or_spread = true;
  // The "toposched" policy backfills by the same estimates (SchedulerOptions::
  // backfill_by_estimates): traces give no time limits, so without estimates a blocked head job
  // reserves the GPUs it would take with every running job gone, and later jobs backfill around
  // those. Only with RuntimeModel::kStep. Off by default: on the LLM mix it made toposched's mean
  // JCT worse (docs/evaluation.md, "Backfill by run-time estimates"); a what-if of the run, like
  // the ablations. backfill_by_estimates_all gives it to every policy; it needs
  // backfill_by_estimates.
  bool backfill_by_estimates = false;
  bool backfill_by_estimates_all = false;
  // The "toposched" policy moves running jobs that checkpoint to faster placements
  // (SchedulerOptions::consolidate), planning with the same estimates. Only with
  // RuntimeModel::kStep. false: the ablation without it. A move costs the job its restart (no
  // progress for JobSpec::restart_cost_s) and the work since its last checkpoint (done again).
  bool consolidate = true;
  // > 0: every job checkpoints at this interval and restarts in restart_cost_s (what-if inputs of
  // the run, not model constants: traces carry no checkpoint data). Both > 0, or both 0.
  int64_t checkpoint_interval_s = 0;
  int64_t restart_cost_s = 0;
  // Unexpected interruptions drawn as a Poisson process over the cluster's GPUs, reported to the
  // scheduler (Scheduler::SetGpuHealth / SetNodeHealth unhealthy, healthy again after a repair
  // time drawn from an exponential distribution). Default rate: the Llama 3 report, 419
  // interruptions on 16,384 GPUs in 54 days. A share node_failure_fraction of them takes the
  // whole node down, the rest one GPU. Jobs hit follow their failure policy (requeue by default)
  // and restart from the beginning.
  bool failures = false;
  double failures_per_gpu_day = 419.0 / (16384.0 * 54.0);
  double node_failure_fraction = 0.2;
  double repair_mean_s = 3 * 3600.0;
  // Points of the utilisation-over-time series (time-averaged bins over the makespan).
  int utilization_bins = 200;
  // 0: replay the trace in time (arrivals, the pods' own durations). > 0: the fill experiment of
  // FGD (ATC'23) instead: the trace's jobs plus jobs drawn from it uniformly with replacement
  // (seeded by `seed`) until their GPU demand (Σ gpus · gpu_milli / 1000) reaches fill_ratio ×
  // the cluster's GPUs, shuffled, arrive one by one and never end; each is placed at once or
  // refused (cancelled: never queued). SimResult::final_gpu_allocation_milli is then FGD's
  // "GPU allocation ratio" after the last arrival. FGD uses 1.3. In (0, 100].
  double fill_ratio = 0;
  // Fill only: false keeps the arrival order (the trace's jobs in trace order, then the draws)
  // instead of shuffling it (FGD's --shuffle-pod=false); tests use it to fix the order.
  bool fill_shuffle = true;
  Status Validate() const;
};

// comm_slowdown = (1 − f) + f · predicted_ms / best_possible_ms (1 when best_possible_ms is 0:
// a job that does not communicate is not stretched). Never below 1 − f. The simulator takes
// best_possible_ms from the toposched policy's placement of the job on the empty cluster, the
// same reference for every policy.
double CommSlowdown(double comm_fraction, double predicted_ms, double best_possible_ms);

struct JobOutcome {
  std::string name;
  int gpus = 0;
  int64_t submit_us = 0;
  int64_t first_start_us = -1;  // -1: never started
  int64_t end_us = -1;          // -1: not finished when the simulation stopped
  int64_t ideal_us = 0;         // the trace duration: run time on an ideal placement
  // Wall time of its last run / ideal_us: the stretch of its placement and the contention it
  // met (below 1 when its placement beat the reference).
  double comm_slowdown = 1.0;
  // Time average over its last run of step time with contention / step time without (1 for a
  // job on no shared link).
  double contention_slowdown = 1.0;
  int nodes = 0;         // nodes its last run held (0: never started; > 1: it spanned nodes)
  int gpu_milli = 1000;  // < 1000: a fractional job (a share of one GPU)
  int preemptions = 0;
  int failures = 0;  // runs of this job stopped by a failure
  int moves = 0;     // consolidation moves
};

struct SimResult {
  std::string policy;
  uint64_t seed = 0;  // SimOptions::seed of the run
  int total_gpus = 0;
  std::vector<JobOutcome> jobs;  // in trace order
  int64_t makespan_us = 0;       // last end − first submission
  double gpu_utilization = 0;    // ∫ busy GPUs dt / (GPUs · makespan); a shared
                                 // GPU counts as one busy GPU
  // ∫ busy GPUs dt / (GPUs · window) over the arrival window [first, last submission]: the
  // figure to set beside the offered load (OfferedLoad), which is defined on the same window.
  double window_utilization = 0;
  // ∫ allocated milli dt / (1000 · GPUs · makespan): the allocated share of the GPUs, a shared
  // GPU counting its used milli (ClusterState::AllocatedMilli). Fill mode: the final figure.
  double gpu_allocation_milli = 0;
  // Allocated milli / (1000 · GPUs) after the pass at the last arrival (replay), or after the
  // last arrival of the fill experiment (FGD's final GPU allocation).
  double final_gpu_allocation_milli = 0;
  std::string experiment = "replay";       // "replay" or "fill"
  int refused = 0;                         // fill mode: jobs that could not be placed
  std::vector<double> utilization_series;  // busy fraction per bin of bin_us
  int64_t bin_us = 0;
  // Time average of ExpectedUnusableGpus (free GPUs that a waiting job, drawn among the waiting
  // jobs, cannot use) over the cluster's GPUs; 0 while nobody waits.
  double mean_fragmentation = 0;
  int preemptions = 0;
  int moves = 0;                 // consolidation moves (SimOptions::consolidate)
  int failures = 0;              // interruptions drawn (GPU or node down)
  int jobs_interrupted = 0;      // job runs stopped by a failure
  int failures_survived = 0;     // jobs hit by a failure that still completed
  int unfinished = 0;            // never fitted (unresolvable on this cluster) or still queued
  int64_t events = 0;            // arrivals + completions processed
  int64_t passes = 0;            // Schedule calls
  bool all_free_at_end = false;  // every GPU free and no allocation left after the last event
};

// The expected number of free GPUs that a waiting job cannot use: the mean, over the waiting
// jobs (`waiting`: replica size → count), of the free GPUs on nodes with fewer free GPUs than
// the job's replica. 0 when nobody waits.
double ExpectedUnusableGpus(const sched::ClusterState& state, const std::map<int, int>& waiting);

}  // namespace toposched::sim
