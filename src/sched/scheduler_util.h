// Small helpers the scheduler's own sources share (scheduler.cc, scheduler_pass.cc,
// scheduler_events.cc, lookahead.cc, preemption.cc): the "never" time, job names, times for
// explanations, and taking a placement's GPUs. Internal to src/sched.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/ids.h"
#include "core/status.h"
#include "placement/placement.h"
#include "state/cluster_state.h"

namespace toposched::sched {

namespace internal {

inline constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
// `us` + `limit_s` seconds; kNever where that would overflow.
int64_t PlusLimit(int64_t us, int64_t limit_s);
std::string JobName(int64_t id);
inline std::string JobName(JobId id) { return JobName(id.value); }
// A point in time for explanations: seconds from the start, or a UTC date-time when the clock
// counts from the Unix epoch.
std::string Seconds(int64_t us, bool epoch = false);
// The GPUs of an allocation's parts.
int GpusOf(const std::vector<NodeGpus>& parts);
// Takes a placement's GPUs in `state` for `id`: whole GPUs, or its milli of a shared GPU.
Status AllocatePlacement(ClusterState& state, AllocId id, const Placement& p);

}  // namespace internal

}  // namespace toposched::sched
