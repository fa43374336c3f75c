#include "select/objective.h"

#include <cmath>
#include <memory>

#include "cost/node_cost.h"

namespace toposched::sched {

Status NodeRequest::Validate() const {
  if (gpus < 1) return InvalidArgumentError("request: gpus must be at least 1");
  if (tp < 1) return InvalidArgumentError("request: tp must be at least 1");
  if (gpus % tp != 0) {
    return InvalidArgumentError("request: tp " + std::to_string(tp) + " does not divide gpus " +
                                std::to_string(gpus));
  }
  if (!std::isfinite(dp_bytes) || dp_bytes < 0 || !std::isfinite(tp_bytes) || tp_bytes < 0) {
    return InvalidArgumentError("request: bytes must be finite and non-negative");
  }
  return OkStatus();
}

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
