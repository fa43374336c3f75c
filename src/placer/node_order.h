// The rank order of a job placed whole on one node, where the node selector's request (one
// AllReduce of dp_bytes over the whole set, plus the slowest TP group: select/objective.h) does
// not describe the layout: pipeline neighbours send to each other, and with TP and DP both
// above 1 every DP group is a strided subset of the set. Which GPU takes which rank then
// changes the predicted time (ScorePlacement) on the same set. Knows nothing of how the set
// was chosen.
#pragma once

#include <vector>

#include "cost/cost_model.h"
#include "job/job_spec.h"

namespace toposched::sched {

// True when the rank order on one node changes the job's predicted time beyond what the node
// selector prices: pp > 1 with pp_bytes > 0, or tp > 1 and dp > 1 with dp_bytes > 0.
bool NodeOrderMatters(const job::Layout& layout);

// From `order` (the node's GPUs by rank, all the job's ranks), swaps of two ranks' GPUs while
// one lowers ScorePlacement's predicted time by more than 1e-9 relative: each round the best
// swap, at most order.size() rounds; O(rounds · k² · score). The same order when none helps
// or the cost model refuses one. Deterministic: ties keep the earlier swap.
std::vector<int> ImproveNodeOrder(const cost::CostModel& cost, const job::Layout& layout, int node,
                                  std::vector<int> order);

}  // namespace toposched::sched
