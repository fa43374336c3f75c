#include "sched/preemption.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <string>
#include <utility>

#include "sched/scheduler_util.h"

namespace toposched::sched {

using internal::GpusOf;
using internal::JobName;
using job::JobState;

std::vector<Preemption::Candidate> Preemption::Candidates(const Job& j) const {
  std::vector<Candidate> cands;
  for (const auto& [id, o_ptr] : s_.Running()) {
    const Job& o = *o_ptr;
    if (o.record.state() != JobState::kRunning || o.spec.priority >= j.spec.priority) continue;
    const int g = GpusOf(o.placement->parts);
    cands.push_back({&o, int64_t{g} * (1 + std::max(o.spec.priority, 0)), g});
  }
  std::stable_sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
    return a.cost != b.cost ? a.cost < b.cost : a.job->id < b.job->id;
  });
  if (static_cast<int>(cands.size()) > s_.options_.max_preempt_candidates) {
    cands.resize(s_.options_.max_preempt_candidates);
  }
  return cands;
}

std::optional<Preemption::Choice> Preemption::Cheapest(const Job& j,
                                                       const std::vector<Candidate>& cands) const {
  const int free_now = s_.state_.ClusterCapacity().free_gpus;
  // Best-first enumeration of subsets in non-decreasing total cost: from a subset whose largest
  // index is i, the successors are (add i+1) and (replace i by i+1).
  std::priority_queue<Subset, std::vector<Subset>, std::greater<Subset>> heap;
  heap.push({cands[0].cost, {0}});
  const int n = static_cast<int>(cands.size());
  int attempts = 0, popped = 0;
  std::optional<Choice> best;
  int best_free_nodes = -1;
  while (!heap.empty() && attempts < s_.options_.max_preempt_combinations && popped < 100000) {
    Subset cur = heap.top();
    heap.pop();
    ++popped;
    if (best && cur.cost > best->victims.cost) break;
    const int last = cur.idx.back();
    if (last + 1 < n) {
      Subset add = cur;
      add.idx.push_back(last + 1);
      add.cost += cands[last + 1].cost;
      heap.push(add);
      Subset rep = cur;
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
    ClusterState trial = s_.state_;
    for (int i : cur.idx) (void)trial.Release(AllocId::Job(cands[i].job->id));
    Verdict v = s_.placer_->Place(trial, j.spec);
    if (!v.fit()) continue;
    const int free_nodes = trial.ClusterCapacity().fully_free_nodes;
    if (!best || free_nodes > best_free_nodes ||
        (free_nodes == best_free_nodes && cur.idx.size() < best->victims.idx.size())) {
      best = Choice{cur, std::move(*v.placement)};
      best_free_nodes = free_nodes;
    }
  }
  return best;
}

Status Preemption::Apply(Job& j, const std::vector<Candidate>& cands, Choice choice,
                         int64_t now_us) {
  std::vector<int64_t> victims;
  for (int i : choice.victims.idx) victims.push_back(cands[i].job->id);
  std::sort(victims.begin(), victims.end());
  std::string names;
  for (int64_t v : victims) names += (names.empty() ? "" : ", ") + JobName(v);
  const std::string by =
      "preempted by " + JobName(j.id) + " (priority " + std::to_string(j.spec.priority) + ")";
  for (int64_t vid : victims) {
    Job& v = *s_.Find(vid);
    Status st = v.record.Transition(now_us, JobState::kPreempted, by);
    if (st.ok()) {
      st = v.record.Transition(now_us, JobState::kRequeued, "requeued after being " + by);
    }
    if (st.ok()) {
      st = v.record.Transition(now_us, JobState::kPending,
                               "back in queue after preemption by " + JobName(j.id));
    }
    s_.Sync(v);
    RETURN_IF_ERROR(st);
    RETURN_IF_ERROR(s_.ReleaseIfStopped(v));
    v.pending_reason = Scheduler::Words("requeued after being " + by);
  }
  return s_.Start(
      j, std::move(choice.placement), now_us,
      "scheduled after preempting " + names + " (" + std::to_string(j.spec.total_gpus) + " GPUs)");
}

StatusOr<bool> Preemption::TryStart(Job& j, int64_t now_us) {
  const std::vector<Candidate> cands = Candidates(j);
  if (cands.empty()) return false;
  std::optional<Choice> choice = Cheapest(j, cands);
  if (!choice) return false;
  RETURN_IF_ERROR(Apply(j, cands, std::move(*choice), now_us));
  return true;
}

}  // namespace toposched::sched
