// Preemption: the cheapest set of lower-priority running jobs whose GPUs let a blocked job
// start. Candidates are the running jobs of lower priority, each costing its GPUs times
// (1 + its priority); sets of them are tried in order of total cost (best first), at most
// SchedulerOptions::max_preempt_candidates jobs and max_preempt_combinations placement
// attempts; among the cheapest sets that let the job fit, the one leaving the most whole nodes
// free wins, then the smaller set. The victims go back to the queue (PREEMPTED → REQUEUED →
// PENDING) and the job starts. Internal to src/sched (scheduler_pass.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/status.h"
#include "placement/placement.h"
#include "sched/scheduler.h"

namespace toposched::sched {

class Preemption {
 public:
  using Job = Scheduler::Job;  // the scheduler's record of one job

  explicit Preemption(Scheduler& s) : s_(s) {}

  // Tries to start `j` by preempting; on success requeues the victims and starts j (true).
  // False: no set of candidates lets it fit. Errors of the job records (bugs) are returned.
  StatusOr<bool> TryStart(Job& j, int64_t now_us);

 private:
  struct Candidate {
    const Job* job;
    int64_t cost;
    int gpus;
  };
  // A set of candidates (indices, ascending) and its total cost.
  struct Subset {
    int64_t cost;
    std::vector<int> idx;
    bool operator>(const Subset& o) const {
      return cost != o.cost ? cost > o.cost : idx.size() > o.idx.size();
    }
  };
  struct Choice {
    Subset victims;
    Placement placement;
  };

  // Lower-priority running jobs, cheapest first (ties by id), at most max_preempt_candidates.
  std::vector<Candidate> Candidates(const Job& j) const;
  // The cheapest set whose release lets `j` fit (see the file comment); nullopt: none.
  std::optional<Choice> Cheapest(const Job& j, const std::vector<Candidate>& cands) const;
  // Requeues the chosen victims and starts `j` on the placement found.
  Status Apply(Job& j, const std::vector<Candidate>& cands, Choice choice, int64_t now_us);

  Scheduler& s_;
};

}  // namespace toposched::sched
