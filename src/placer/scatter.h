// Topology-oblivious placement of a job one GPU at a time, as a scheduler that sees each GPU
// as an independent pod does: "spread" (kube-scheduler's LeastAllocated score with one pod per
// GPU: each GPU on the node with the most free GPUs) and "random" (each GPU a uniformly drawn
// free GPU). The baselines of the simulator's evaluation; knows nothing of queues.
#pragma once

#include <cstdint>
#include <optional>

#include "cost/cost_model.h"
#include "job/job_spec.h"
#include "plugins/price.h"
#include "state/cluster_state.h"

namespace toposched::sched {

enum class ScatterRule { kSpread, kRandom };

// The job's GPUs, chosen one at a time among the healthy, undrained nodes that pass its
// gpu_model and rdma filters; rank i is the i-th GPU chosen (ranks follow pods, not topology).
// Spread: the node with the most free GPUs left, ties to the lowest node id, its lowest free GPU.
// Random: a uniform draw among the free GPUs, from std::mt19937_64 seeded by `seed`, the job's
// name and the free GPU count (deterministic for the same state and job). nullopt when fewer
// free GPUs than the job asks pass the filters. Scored with ScorePlacement; no NIC is paired
// (nic = −1). O(GPUs asked · log nodes) for spread, O(free GPUs) for random.
std::optional<Placement> PlaceScattered(const cost::CostModel& cost, const ClusterState& state,
                                        const job::JobSpec& job, ScatterRule rule, uint64_t seed);

}  // namespace toposched::sched
