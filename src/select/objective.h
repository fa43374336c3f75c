// The objective node selection minimises: the job's predicted communication time (ms) on a GPU
// set. What the job runs is a NodeRequest; the time of one AllReduce over a GPU set comes from
// a SetTimeFn supplied by the caller (the cost model in production). This header knows
// nothing of how a set is searched for (node_select.h) or of launchers (rank_order.h).
#pragma once

#include <functional>
#include <span>
#include <string>

#include "core/status.h"
#include "topo/node_topology.h"

namespace toposched::sched {

// What the job asks of one node and what it runs per step. The predicted time of a set S is
//   AllReduce(S, dp_bytes) + max over TP groups g of AllReduce(g, tp_bytes)   (tp > 1)
//   AllReduce(S, dp_bytes)                                                    (tp ≤ 1)
// TP groups run at the same time on disjoint GPUs, so their times do not add.
// Defaults: one 1 GiB AllReduce for each part (a gradient bucket for DP, a step's activation
// traffic for TP, both of the order of a GiB for models that need several GPUs).
struct NodeRequest {
  int gpus = 1;  // k ≥ 1
  int tp = 1;    // TP group size; 1 = no TP groups; divides gpus
  double dp_bytes = 1024.0 * 1024 * 1024;
  double tp_bytes = 1024.0 * 1024 * 1024;

  bool has_tp() const { return tp > 1; }
  // InvalidArgument: gpus < 1, tp < 1, tp not dividing gpus, bytes < 0 or not finite.
  Status Validate() const;
  bool operator==(const NodeRequest&) const = default;
};

// Predicted time in ms of one AllReduce of `bytes` over the GPU set `gpus` (positions in
// NodeTopology::gpus, in any order). The objective finds its own ring (or other algorithm):
// the result must not depend on the order of `gpus`. A single GPU costs 0. Must be pure and
// thread-safe: selection calls it from any thread and caches what it returns.
using SetTimeFn = std::function<double(std::span<const int> gpus, double bytes)>;

// A named objective: `id` goes into the cache key, so two objectives never share results.
struct Objective {
  std::string id;
  SetTimeFn set_ms;
};

// The production objective: cost::NodeCostModel::AllReduceTimeMs of the topology (the better of
// ring and NVLS, NCCL efficiencies and latencies from data/hardware/cost.json).
Objective CostModelObjective(const topo::NodeTopology& topo);

}  // namespace toposched::sched
