// The cost model as the selection objective. Kept in its own file so that code using only the
// stand-in objective does not pull the cost model in.
#include <memory>

#include "cost/node_cost.h"
#include "sched/objective.h"

namespace toposched::sched {

Objective CostModelObjective(const topo::NodeTopology& topo) {
  auto model = std::make_shared<const cost::NodeCostModel>(topo);
  Objective o;
  o.id = "cost::NodeCostModel/allreduce";
  o.set_ms = [model](std::span<const int> gpus, double bytes) -> double {
    return gpus.size() <= 1 ? 0.0 : model->AllReduceTimeMs(gpus, bytes);
  };
  return o;
}

}  // namespace toposched::sched
