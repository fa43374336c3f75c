#pragma once

// One pass of Scheduler::Schedule, split into its steps (internal to the scheduler: included by
// scheduler.cc and scheduler_pass.cc only). The order, reservation and backfill rules are
// described in scheduler.h.

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "job/job_spec.h"
#include "placer/gang.h"
#include "sched/lookahead.h"
#include "sched/preemption.h"
#include "sched/scheduler.h"
#include "sched/scheduler_util.h"
#include "state/cluster_state.h"
#include "state/link_model.h"

namespace toposched::sched {

// The state of one pass over the pending jobs and its steps. Run() once per object.
class SchedulingPass {
 public:
  SchedulingPass(Scheduler& s, int64_t now_us) : s_(s), now_us_(now_us) {}
  SchedulingPass(const SchedulingPass&) = delete;
  SchedulingPass& operator=(const SchedulingPass&) = delete;

  // Scheduler::Schedule: the ids started (or started by preemption/shrinking), in order.
  StatusOr<std::vector<JobId>> Run();

 private:
  using Job = Scheduler::Job;
  // Sort keys are copied out of the jobs so that sorting and heap moves touch contiguous
  // memory, not the job records.
  struct Queued {
    int64_t submit_us;
    int64_t id;
    Job* job;
  };
  struct Bucket {
    int priority = 0;
    const std::string* user = nullptr;
    const std::string* queue = nullptr;
    std::vector<Queued> jobs;
    size_t next = 0;
    double penalty = 0;
  };
  // One job's turn: what it is placed as, its verdict now, and its wait-or-spread plan.
  struct Turn {
    Turn(Job& job, const job::JobSpec& placed) : j(job), spec(placed) {}
    Job& j;
    const job::JobSpec& spec;  // PlacementSpec: j.spec, or its local (held) variant
    bool held = false;
    int shape = 0;
    Verdict now_v;
    std::string gpus;  // "N GPUs"
    std::optional<Lookahead::WaitPlan> plan;
    std::string note;
    // Behind a reservation: when the job would end started now (Lookahead::BackfillEndUs).
    std::optional<int64_t> end_us;
    bool end_estimated = false;
  };

  void CompactPending();
  void BuildOrder();
  bool After(size_t x, size_t y) const;
  void Rekey(const std::string* user, const std::string* queue);
  Job* NextJob();
  StatusOr<bool> Consider(Job& j);  // false: stop the pass (strict order)
  Verdict VerdictNow(const Turn& t);
  // Scheduler::DpHideFactor of the job, when the contention score runs (else 0: not asked).
  double HideFactor(const Turn& t) const { return links_ptr_ ? s_.DpHideFactor(t.j.id) : 0.0; }
  void CountStart(const Job& started);
  void AfterRelease(const Job& j);
  bool Waits(Turn& t, const Placement& p, const ClusterState& base);
  void Reserve(const Lookahead::Reservation& r);
  StatusOr<bool> PlaceAtHead(Turn& t);  // false: stop the pass (strict order)
  Status PlaceBehindReservation(Turn& t);
  Status BackfillBeside(Turn& t);
  Status Finish();

  Scheduler& s_;
  const int64_t now_us_;
  std::vector<JobId> started_;
  bool waiting_ = false;  // a job left waiting for resources (no grow then)
  std::vector<Job*> pending_;
  Scheduler::Shares shares_;
  std::optional<Lookahead::Reservation> res_;
  std::optional<ClusterState> shadow_;  // state_ with the reserved free GPUs blocked
  Scheduler::Usage usage_;
  // Link loads of the running jobs (contention score), kept up to date through the pass.
  std::optional<LinkModel> links_;
  const LinkModel* links_ptr_ = nullptr;
  std::vector<Bucket> buckets_;
  std::vector<size_t> heap_;  // bucket indices, a heap under After
  // Shapes (PlacementShapeKey, interned) that fit nowhere now, with their explanation: starts
  // only take GPUs, so a shape that did not fit stays unfit for the rest of the pass (cleared
  // when a preemption or shrink frees GPUs). The same for the reservation's shadow state.
  std::vector<std::string> no_fit_;
  std::vector<char> no_fit_known_;
  std::vector<char> no_fit_shadow_;
  std::vector<std::shared_ptr<const std::string>> behind_reason_;
};

}  // namespace toposched::sched
