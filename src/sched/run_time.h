// Run times that jobs declare, for wait-or-spread (SchedulerOptions::wait_or_spread) where no
// step-time model runs beside the scheduler: scheduler scripts (DeclaredRunTimes, `run=S comm=%`)
// and the daemon (SpecRunTimes, a spec's `estimate`). A job declares its run time on its best
// placement and the share of a step it spends communicating there; on another placement p its
// run time stretches as its communication does:
//   run · ((1 − f) + f · p.predicted_ms / p.best_possible_ms)
// (the comm-fraction rule of docs/simulator.md). A running job is expected to end at its start
// (Placement::decision_us) plus its run time on its placement; one moved at a checkpoint
// (SchedulerOptions::consolidate) at its move's expected end.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "core/status.h"
#include "sched/scheduler.h"

namespace toposched::sched {

// The comm-fraction stretch of a placement: (1 − f) + f · predicted_ms / best_possible_ms for a
// job that spends the share f of a step communicating on its best placement; 1 when
// best_possible_ms is 0 (a job that does not communicate) or predicted_ms is not finite.
double CommStretch(double comm_share, double predicted_ms, double best_possible_ms);

// When running job `id` is expected to end by `estimator`'s RunSeconds on its placement: its
// start plus that run time, or its last checkpoint move's expected end; never before `now_us`.
// nullopt when the job holds no placement or has no run time.
std::optional<int64_t> ExpectedEndFromStart(const Scheduler& scheduler,
                                            const RunTimeEstimator& estimator, JobId id,
                                            int64_t now_us);

class DeclaredRunTimes : public RunTimeEstimator {
 public:
  // The scheduler whose placements it reads (running jobs' starts); must outlive this.
  void Attach(const Scheduler* scheduler) { scheduler_ = scheduler; }
  // InvalidArgument unless run_s > 0 and comm_share is in [0, 1].
  Status Declare(JobId id, double run_s, double comm_share);

  // The job's DP all-reduce stays hidden behind its backward pass up to link factor `factor`
  // (RunTimeEstimator::DpHideFactor). InvalidArgument unless factor is in (0, 1e6].
  Status DeclareHideFactor(JobId id, double factor);

  std::optional<double> RunSeconds(JobId id, const Placement& p) const override;
  std::optional<int64_t> ExpectedEndUs(JobId id, int64_t now_us) const override;
  std::optional<double> DpHideFactor(JobId id) const override;

 private:
  struct Declared {
    double run_s = 0, comm_share = 0;
  };
  const Scheduler* scheduler_ = nullptr;
  std::map<JobId, Declared> jobs_;
  std::map<JobId, double> hide_factor_;
};

// The run times jobs declare in their specs (JobSpec::estimate), read from the scheduler's
// current spec of each job: nothing to declare, forget or persist beside it, so a daemon that
// replays its stored inputs plans as it did. A job without an estimate has no run time (it never
// waits for a better placement; nobody plans around its end). A running job's expected end is
// capped at its time limit (from the start of its current run).
class SpecRunTimes : public RunTimeEstimator {
 public:
  // The scheduler whose specs and placements it reads; must outlive this.
  explicit SpecRunTimes(const Scheduler& scheduler) : scheduler_(scheduler) {}
  std::optional<double> RunSeconds(JobId id, const Placement& p) const override;
  std::optional<int64_t> ExpectedEndUs(JobId id, int64_t now_us) const override;

 private:
  const Scheduler& scheduler_;
};

}  // namespace toposched::sched
