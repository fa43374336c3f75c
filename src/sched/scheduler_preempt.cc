// Preemption: the cheapest set of lower-priority victims whose GPUs let a blocked job start.
#include <algorithm>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "sched/scheduler.h"
#include "sched/scheduler_util.h"

namespace toposched::sched {

using internal::GpusOf;
using internal::JobName;
using job::JobState;

StatusOr<bool> Scheduler::TryPreempt(Job& j, int64_t now_us) {
  struct Cand {
    const Job* job;
    int64_t cost;
    int gpus;
  };
  std::vector<Cand> cands;
  for (const auto& [id, o_ptr] : Running()) {
    const Job& o = *o_ptr;
    if (o.record.state() != JobState::kRunning || o.spec.priority >= j.spec.priority) continue;
    const int g = GpusOf(o.placement->parts);
    cands.push_back({&o, int64_t{g} * (1 + std::max(o.spec.priority, 0)), g});
  }
  std::stable_sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) {
    return a.cost != b.cost ? a.cost < b.cost : a.job->id < b.job->id;
  });
  if (static_cast<int>(cands.size()) > options_.max_preempt_candidates) {
    cands.resize(options_.max_preempt_candidates);
  }
  if (cands.empty()) return false;
  const int free_now = state_.ClusterCapacity().free_gpus;

  // Best-first enumeration of subsets in non-decreasing total cost: from a subset whose largest
  // index is i, the successors are (add i+1) and (replace i by i+1).
  struct Node {
    int64_t cost;
    std::vector<int> idx;
    bool operator>(const Node& o) const {
      return cost != o.cost ? cost > o.cost : idx.size() > o.idx.size();
    }
  };
  std::priority_queue<Node, std::vector<Node>, std::greater<Node>> heap;
  heap.push({cands[0].cost, {0}});
  const int n = static_cast<int>(cands.size());
  int attempts = 0, popped = 0;
  std::optional<Node> best;
  std::optional<Placement> best_placement;
  int best_free_nodes = -1;
  while (!heap.empty() && attempts < options_.max_preempt_combinations && popped < 100000) {
    Node cur = heap.top();
    heap.pop();
    ++popped;
    if (best && cur.cost > best->cost) break;
    const int last = cur.idx.back();
    if (last + 1 < n) {
      Node add = cur;
      add.idx.push_back(last + 1);
      add.cost += cands[last + 1].cost;
      heap.push(add);
      Node rep = cur;
      rep.idx.back() = last + 1;
      rep.cost += cands[last + 1].cost - cands[last].cost;
      heap.push(rep);
    }
    int freed = 0;
    for (int i : cur.idx) freed += cands[i].gpus;
    // Cannot fit: no placement attempt. (A fractional job may fit on a shared GPU's room,
    // which free_gpus does not count.)
    if (!j.spec.Fractional() && free_now + freed < j.spec.total_gpus) continue;
    ++attempts;
    ClusterState trial = state_;
    for (int i : cur.idx) (void)trial.Release(cands[i].job->id);
    Verdict v = placer_->Place(trial, j.spec);
    if (!v.fit()) continue;
    const int free_nodes = trial.ClusterCapacity().fully_free_nodes;
    if (!best || free_nodes > best_free_nodes ||
        (free_nodes == best_free_nodes && cur.idx.size() < best->idx.size())) {
      best = cur;
      best_placement = std::move(v.placement);
      best_free_nodes = free_nodes;
    }
  }
  if (!best) return false;

  std::vector<int64_t> victims;
  for (int i : best->idx) victims.push_back(cands[i].job->id);
  std::sort(victims.begin(), victims.end());
  std::string names;
  for (int64_t v : victims) names += (names.empty() ? "" : ", ") + JobName(v);
  const std::string by =
      "preempted by " + JobName(j.id) + " (priority " + std::to_string(j.spec.priority) + ")";
  for (int64_t vid : victims) {
    Job& v = *Find(vid);
    Status st = v.record.Transition(now_us, JobState::kPreempted, by);
    if (st.ok()) {
      st = v.record.Transition(now_us, JobState::kRequeued, "requeued after being " + by);
    }
    if (st.ok()) {
      st = v.record.Transition(now_us, JobState::kPending,
                               "back in queue after preemption by " + JobName(j.id));
    }
    Sync(v);
    RETURN_IF_ERROR(st);
    RETURN_IF_ERROR(ReleaseIfStopped(v));
    v.pending_reason = Words("requeued after being " + by);
  }
  RETURN_IF_ERROR(Start(
      j, std::move(*best_placement), now_us,
      "scheduled after preempting " + names + " (" + std::to_string(j.spec.total_gpus) + " GPUs)"));
  return true;
}

}  // namespace toposched::sched
