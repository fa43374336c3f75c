// Scheduler::CheckInvariants: the queue, the running jobs and the cluster state agree.
#include <set>
#include <string>
#include <utility>

#include "sched/scheduler.h"
#include "sched/scheduler_util.h"

namespace toposched::sched {

using internal::JobName;
using job::JobState;

Status Scheduler::CheckInvariants() const {
  RETURN_IF_ERROR(state_.CheckInvariants());
  size_t holders = 0;
  std::set<std::pair<int, int>> seen, shared;  // GPUs of whole / fractional placements
  for (const auto& [id, j] : jobs_) {
    const AllocId alloc = AllocId::Job(id);
    const bool holds = job::HoldsResources(j.record.state());
    if (holds != state_.HasAllocation(alloc) || holds != j.placement.has_value()) {
      return InternalError(JobName(id) + " in state " + job::JobStateName(j.record.state()) +
                           (state_.HasAllocation(alloc) ? " has" : " has no") + " allocation");
    }
    if (!holds) continue;
    ++holders;
    if (*state_.Allocation(alloc) != j.placement->parts) {
      return InternalError(JobName(id) + ": allocation differs from its placement");
    }
    if (state_.AllocationMilli(alloc) != j.placement->gpu_milli ||
        (j.placement->gpu_milli > 0) != j.spec.Fractional() ||
        (j.spec.Fractional() && j.placement->gpu_milli != j.spec.gpu_milli)) {
      return InternalError(JobName(id) + ": allocation of " +
                           std::to_string(state_.AllocationMilli(alloc)) + " milli, placement " +
                           std::to_string(j.placement->gpu_milli) + ", spec " +
                           std::to_string(j.spec.gpu_milli));
    }
    for (const NodeGpus& p : j.placement->parts) {
      for (int g = 0; g < state_.GpuCount(p.node); ++g) {
        if (!p.gpus.test(g)) continue;
        if (j.placement->gpu_milli > 0) {
          shared.insert({p.node, g});
          continue;
        }
        if (!seen.insert({p.node, g}).second) {
          return InternalError("GPU " + std::to_string(g) + " of node " + std::to_string(p.node) +
                               " held by two jobs");
        }
      }
    }
  }
  for (const auto& [hid, parts] : holds_) {
    const std::vector<NodeGpus>* a = state_.Allocation(HoldAllocationId(hid));
    if (a == nullptr || *a != parts) {
      return InternalError("hold " + std::to_string(hid) + ": allocation differs from its GPUs");
    }
    for (const NodeGpus& p : parts) {
      for (int g = 0; g < state_.GpuCount(p.node); ++g) {
        if (p.gpus.test(g) && !seen.insert({p.node, g}).second) {
          return InternalError("GPU " + std::to_string(g) + " of node " + std::to_string(p.node) +
                               " held twice (hold " + std::to_string(hid) + ")");
        }
      }
    }
    ++holders;
  }
  for (const auto& gpu : shared) {
    if (seen.count(gpu)) {
      return InternalError("GPU " + std::to_string(gpu.second) + " of node " +
                           std::to_string(gpu.first) + " held whole and shared by jobs");
    }
  }
  if (holders != state_.AllocationCount()) {
    return InternalError("ClusterState holds " + std::to_string(state_.AllocationCount()) +
                         " allocations, jobs and holds " + std::to_string(holders));
  }
  return OkStatus();
}

}  // namespace toposched::sched
