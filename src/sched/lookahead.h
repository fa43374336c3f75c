// The scheduler's look ahead: when running jobs end (their time limits, kill deadlines, or under
// backfill_by_estimates the run-time estimator's expected ends), the reservation for the blocked
// head of the queue, which later jobs may backfill without delaying it, and the wait-or-spread
// plan of a job that would run faster if it waited for a better placement. A read-only view of
// the scheduler, made for one question; it changes nothing (the pass applies its answers).
// Internal to src/sched (scheduler_pass.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "job/job_spec.h"
#include "placement/placement.h"
#include "sched/scheduler.h"
#include "state/cluster_state.h"

namespace toposched::sched {

class Lookahead {
 public:
  using Job = Scheduler::Job;  // the scheduler's record of one job
  // A wait-or-spread plan (PlanWait): `wait` when the best placement found after running jobs'
  // expected ends (start_us, finish_us, placement) finishes the job before starting now would
  // (finish_now_us); `alternative` false: none was found before that.
  struct WaitPlan {
    bool wait = false, alternative = false;
    int64_t start_us = 0;
    double finish_us = 0, finish_now_us = 0;
    Placement placement;
  };
  // The GPUs held for the blocked head of the queue from when running jobs are expected to end.
  struct Reservation {
    int64_t job_id = 0;
    int64_t start_us = 0;  // INT64_MAX: never (running jobs without a time limit)
    std::vector<NodeGpus> parts;
    bool estimated = false;  // start_us rests on a running job's estimated end
  };

  explicit Lookahead(const Scheduler& s) : s_(s) {}

  // The reservation for `j` (placed as `spec`): running jobs released in order of their ends
  // (ReservationEndUs) until it fits; without an end, the GPUs it would take with all gone.
  Reservation MakeReservation(const Job& j, const job::JobSpec& spec, int64_t now_us) const;
  // Wait-or-spread (SchedulerOptions::wait_or_spread): the placements on `base` (the cluster,
  // or the backfill shadow) released of running jobs in expected-end order, against starting
  // now on `now_p` (planned again at every pass, never past the job's first plan). nullopt: no plan
  // applies (off, no estimate, `now_p` already the best possible).
  std::optional<WaitPlan> PlanWait(const Job& j, const job::JobSpec& spec, const Placement& now_p,
                                   const ClusterState& base, int64_t now_us) const;
  // The pending reason of a job waiting on `plan` instead of starting on `now_p`, in numbers.
  std::string WaitWords(const Job& j, const WaitPlan& plan, const Placement& now_p,
                        int64_t now_us) const;
  // What decided a job to start on `now_p` against `plan` (appended to its start reason).
  std::string SpreadNote(const WaitPlan& plan, const Placement& now_p) const;
  // When a running job ends for the reservation: EndUs, or without a limit (and a kill
  // deadline) its expected end under backfill_by_estimates (INT64_MAX: unknown).
  int64_t ReservationEndUs(const Job& j, int64_t now_us) const;
  // When pending job `j` started now on `p` would end, for backfill: now + its time limit, or
  // without one its estimated run there under backfill_by_estimates when `estimate_ok` (the
  // reservation it is weighed against rests on an estimate itself: one from time limits alone is
  // not traded against an estimate); nullopt: unknown. `estimated` tells which.
  std::optional<int64_t> BackfillEndUs(const Job& j, const Placement& p, int64_t now_us,
                                       bool estimate_ok, bool* estimated) const;

 private:
  const Scheduler& s_;
};

}  // namespace toposched::sched
